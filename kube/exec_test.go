package kube

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/podbot/podbot/errdefs"
)

func TestSizeQueue(t *testing.T) {
	resize := make(chan TermSize, 1)
	done := make(chan struct{})
	q := &sizeQueue{initial: TermSize{Rows: 40, Cols: 100}, resize: resize, done: done}
	if s := q.Next(); s == nil || s.Height != 40 || s.Width != 100 {
		t.Fatalf("initial %+v", s)
	}
	resize <- TermSize{Rows: 33, Cols: 77}
	if s := q.Next(); s == nil || s.Height != 33 || s.Width != 77 {
		t.Fatalf("resize %+v", s)
	}
	close(done)
	if s := q.Next(); s != nil {
		t.Fatalf("after done %+v", s)
	}
	// No initial size: the first Next waits for a resize.
	q = &sizeQueue{resize: resize, done: make(chan struct{})}
	close(resize)
	if s := q.Next(); s != nil {
		t.Fatalf("closed resize channel gave %+v", s)
	}
}

func TestHoldEOF(t *testing.T) {
	done := make(chan struct{})
	h := &holdEOF{r: strings.NewReader("abc"), done: done}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(h)
		got <- string(b)
	}()
	select {
	case s := <-got:
		t.Fatalf("EOF passed before done: %q", s)
	case <-time.After(50 * time.Millisecond):
	}
	close(done)
	if s := <-got; s != "abc" {
		t.Fatalf("read %q", s)
	}
}

func TestExecNeedsRESTConfigAndCommand(t *testing.T) {
	c := NewForClientset(fake.NewClientset(), "sb", Options{})
	if _, err := c.Exec(t.Context(), "p", ExecOptions{}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("no command: %v", err)
	}
	if _, err := c.Exec(t.Context(), "p", ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("fake clientset: %v", err)
	}
}
