package creds

import (
	"strings"
	"sync"
	"testing"
)

func TestRedact(t *testing.T) {
	r := NewRedactor("sk-abcdef", "sk-abcdef-longer", "xyz", "  padded-secret\n", "")
	tests := []struct{ in, want string }{
		{"key=sk-abcdef end", "key=" + Mask + " end"},
		{"key=sk-abcdef-longer", "key=" + Mask},
		{"twice sk-abcdefsk-abcdef", "twice " + Mask + Mask},
		{"short xyz stays", "short xyz stays"},
		{"padded-secret in text", Mask + " in text"},
		{"nothing here", "nothing here"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilR *Redactor
	if nilR.Redact("sk-abcdef") != "sk-abcdef" || nilR.Len() != 0 {
		t.Error("a nil Redactor must pass text through")
	}
	var zero Redactor
	if zero.Redact("abcd") != "abcd" {
		t.Error("the zero Redactor must mask nothing")
	}
	zero.Add("abcd")
	if zero.Redact("abcd") != Mask {
		t.Error("Add on the zero Redactor did not take effect")
	}
}

func TestRedactorConcurrent(t *testing.T) {
	r := NewRedactor()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.Add(strings.Repeat(string(rune('a'+i)), 8))
		}()
		go func() {
			defer wg.Done()
			_ = r.Redact("aaaaaaaa bbbbbbbb")
		}()
	}
	wg.Wait()
	if r.Len() != 8 || strings.Contains(r.Redact("aaaaaaaa hhhhhhhh"), "a") {
		t.Errorf("after concurrent adds: len %d, %q", r.Len(), r.Redact("aaaaaaaa hhhhhhhh"))
	}
}
