package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestPoolsArrayOfTables(t *testing.T) {
	opts, dir := hermetic(t)
	opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), `[[pools]]
name = "evals"
size = 8
memory = "512m"
cpus = 0.5
read_only_rootfs = false

[[pools]]
name = "scratch"
kind = "agent"
size = 2
network = "none"
`)
	l := mustLoad(t, opts)
	if len(l.Config.Pools) != 2 {
		t.Fatalf("pools = %+v", l.Config.Pools)
	}
	p := l.Config.Pools[0]
	if p.Name != "evals" || p.Size != 8 || p.Memory.Bytes() != 512<<20 || p.CPUs != 0.5 || p.ReadOnlyRootfs == nil || *p.ReadOnlyRootfs {
		t.Errorf("pools[0] = %+v", p)
	}
	if q := l.Config.Pools[1]; q.Kind != "agent" || q.Network != "none" || q.ReadOnlyRootfs != nil {
		t.Errorf("pools[1] = %+v", q)
	}
}

func TestPoolsErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ file, key string }{
		{"[[pools]]\nname = \"../x\"\n", "pools[0].name"},
		{"[[pools]]\nname = \"a\"\nsize = 65\n", "pools[0].size"},
		{"[[pools]]\nname = \"a\"\nkind = \"vm\"\n", "pools[0].kind"},
		{"[[pools]]\nname = \"a\"\ncolour = \"red\"\n", "pools[0].colour"},
		{"[[pools]]\nname = \"a\"\nsize = \"four\"\n", "pools[0].size"},
		{"[[pools]]\nname = \"a\"\n[[pools]]\nname = \"a\"\n", "pools[1].name"},
		{"[pools]\nname = \"a\"\n", "pools.name"},
		{"pools = 3\n", "pools"},
	} {
		opts, dir := hermetic(t)
		opts.ConfigPath = writeFile(t, filepath.Join(dir, "c.toml"), c.file)
		_, err := Load(opts)
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key || !strings.Contains(ce.Source, "c.toml") {
			t.Errorf("%q: err = %v (key %q), want key %s", c.file, err, keyOf(ce), c.key)
		}
	}
}

func keyOf(ce *errdefs.ConfigError) string {
	if ce == nil {
		return ""
	}
	return ce.Key
}
