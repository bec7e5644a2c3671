package tokendaemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeVault records every value it is given; fail makes the n-th call
// (1-based) fail.
type fakeVault struct {
	mu     sync.Mutex
	values []string
	fail   func(n int) bool
	calls  int
}

func (v *fakeVault) SetToken(_ context.Context, value string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	if v.fail != nil && v.fail(v.calls) {
		return errors.New("vault unavailable")
	}
	v.values = append(v.values, value)
	return nil
}

func (v *fakeVault) got() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.values...)
}

const testPlaceholder = "podbot-secret-github-ABCDEFGHIJKLMNOPQRSTUVWX"

// noTokenOnDisk fails when any file under dir holds a minted token.
func noTokenOnDisk(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "ghs_tok") {
			t.Errorf("%s holds a real token: %q", p, b)
		}
		return nil
	})
}

func TestVaultModeRefreshesTheVaultAndKeepsThePlaceholder(t *testing.T) {
	clock := newClock()
	runtime := t.TempDir()
	vault := &fakeVault{fail: func(n int) bool { return n == 3 }}
	src := &fakeSource{clock: clock, ttl: time.Hour}
	d, err := New(Options{ContainerID: "c1", RuntimeDir: runtime, Source: src, Repositories: []string{"r"},
		Alive: aliveUntil(clock, t0.Add(4*time.Hour)), Clock: clock, Jitter: func() float64 { return 0 },
		Vault: vault, Placeholder: testPlaceholder})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := d.Prepare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tok.Value != "ghs_tok1" || readToken(t, d) != testPlaceholder {
		t.Fatalf("after Prepare: token %q, file %q", tok.Value, readToken(t, d))
	}
	noTokenOnDisk(t, runtime)
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := vault.got()
	// Call 3 (the second refresh) failed at the vault and was retried
	// with a fresh token: tokens 1, 2, 4, ...
	if len(got) < 4 || got[0] != "ghs_tok1" || got[1] != "ghs_tok2" || got[2] != "ghs_tok4" {
		t.Fatalf("vault values %q", got)
	}
	// The container stopped: its directory is gone.
	if _, err := os.Stat(d.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("token directory left behind: %v", err)
	}
}

func TestVaultModeWritesThePlaceholderOnlyAfterTheVault(t *testing.T) {
	clock := newClock()
	runtime := t.TempDir()
	vault := &fakeVault{fail: func(int) bool { return true }}
	d, err := New(Options{ContainerID: "c1", RuntimeDir: runtime, Source: &fakeSource{clock: clock, ttl: time.Hour},
		Repositories: []string{"r"}, Alive: aliveUntil(clock, t0.Add(time.Hour)), Clock: clock, Vault: vault, Placeholder: testPlaceholder})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Prepare(context.Background()); err == nil {
		t.Fatal("Prepare succeeded although the vault refused the token")
	}
	if _, err := os.Stat(d.TokenPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a token file was written although the vault holds nothing: %v", err)
	}
	noTokenOnDisk(t, runtime)
}

func TestVaultModeNeedsAPlaceholder(t *testing.T) {
	clock := newClock()
	for _, ph := range []string{"", "a b", "x\n"} {
		_, err := New(Options{ContainerID: "c1", RuntimeDir: t.TempDir(), Source: &fakeSource{clock: clock},
			Repositories: []string{"r"}, Alive: aliveUntil(clock, t0), Vault: &fakeVault{}, Placeholder: ph})
		if err == nil {
			t.Errorf("placeholder %q accepted", ph)
		}
	}
}
