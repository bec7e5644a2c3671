package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
)

func TestPolicyFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	want := &Policy{
		Rules:   mustRules(t, "example.com", "*.example.org:8443", "10.0.0.1:22", "[2001:db8::1]:443"),
		Deny:    mustRules(t, "bad.example.com"),
		Resolve: map[string]string{"example.com": "127.0.0.1:8443", "v6.example": "2001:db8::2"},
	}
	want.Rules[0].Source = "preset agent"
	want.Rules[1].Ports = []int{8443, 9443}
	if err := WritePolicyFile(path, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	got, err := ReadPolicyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// An empty policy survives too, and no temporary file is left behind.
	if err := WritePolicyFile(path, &Policy{}); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPolicyFile(path); err != nil || len(got.Rules) != 0 {
		t.Fatalf("empty policy: %+v, %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	if err := WritePolicyFile(filepath.Join(t.TempDir(), "no", "dir", "p.json"), want); !errors.Is(err, errdefs.ErrFilesystem) {
		t.Fatalf("write into a missing dir: %v", err)
	}
}

func TestReadPolicyFileHostile(t *testing.T) {
	dir := t.TempDir()
	huge := `{"version":1,"rules":[` + strings.Repeat(`{"host":"example.com"},`, 60000) + `{"host":"example.com"}]}`
	cases := map[string]string{
		"huge":             huge,
		"not json":         "rules: everything",
		"unknown field":    `{"version":1,"rules":[],"allow_all":true}`,
		"unknown in rule":  `{"version":1,"rules":[{"host":"example.com","any":true}]}`,
		"trailing":         `{"version":1,"rules":[]} {"version":1,"rules":[{"host":"evil.com"}]}`,
		"version":          `{"version":2,"rules":[]}`,
		"no version":       `{"rules":[]}`,
		"no rules":         `{"version":1}`,
		"bad rule":         `{"version":1,"rules":[{"host":"*"}]}`,
		"rule with port":   `{"version":1,"rules":[{"host":"example.com:443"}]}`,
		"not canonical":    `{"version":1,"rules":[{"host":"EXAMPLE.com"}]}`,
		"bad port":         `{"version":1,"rules":[{"host":"example.com","ports":[0]}]}`,
		"big port":         `{"version":1,"rules":[{"host":"example.com","ports":[70000]}]}`,
		"control source":   `{"version":1,"rules":[{"host":"example.com","source":"a\u001b[2Jb"}]}`,
		"bad deny":         `{"version":1,"rules":[],"deny":[{"host":"a..b"}]}`,
		"bad pin":          `{"version":1,"rules":[],"resolve":{"example.com":"not-an-ip"}}`,
		"pin wildcard":     `{"version":1,"rules":[],"resolve":{"*.example.com":"127.0.0.1"}}`,
		"pin with =":       `{"version":1,"rules":[],"resolve":{"a.com=1.2.3.4":"1.2.3.4"}}`,
		"null":             `null`,
		"rules not a list": `{"version":1,"rules":{"host":"example.com"}}`,
	}
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := ReadPolicyFile(path)
		if err == nil {
			t.Errorf("%s: accepted as %+v", name, p)
			continue
		}
		if !errors.Is(err, errdefs.ErrFilesystem) {
			t.Errorf("%s: error %v is not a filesystem error", name, err)
		}
		if name != "huge" && !errors.Is(err, ErrBadPolicyFile) {
			t.Errorf("%s: error %v is not ErrBadPolicyFile", name, err)
		}
	}
	if _, err := ReadPolicyFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func FuzzReadPolicyFile(f *testing.F) {
	var buf bytes.Buffer
	path := filepath.Join(f.TempDir(), "seed.json")
	pol := &Policy{Rules: mustRules(f, "example.com", "*.example.org:8443"), Resolve: map[string]string{"example.com": "127.0.0.1"}}
	if err := WritePolicyFile(path, pol); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(path)
	buf.Write(seed)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"version":1,"rules":[]}`))
	f.Add([]byte(`{"version":1,"rules":[{"host":"[::1]"}],"deny":[{"host":"a.b","ports":[1,2]}]}`))
	f.Add([]byte(`{"version":1,"rules":[{"host":"x.com","source":"\u0000"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			return
		}
		// Whatever is accepted is made of rules ParseRule accepts, and
		// writes back to an equal policy.
		for _, r := range append(append([]Rule(nil), p.Rules...), p.Deny...) {
			h := r.Host
			if strings.Contains(h, ":") {
				h = "[" + h + "]"
			}
			if pr, err := ParseRule(h); err != nil || pr.Host != r.Host {
				t.Fatalf("accepted rule host %q: %v", r.Host, err)
			}
		}
		path := filepath.Join(t.TempDir(), "p.json")
		if err := WritePolicyFile(path, p); err != nil {
			t.Fatal(err)
		}
		q, err := ReadPolicyFile(path)
		if err != nil || !reflect.DeepEqual(normPolicy(p), normPolicy(q)) {
			t.Fatalf("rewrite: %+v vs %+v, %v", p, q, err)
		}
	})
}

// normPolicy maps empty slices and maps to nil for comparison.
func normPolicy(p *Policy) *Policy {
	c := p.Clone()
	if len(c.Deny) == 0 {
		c.Deny = nil
	}
	if len(c.Resolve) == 0 {
		c.Resolve = nil
	}
	if len(c.Rules) == 0 {
		c.Rules = nil
	}
	for _, rs := range [][]Rule{c.Rules, c.Deny} {
		for i := range rs {
			if len(rs[i].Ports) == 0 {
				rs[i].Ports = nil
			}
		}
	}
	return c
}

func TestReadLog(t *testing.T) {
	in := `{"time":"2026-01-02T03:04:05Z","host":"example.com","port":443,"method":"CONNECT","decision":"allow","rule":"example.com","bytes_up":10,"bytes_down":20}

{"time":"2026-01-02T03:04:06Z","host":"evil.com","port":443,"method":"CONNECT","decision":"deny","reason":"no rule","bytes_up":0,"bytes_down":0,"future":1}
`
	var got []LogEntry
	if err := ReadLog(strings.NewReader(in), func(e LogEntry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].BytesDown != 20 || got[1].Decision != DecisionDeny || got[1].Time.Second() != 6 {
		t.Fatalf("%+v", got)
	}
	stop := errors.New("stop")
	if err := ReadLog(strings.NewReader(in), func(LogEntry) error { return stop }); err != stop {
		t.Fatalf("fn error: %v", err)
	}
	if err := ReadLog(strings.NewReader("not json\n"), func(LogEntry) error { return nil }); err == nil {
		t.Fatal("garbage accepted")
	}
	long := `{"host":"` + strings.Repeat("a", MaxLogLine) + `"}` + "\n"
	if err := ReadLog(strings.NewReader(long), func(LogEntry) error { return nil }); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("over-long line: %v", err)
	}
}

func TestReadClientHello(t *testing.T) {
	hello := clientHello(t, "example.com")
	read, sni, err := ReadClientHello(bytes.NewReader(append(hello, "trailing"...)), MaxClientHelloBytes)
	if err != nil || sni != "example.com" || !bytes.HasPrefix(read, hello) {
		t.Fatalf("ReadClientHello = %d bytes, %q, %v", len(read), sni, err)
	}
	if _, _, err := ReadClientHello(bytes.NewReader(hello), 100); err == nil {
		t.Fatal("a hello over the bound was accepted")
	}
	if _, _, err := ReadClientHello(strings.NewReader("GET / HTTP/1.1\r\n\r\n"), MaxClientHelloBytes); err == nil {
		t.Fatal("plain HTTP accepted as a ClientHello")
	}
	if _, sni, err := ReadClientHello(bytes.NewReader(clientHello(t, "")), MaxClientHelloBytes); err != nil || sni != "" {
		t.Fatalf("hello without SNI: %q %v", sni, err)
	}
}

// clientHello records the ClientHello crypto/tls sends for serverName.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: serverName == ""})
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Handshake()
	}()
	b.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 8192)
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// FuzzReadClientHello feeds arbitrary tunnel openings to the SNI reader.
// crypto/tls draws random values, so coverage is not deterministic; run it
// with -fuzzminimizetime 0 or the engine spends its time minimising.
func FuzzReadClientHello(f *testing.F) {
	f.Add(clientHello(f, "example.com"))
	f.Add(clientHello(f, ""))
	f.Add([]byte("\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00"))
	f.Add([]byte("CONNECT x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read, sni, err := ReadClientHello(bytes.NewReader(data), 4096)
		if len(read) > 4096 || !bytes.HasPrefix(data, read) {
			t.Fatalf("read %d bytes, not a prefix of the input", len(read))
		}
		if err != nil && sni != "" {
			t.Fatalf("a server name %q with an error %v", sni, err)
		}
		// The proxy accepts a tunnel only when the name survives
		// NormalizeHost and equals the CONNECT host.
		if err == nil && sni != "" && checkSNI("example.com", sni, nil) == "" && sni != "example.com" {
			if n, _ := NormalizeHost(sni); n != "example.com" {
				t.Fatalf("SNI %q passes for example.com", sni)
			}
		}
	})
}
