package creds

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

const testPEM = "-----BEGIN RSA PRIVATE KEY-----\n" +
	"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" +
	"VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n" +
	"LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n" +
	"-----END RSA PRIVATE KEY-----\n"

// writeSplit writes s through a RedactingWriter in pieces cut at cuts.
func writeSplit(t testing.TB, r *Redactor, s string, cuts []int) string {
	t.Helper()
	var buf bytes.Buffer
	w := NewRedactingWriter(&buf, r)
	prev := 0
	for _, c := range cuts {
		if c < prev || c > len(s) {
			continue
		}
		if _, err := w.Write([]byte(s[prev:c])); err != nil {
			t.Fatal(err)
		}
		prev = c
	}
	if _, err := w.Write([]byte(s[prev:])); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestRedactingWriterSplitSecret plays an agent whose stderr carries a
// secret split across two writes, at every possible cut.
func TestRedactingWriterSplitSecret(t *testing.T) {
	const secret = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
	r := NewRedactor(secret)
	in := "token=" + secret + " done\n"
	for cut := 0; cut <= len(in); cut++ {
		got := writeSplit(t, r, in, []int{cut})
		if got != "token="+Mask+" done\n" {
			t.Fatalf("cut at %d: %q", cut, got)
		}
	}
	// One byte per write.
	cuts := make([]int, len(in))
	for i := range cuts {
		cuts[i] = i
	}
	if got := writeSplit(t, r, in, cuts); strings.Contains(got, secret[4:12]) {
		t.Fatalf("byte by byte: %q", got)
	}
}

// TestRedactMultiLineSecret plays an agent that prints a PEM key whole,
// line by line (as a line logger sees it), with CRLF line ends, and split
// across writes.
func TestRedactMultiLineSecret(t *testing.T) {
	r := NewRedactor(testPEM)
	body := strings.Split(strings.TrimSpace(testPEM), "\n")[1]
	check := func(name, got string) {
		t.Helper()
		if strings.Contains(got, body) || strings.Contains(got, body[:40]) {
			t.Errorf("%s: key material leaked: %q", name, got)
		}
	}
	check("whole", r.Redact("key:\n"+testPEM+"end"))
	for _, line := range strings.Split(testPEM, "\n") {
		check("line", r.Redact(line))
	}
	check("crlf", r.Redact(strings.ReplaceAll(testPEM, "\n", "\r\n")))
	for cut := 0; cut < len(testPEM); cut += 7 {
		check("split", writeSplit(t, r, "x"+testPEM+"y", []int{cut}))
	}
}

// TestRedactJSONEscapedSecret plays an agent that prints the secret inside
// a JSON string, where '/', '"', '\', newlines and non-ASCII are escaped.
func TestRedactJSONEscapedSecret(t *testing.T) {
	secrets := []string{`pa/ss"wo\rd-1`, "line1-secret\nline2-secret", "pässwörd-ünïcode", "emoji-🔑-secret", "a<b>&c-secret"}
	r := NewRedactor(secrets...)
	for _, s := range secrets {
		enc, _ := json.Marshal(map[string]string{"v": s})
		var noHTML bytes.Buffer
		e := json.NewEncoder(&noHTML)
		e.SetEscapeHTML(false)
		_ = e.Encode(s)
		renderings := []string{
			string(enc),
			noHTML.String(),
			strings.ReplaceAll(string(enc), "/", `\/`),
			asciiJSON(s, false),
			asciiJSON(s, true),
		}
		for _, out := range renderings {
			got := r.Redact(out)
			if !strings.Contains(got, Mask) {
				t.Errorf("secret %q in %s not masked: %s", s, out, got)
			}
			var back any
			if json.Unmarshal([]byte(strings.TrimSpace(got)), &back) == nil && strings.Contains(toString(back), s) {
				t.Errorf("secret %q survives in %s", s, got)
			}
		}
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	var sb strings.Builder
	_ = json.NewEncoder(&sb).Encode(v)
	if m, ok := v.(map[string]any); ok {
		for _, x := range m {
			if s, ok := x.(string); ok {
				return s
			}
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	return string(b)
}

// asciiJSON is a JSON string as Python's json.dumps writes it (ASCII only).
func asciiJSON(s string, upper bool) string {
	return `"` + jsonEscape(s, false, false, true, upper) + `"`
}

// FuzzRedactingWriter: for random secrets, text and write splits, the
// output never holds a secret and equals Redact of the whole input.
func FuzzRedactingWriter(f *testing.F) {
	f.Add("secret-one", "other", "xx secret-one yy secret-onsecret-one", uint64(1))
	f.Add("abcd", "abcdefgh", "abcdefgabcdefgh abcd", uint64(7))
	f.Add(testPEM, "ghs_token1234", "a"+testPEM+"ghs_token1234", uint64(3))
	f.Fuzz(func(t *testing.T, s1, s2, text string, seed uint64) {
		r := NewRedactor(s1, s2)
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		// Plant the secrets in the text.
		in := text + s1 + text + s2 + s1
		var cuts []int
		for i := 0; i < len(in); i += 1 + rng.IntN(16) {
			cuts = append(cuts, i)
		}
		got := writeSplit(t, r, in, cuts)
		if want := r.Redact(in); got != want {
			t.Fatalf("writer %q != Redact %q", got, want)
		}
		for _, s := range []string{s1, s2, strings.TrimSpace(s1), strings.TrimSpace(s2)} {
			if len(s) >= MinSecretLen && strings.Contains(got, s) && !strings.Contains(Mask, s) && !containsViaMask(got, s) {
				t.Fatalf("secret %q in output %q", s, got)
			}
		}
	})
}

// containsViaMask reports whether every occurrence of s in got touches a
// Mask (a secret made partly of the mask's own characters).
func containsViaMask(got, s string) bool {
	plain := strings.ReplaceAll(got, Mask, "\x00")
	return !strings.Contains(plain, s)
}

func BenchmarkRedactingWriter(b *testing.B) {
	r := benchRedactor()
	chunk := []byte(benchLine + "\n")
	var sink bytes.Buffer
	w := NewRedactingWriter(&sink, r)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		sink.Reset()
		_, _ = w.Write(chunk)
	}
}
