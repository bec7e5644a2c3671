package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestExecStreamByteFidelity(t *testing.T) {
	_, c, id := runningBox(t)
	payload := make([]byte, 1<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	st, err := c.ExecStream(context.Background(), id, StreamOptions{Cmd: []string{"cat"}, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	werr := make(chan error, 1)
	go func() {
		_, err := st.Write(payload)
		if cerr := st.CloseWrite(); err == nil {
			err = cerr
		}
		werr <- err
	}()
	out, err := io.ReadAll(st)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(out, payload) {
		t.Errorf("stdout differs: %d bytes back for %d sent", len(out), len(payload))
	}
	if errb.Len() != 0 {
		t.Errorf("stderr got %d bytes", errb.Len())
	}
	if code, err := st.Wait(context.Background()); err != nil || code != 0 {
		t.Errorf("Wait = %d, %v", code, err)
	}
}

func TestExecStreamDemultiplexesAndExits(t *testing.T) {
	_, c, id := runningBox(t)
	var errb bytes.Buffer
	st, err := c.ExecStream(context.Background(), id, StreamOptions{Cmd: []string{"both"}, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_ = st.CloseWrite()
	out, err := io.ReadAll(st)
	if err != nil || string(out) != "to stdout\n" || errb.String() != "to stderr\n" {
		t.Fatalf("stdout %q, stderr %q, %v", out, errb.String(), err)
	}
	if code, err := st.Wait(context.Background()); err != nil || code != 0 {
		t.Errorf("Wait = %d, %v", code, err)
	}
}

func TestExecStreamRefusesEmptyCommand(t *testing.T) {
	_, c, id := runningBox(t)
	_, err := c.ExecStream(context.Background(), id, StreamOptions{})
	if !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Fatalf("ExecStream without a command = %v, want ErrInvalidValue", err)
	}
}

func TestExecStreamClosesOnCancel(t *testing.T) {
	_, c, id := runningBox(t)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.ExecStream(ctx, id, StreamOptions{Cmd: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(st)
		done <- err
	}()
	cancel()
	<-done // a blocked Read ends once the context does
}
