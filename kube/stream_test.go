package kube

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/errdefs"
)

func TestExecStreamEndsWithTheExec(t *testing.T) {
	// Without a REST config the exec fails at once: the stream ends, and
	// the reason is in Stderr, as for an exec the server refuses.
	c := NewForClientset(fake.NewClientset(), "sb", Options{})
	st, err := c.ExecStream(context.Background(), "p", []string{"podbot-sidecar", "serve"})
	if err != nil {
		t.Fatal(err)
	}
	<-st.Done()
	if _, err := io.ReadAll(st.Stdout); err != nil {
		t.Errorf("stdout after the end: %v", err)
	}
	if _, err := st.Stdin.Write([]byte("x\n")); err == nil {
		t.Error("a write after the end did not fail")
	}
	if !strings.Contains(st.Stderr(), "no REST config") {
		t.Errorf("stderr %q lacks the reason", st.Stderr())
	}
	if err := st.Close(); err != nil || st.Close() != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := c.ExecStream(context.Background(), "p", nil); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("no command: %v", err)
	}
}

func TestTailWriterAndEOFOnClose(t *testing.T) {
	w := &tailWriter{max: 4}
	for _, s := range []string{"ab", "cdef", "g"} {
		w.Write([]byte(s))
	}
	if w.String() != "defg" {
		t.Errorf("tail %q, want defg", w.String())
	}
	r, pw := io.Pipe()
	r.Close()
	pw.Close()
	if _, err := (eofOnClose{r}).Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("closed pipe read: %v, want EOF", err)
	}
}
