package sandbox

import (
	"strings"
	"testing"

	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/tools"
)

func TestTailBuffer(t *testing.T) {
	b := newTailBuffer(5)
	for _, s := range []string{"ab", "cd", "efg"} {
		b.Write([]byte(s))
	}
	if b.String() != "cdefg" {
		t.Errorf("tail = %q", b.String())
	}
	b.Write([]byte("0123456789"))
	if b.String() != "56789" {
		t.Errorf("tail = %q", b.String())
	}
}

func TestParseNumericUser(t *testing.T) {
	tests := []struct {
		in       string
		uid, gid int
		ok       bool
	}{
		{"65534:65534", 65534, 65534, true}, {"1000", 1000, 1000, true}, {"nobody", 0, 0, false},
		{"1:x", 0, 0, false}, {"", 0, 0, false}, {"-1", 0, 0, false},
	}
	for _, tt := range tests {
		uid, gid, ok := parseNumericUser(tt.in)
		if uid != tt.uid || gid != tt.gid || ok != tt.ok {
			t.Errorf("parseNumericUser(%q) = %d, %d, %v", tt.in, uid, gid, ok)
		}
	}
}

func TestRedactParams(t *testing.T) {
	r := creds.NewRedactor("hunter22")
	long := strings.Repeat("x", 1000)
	tests := []struct{ in, want string }{
		{`{"command":["echo","hunter22"]}`, `{"command":["echo","[REDACTED]"]}`},
		{`{"content":"` + long + `"}`, `...[cut]`},
		{`not json`, `"[invalid JSON]"`},
	}
	for _, tt := range tests {
		if got := string(redactParams([]byte(tt.in), r)); !strings.Contains(got, tt.want) {
			t.Errorf("redactParams(%.30s) = %.80s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	c := common{opts: Options{ShellTimeout: 5e9}}
	tests := []struct{ name, in, want string }{
		{"shell_execute", `{"command":["true"]}`, `"timeout_seconds":5`},
		{"shell_execute", `{"command":["true"],"timeout_seconds":9}`, `"timeout_seconds":9`},
		{"ls", `{}`, `{}`},
		{"shell_execute", `[1]`, `[1]`},
	}
	for _, tt := range tests {
		if got := string(c.withDefaults(tt.name, []byte(tt.in))); !strings.Contains(got, tt.want) {
			t.Errorf("withDefaults(%s, %s) = %s", tt.name, tt.in, got)
		}
	}
	// The tool's own default needs no rewrite of the arguments.
	c = common{opts: Options{ShellTimeout: tools.DefaultShellTimeout}}
	in := `{"command":["true"]}`
	if got := string(c.withDefaults(tools.ShellExecuteTool, []byte(in))); got != in {
		t.Errorf("withDefaults with the tool's default timeout = %s, want %s unchanged", got, in)
	}
}
