package tokendaemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
)

// testRepos is the repository the tests' tokens are limited to.
var testRepos = []string{"demo"}

func TestDaemonScopesTokensAndWritesOrigin(t *testing.T) {
	clock := newClock()
	src := &fakeSource{clock: clock, ttl: time.Hour}
	origin, err := gitcred.ParseOrigin("https://github.com/")
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Repositories: []string{"demo"},
		GitOrigin: origin, Clock: clock, Alive: aliveUntil(clock, clock.Now().Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(src.repos) != 1 || !slices.Equal(src.repos[0], []string{"demo"}) {
		t.Errorf("token requests asked for %v, want [[demo]]", src.repos)
	}
	got, err := gitcred.ReadOrigin(filepath.Join(d.Dir(), OriginFileName))
	if err != nil || got != origin {
		t.Errorf("origin file = %v, %v; want %v", got, err, origin)
	}
	st, err := os.Stat(filepath.Join(d.Dir(), OriginFileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("origin file mode: %v, %v", st, err)
	}
}

func TestDaemonRefusesWithoutRepository(t *testing.T) {
	clock := newClock()
	src := &fakeSource{clock: clock, ttl: time.Hour}
	_, err := New(Options{ContainerID: "box", RuntimeDir: t.TempDir(), Source: src, Clock: clock, Alive: aliveUntil(clock, clock.Now())})
	if !errors.Is(err, errdefs.ErrRefused) {
		t.Fatalf("New without repositories = %v; want a refusal", err)
	}
}

func TestOriginFileNameMatchesSandboxPath(t *testing.T) {
	if ContainerSecretsDir+"/"+OriginFileName != gitcred.OriginPath || ContainerTokenPath != gitcred.TokenPath {
		t.Errorf("the token mount (%s) and gitcred's paths (%s, %s) disagree", ContainerSecretsDir, gitcred.OriginPath, gitcred.TokenPath)
	}
}
