package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

// tarOf is a tar stream of one entry.
func tarOf(t *testing.T, hdr *tar.Header, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ReadFile reads a regular file through the copy API, bounded, and refuses
// links, directories and files over the bound; a missing path is
// ErrNotFound.
func TestReadFile(t *testing.T) {
	f := newFakeEngine(t)
	var answer []byte
	status := http.StatusOK
	f.handle("GET /containers/{id}/archive", func(w http.ResponseWriter, r *http.Request) {
		if status != http.StatusOK {
			apiError(w, status, "Could not find the file /nope in container c1")
			return
		}
		w.Header().Set("Content-Type", "application/x-tar")
		w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString([]byte(`{"name":"ca.crt","size":5,"mode":420}`)))
		_, _ = w.Write(answer)
	})
	c := f.connect()
	ctx := context.Background()

	answer = tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "ca.crt", Mode: 0o644, Size: 5}, []byte("CERTS"))
	got, err := c.ReadFile(ctx, "c1", "/etc/ssl/certs/ca.crt", 16)
	if err != nil || string(got) != "CERTS" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := c.ReadFile(ctx, "c1", "/etc/ssl/certs/ca.crt", 4); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("over the bound: %v", err)
	}
	answer = tarOf(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "ca.crt", Linkname: "/etc/shadow"}, nil)
	if _, err := c.ReadFile(ctx, "c1", "/etc/ssl/certs/ca.crt", 16); !errors.Is(err, errdefs.ErrRefused) {
		t.Errorf("symlink: %v", err)
	}
	if _, err := c.ReadFile(ctx, "c1", "relative/path", 16); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("relative path: %v", err)
	}
	status = http.StatusNotFound
	if _, err := c.ReadFile(ctx, "c1", "/nope", 16); !errors.Is(err, errdefs.ErrNotFound) || strings.Contains(err.Error(), "CERTS") {
		t.Errorf("missing: %v", err)
	}
}
