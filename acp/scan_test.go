package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkAgainstStdlib compares scanObject with encoding/json and
// unicode/utf8: it must accept exactly the valid UTF-8 JSON texts whose
// value is an object, report errNotObject for the other valid ones, and
// return the members json.Decoder sees.
func checkAgainstStdlib(t *testing.T, data []byte) {
	t.Helper()
	valid := json.Valid(data) && utf8.Valid(data)
	object := valid && bytes.TrimLeft(data, " \t\r\n")[0] == '{'
	members, err := scanObject(data, nil, false)
	switch {
	case object && err != nil:
		t.Fatalf("scanObject(%q) = %v; encoding/json accepts it", data, err)
	case valid && !object && !errors.Is(err, errNotObject):
		t.Fatalf("scanObject(%q) = %v; want errNotObject", data, err)
	case !valid && err == nil:
		t.Fatalf("scanObject(%q) accepted text that json.Valid && utf8.Valid rejects", data)
	case !valid && errors.Is(err, errNotObject):
		t.Fatalf("scanObject(%q) called invalid JSON a valid non-object", data)
	}
	if !object {
		return
	}
	want := stdlibMembers(t, data)
	if len(members) != len(want) {
		t.Fatalf("scanObject(%q) found %d members; encoding/json %d", data, len(members), len(want))
	}
	for i, mb := range members {
		if string(mb.key) != want[i].key || !bytes.Equal(mb.value, want[i].value) {
			t.Fatalf("scanObject(%q) member %d = %q: %q; encoding/json %q: %q",
				data, i, mb.key, mb.value, want[i].key, want[i].value)
		}
	}
	// With refuseCR the same text passes exactly when it holds no "\r".
	_, err = scanObject(data, nil, true)
	if hasCR := bytes.IndexByte(data, '\r') >= 0; hasCR != (err != nil) {
		t.Fatalf("scanObject(%q, refuseCR) = %v", data, err)
	}
}

// stdlibMember is a top-level member as encoding/json reads it.
type stdlibMember struct {
	key   string
	value []byte
}

// stdlibMembers lists an object's top-level members with json.Decoder,
// trimming each value's surrounding whitespace as scanObject does.
func stdlibMembers(t *testing.T, data []byte) []stdlibMember {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("decoder: %v", err)
	}
	var out []stdlibMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("decoder: %v", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("decoder: %v", err)
		}
		out = append(out, stdlibMember{key: tok.(string), value: bytes.Trim(raw, " \t\r\n")})
	}
	return out
}

func TestScanObjectMatchesStdlib(t *testing.T) {
	deep := func(n int, open, close string) string {
		return `{"a":` + strings.Repeat(open, n-1) + strings.Repeat(close, n-1) + "}"
	}
	inputs := []string{
		``, ` `, `{}`, ` { } `, `{"a":1}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":}`, `{"a":1 "b":2}`,
		`{"a":1}x`, `{"a":1}{}`, `{"a":1`, `{"a":[1,2,{"b":null}],"c":{"d":[]}}`, `[1]`, `"s"`, `1`, `null`,
		`{"a":[1,]}`, `{"a":[,1]}`, `{"a":[}`, `{"a":{]}`, `{"a":tru}`, `{"a":true}`, `{"a":falsey}`, `{"a":nul}`,
		`{"a":-}`, `{"a":-0}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1.5e}`, `{"a":1.5e+}`, `{"a":1.5E-07}`,
		`{"a":+1}`, `{"a":0x1}`, `{"a":1e5}`, `{"a":-12.30e+100}`, `{"a":Infinity}`, `{"a":NaN}`,
		`{"a":"\u00e9\n\t\"\\\/\b\f\r"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12G4"}`, `{"a":"\ud800"}`,
		`{"a":"` + "\t" + `"}`, `{"a":"` + "\x00" + `"}`, `{"a":"` + "\x1f" + `"}`, `{"a":"` + "\x7f" + `"}`,
		`{"a":"` + "\xff" + `"}`, `{"a":"` + "\xc3\xa9" + `"}`, `{"a":"` + "\xc3" + `"}`, `{"a":"` + "\xed\xa0\x80" + `"}`,
		`{"a":"` + "\xf0\x9f\x98\x80" + `"}`, `{"a":"` + "\xf4\x90\x80\x80" + `"}`, `{"a":"` + "\xc0\xaf" + `"}`,
		"{\"a\":1}\xff", "\xef\xbb\xbf{}", `{"a":"unterminated}`, `{"a\"b":1}`, `{"\u006dethod":"x"}`,
		"{\r\n\t\"a\" : 1 ,\n\"b\":[ 1 , 2 ] }\r\n", "{\"a\":1}\x00", `{'a':1}`, `{a:1}`, `{"a":"b"}}`,
		`{"a":"12345678\"12345678\\12345678"}`, `{"a":"` + strings.Repeat("x", 100) + "\x01" + `"}`,
		`{"a":"` + strings.Repeat("é", 50) + `"}`, `{"a":"` + strings.Repeat("abcdefg", 30) + `"}`,
		deep(maxNesting, "[", "]"), deep(maxNesting+1, "[", "]"),
		deep(maxNesting, `{"x":`, "}"), deep(maxNesting+1, `{"x":`, "}"),
		strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting),
		strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1),
	}
	// Arrays and objects alternating past the first 64 levels, where the
	// scanner moves its container bits from one word to a larger table.
	for _, n := range []int{63, 64, 65, 127, 128, 129, 300} {
		var open, closing strings.Builder
		for d := 0; d < n; d++ {
			if d%3 == 1 {
				open.WriteString(`{"k":`)
			} else {
				open.WriteString(`[0,`)
			}
		}
		for d := n - 1; d >= 0; d-- {
			if d%3 == 1 {
				closing.WriteString(`}`)
			} else {
				closing.WriteString(`,1]`)
			}
		}
		body := open.String() + "2" + closing.String()
		inputs = append(inputs, `{"a":`+body+`}`, `{"a":`+body+`,"b":[{}]}`,
			// One closer of the wrong kind at the deepest level, then at the outermost.
			`{"a":`+strings.Replace(body, "2,1]", "2}", 1)+`}`,
			`{"a":`+open.String()+"2"+strings.TrimSuffix(closing.String(), ",1]")+`}}`)
	}
	for _, in := range inputs {
		checkAgainstStdlib(t, []byte(in))
	}
}

// FuzzValidateMatchesStdlib checks that the one-pass scanner accepts
// exactly what json.Valid and utf8.Valid accept together (a valid text
// that is not an object is told apart), and finds the same top-level
// members as encoding/json.
func FuzzValidateMatchesStdlib(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
		f.Add([]byte(strings.TrimRight(s, "\r\n")))
	}
	for _, s := range []string{
		`{"a":[1,-2.5e+3,true,false,null,{"b":"\u00e9\"\\"}]}`, `[{}]`, `"x"`, `0`, `{"a":"é"}`,
		"{\"a\":\"\xed\xa0\x80\"}", `{"a":"\ud83d\ude00"}`, `{"a" : { "b" : [ ] } }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstStdlib(t, data)
	})
}

func TestParseMessageReusesMembers(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"a":1}}`)
	m, err := parseMessage(frame, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		m, err = parseMessage(frame, m.members)
		if err != nil || string(m.method) != "session/prompt" || string(m.id) != "1" || string(m.params) != `{"a":1}` {
			t.Fatalf("parseMessage = %+v, %v", m, err)
		}
	})
	if allocs != 0 {
		t.Errorf("parseMessage allocates %v times per frame; want 0", allocs)
	}
}

func TestEqualFoldASCII(t *testing.T) {
	for _, key := range []string{"params", "PARAMS", "Params", "paramſ", "paramS", "param", "paramss",
		"pa\u212Aams", "id", "ID", "Id", "iD", "i", "", "méthod", "method", "METHOD", "meth0d", "rEquestid",
		"requeſtId", "terminal", "terminal-auth", "Terminal-Auth", "terminal_auth", "@d", "\xff", "i\xff", "\xffd",
		"ſ", "s", "errorſ", "ERROR", "eRRor", "tErmInal", "termina\u212A", "\u212Aey", "type", "TYPE", "tyPe", "typé"} {
		for _, name := range []string{"params", "id", "method", "requestId", "terminal", "terminal-auth", "fs", "i@",
			"error", "result", "type", "s", "key", "authMethods"} {
			if got, want := equalFoldASCII([]byte(key), name), strings.EqualFold(key, name); got != want {
				t.Errorf("equalFoldASCII(%q, %q) = %v; strings.EqualFold says %v", key, name, got, want)
			}
		}
	}
}

func TestRuneLenMatchesDecodeRune(t *testing.T) {
	edges := []byte{0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF4, 0xFF}
	for first := 0x80; first <= 0xFF; first++ {
		for _, b2 := range edges {
			for _, b3 := range edges {
				for _, b4 := range edges {
					p := []byte{byte(first), b2, b3, b4}
					for cut := 1; cut <= len(p); cut++ {
						r, size := utf8.DecodeRune(p[:cut])
						want := size
						if r == utf8.RuneError && size == 1 {
							want = 0
						}
						if got := runeLen(p[:cut]); got != want {
							t.Fatalf("runeLen(% x) = %d; utf8.DecodeRune takes %d", p[:cut], got, want)
						}
					}
				}
			}
		}
	}
}

func TestNextSpecial(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c >= 0x80 || c == '"' || c == '\\' }
	plain := []byte("abcdefghijklmnopqrstuvwxyz !#[]{}~0123456789")
	for _, c := range []byte{0x00, 0x1F, '"', '\\', 0x80, 0xFF, 0x7F, 0x20, 0x21, 0x5B, 0x5D} {
		for pos := 0; pos < 24; pos++ {
			for _, extra := range []byte{'"', 0x01, 0xC3, 'a'} {
				data := append([]byte{}, plain[:24]...)
				data[pos] = c
				if pos+1 < len(data) {
					data[pos+1] = extra // whatever follows must not hide c
				}
				want := len(data)
				for i, d := range data {
					if special(d) {
						want = i
						break
					}
				}
				if got := nextSpecial(data, 0); got != want {
					t.Fatalf("nextSpecial(%q) = %d; want %d", data, got, want)
				}
			}
		}
	}
}

// FuzzEqualFoldASCII compares equalFoldASCII with strings.EqualFold for any
// key and an ASCII name.
func FuzzEqualFoldASCII(f *testing.F) {
	for _, s := range [][2]string{{"paramſ", "params"}, {"pa\u212Aams", "params"}, {"ID", "id"}, {"\xff", "i"}, {"terminal", "terminal"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, name string) {
		for _, c := range []byte(name) {
			if c >= utf8.RuneSelf {
				return
			}
		}
		if got, want := equalFoldASCII([]byte(key), name), strings.EqualFold(key, name); got != want {
			t.Fatalf("equalFoldASCII(%q, %q) = %v; strings.EqualFold says %v", key, name, got, want)
		}
	})
}

// FuzzStringSpan checks that stringSpan finds, step by step through a
// string, the same bytes as the word-by-word nextSpecial.
func FuzzStringSpan(f *testing.F) {
	for _, s := range []string{
		strings.Repeat("x", 100) + `"`,
		strings.Repeat("ab\\\"", 20) + strings.Repeat("é", 30) + `"`,
		strings.Repeat("x", 17) + "\x01" + strings.Repeat("y", 40) + "\\n" + strings.Repeat("z", 33),
		strings.Repeat("日本語", 20) + strings.Repeat("q", 64) + "\x80",
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		span := stringSpan{data: data}
		for i := 0; i < len(data); {
			got, want := span.next(i), nextSpecial(data, i)
			if got != want {
				t.Fatalf("stringSpan.next(%d) = %d; nextSpecial says %d (data %q)", i, got, want, data)
			}
			// Move on as a string scan would: past the special byte, by a
			// fuzzed stride.
			i = got + 1 + int(step%7)
		}
	})
}

// referenceFields reads method, id and params from members the way
// parseMessage did before it skipped names that cannot match: every member
// is compared with all three names.
func referenceFields(members []member) (message, error) {
	m := message{members: members}
	for _, mb := range members {
		switch {
		case mb.named("method"):
			if m.hasMethod {
				return m, errDuplicate
			}
			m.hasMethod = true
			method, ok := stringContent(mb.value)
			if !ok {
				return m, errMethodType
			}
			m.method = method
		case mb.named("id"):
			if m.hasID {
				return m, errDuplicate
			}
			if !scalarID(mb.value) {
				return m, errIDType
			}
			m.hasID, m.id = true, mb.value
		case mb.named("params"):
			if m.hasParams {
				return m, errDuplicate
			}
			m.hasParams, m.params = true, mb.value
		}
	}
	return m, nil
}

// FuzzParseMessageMatchesReference checks parseMessage against the scan
// followed by the reference field reader: the same error, and the same
// method, id and params, for any frame.
func FuzzParseMessageMatchesReference(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(strings.TrimRight(s, "\r\n")))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"a":1}}`,
		`{"METHOD":"x","Id":"s","PARAMS":[]}`, `{"paramſ":{},"method":"a"}`, `{"méthod":"a","ID":null}`,
		`{"method":1}`, `{"id":{}}`, `{"id":1,"iD":2}`, `{"a\u0000":1,"i\u0064":3}`, `{"paKams":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseMessage(data, nil)
		members, scanErr := scanObject(data, nil, true)
		if scanErr != nil {
			if !errors.Is(err, scanErr) {
				t.Fatalf("parseMessage(%q) = %v; the scan says %v", data, err, scanErr)
			}
			return
		}
		want, wantErr := referenceFields(members)
		if !errors.Is(err, wantErr) && (err != nil || wantErr != nil) {
			t.Fatalf("parseMessage(%q) = %v; reference %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if got.hasMethod != want.hasMethod || !bytes.Equal(got.method, want.method) ||
			got.hasID != want.hasID || !bytes.Equal(got.id, want.id) ||
			got.hasParams != want.hasParams || !bytes.Equal(got.params, want.params) {
			t.Fatalf("parseMessage(%q) = %+v; reference %+v", data, got, want)
		}
	})
}
