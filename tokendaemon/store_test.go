package tokendaemon

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestStoreModeKeepsNothingOnDisk(t *testing.T) {
	clock := newClock()
	runtime := t.TempDir()
	store := &fakeVault{fail: func(n int) bool { return n == 2 }}
	src := &fakeSource{clock: clock, ttl: time.Hour}
	// No RuntimeDir: a store needs none.
	d, err := New(Options{ContainerID: "c1", Source: src, Repositories: []string{"r"},
		Alive: aliveUntil(clock, t0.Add(3*time.Hour)), Clock: clock, Jitter: func() float64 { return 0 }, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if d.Dir() != "" || d.TokenPath() != "" {
		t.Errorf("a store-mode daemon names a token directory %q / %q", d.Dir(), d.TokenPath())
	}
	tok, err := d.Prepare(context.Background())
	if err != nil || tok.Value != "ghs_tok1" {
		t.Fatalf("Prepare: %q, %v", tok.Value, err)
	}
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The second store call failed and was retried with a fresh token.
	got := store.got()
	if len(got) < 3 || got[0] != "ghs_tok1" || got[1] != "ghs_tok3" {
		t.Fatalf("stored %q", got)
	}
	if src.repos[0][0] != "r" {
		t.Errorf("repositories %v", src.repos[0])
	}
	entries, _ := os.ReadDir(runtime)
	if len(entries) != 0 {
		t.Errorf("store mode wrote %v", entries)
	}
}

func TestStoreModeRefusesBadTokenAndVault(t *testing.T) {
	clock := newClock()
	store := &fakeVault{}
	d, err := New(Options{ContainerID: "c1", Source: &badValueSource{clock: clock}, Repositories: []string{"r"},
		Alive: aliveUntil(clock, t0), Clock: clock, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Prepare(context.Background()); err == nil || len(store.got()) != 0 {
		t.Fatalf("a token with a newline reached the store: %v %q", err, store.got())
	}
	if _, err := New(Options{ContainerID: "c1", Source: &badValueSource{clock: clock}, Repositories: []string{"r"},
		Alive: aliveUntil(clock, t0), Store: store, Vault: &fakeVault{}, Placeholder: testPlaceholder}); err == nil {
		t.Error("Store and Vault together accepted")
	}
}
