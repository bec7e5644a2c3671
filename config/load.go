package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"

	"github.com/podbot/podbot/errdefs"
)

// LoadOptions are the inputs of Load. Zero values mean "none": Load reads
// nothing from the process itself (no os.Environ, no home lookup), so the
// caller decides what it sees.
type LoadOptions struct {
	// ConfigPath is an explicit config file (--config). It must exist.
	ConfigPath string
	// Environ is the environment in os.Environ form ("KEY=value").
	Environ []string
	// Flags maps dotted keys to raw flag values, for flags the user set.
	// Lists are comma-separated, as in the environment.
	Flags map[string]string
	// FlagNames optionally maps dotted keys to the flag the user typed
	// (e.g. "image" -> "--image"), shown as the value's source. Without
	// it the source of a flag value is "--flag".
	FlagNames map[string]string
	// HomeDir is the user's home directory. Empty: HOME from Environ.
	HomeDir string
	// XDGConfigHome is $XDG_CONFIG_HOME. Empty: XDG_CONFIG_HOME from Environ.
	XDGConfigHome string
	// SystemDir holds the system-wide podbot/config.toml. Empty: /etc.
	SystemDir string
}

// Loaded is a loaded configuration with the origin of every value.
type Loaded struct {
	// Config is the resolved, validated configuration.
	Config Config
	// Sources maps each dotted key to where its value came from: "default",
	// a file path, an environment variable name, or a flag ("--image").
	Sources map[string]string
	// Files lists the config files read (zero or one).
	Files []string
	// Searched lists every path whose file decides the configuration: the
	// explicit file (--config or PODBOT_CONFIG_PATH), or each default
	// location up to and including the one read (all of them when none
	// exists). A file written at any of them changes what the next Load
	// reads, so whoever may write there controls podbot's settings.
	Searched []string
	// Warnings lists non-fatal problems, such as PODBOT_ variables that
	// match no key, and the warnings of EgressWarnings. They never contain
	// secret values.
	Warnings []string

	// fileLines maps keys set by the config file to their line.
	fileLines map[string]int
}

// Origin is where key's value came from, as Sources says, with the line
// when it came from the config file ("/home/me/.config/podbot/config.toml:12").
//
// A key of a [[secrets]] entry ("secrets[2].hosts") has the source of
// secrets, and the line of that entry's key.
func (l *Loaded) Origin(key string) string {
	base := key
	if i := strings.IndexByte(key, '['); i > 0 {
		base = key[:i]
	}
	src := l.Sources[base]
	if src == "" {
		return SourceDefault
	}
	if len(l.Files) > 0 && src == l.Files[0] {
		return withLine(src, lineOf(l.fileLines, key))
	}
	return src
}

// EgressWarnings lists the warnings the egress settings call for: today
// network.mode = "open", which leaves agent sandboxes with no egress
// control. Commands that launch an agent sandbox show them.
func (l *Loaded) EgressWarnings() []string {
	if l.Config.Network.Mode != NetworkOpen || l.Config.Sandbox.Network == "none" {
		return nil
	}
	return []string{fmt.Sprintf("network.mode = %q (from %s): agent sandboxes get the engine's default network with no egress control; any process in them can reach any host, and whatever it can read can leave", NetworkOpen, l.Origin("network.mode"))}
}

// Source names used in Loaded.Sources.
const (
	// SourceDefault marks a built-in default value.
	SourceDefault = "default"
	// SourceFlag marks a flag value when the flag's name is unknown.
	SourceFlag = "--flag"
)

// Load resolves the configuration from defaults, one file, the environment
// and flags (each later layer overriding earlier ones key by key), then
// validates it. Errors are *errdefs.ConfigError.
func Load(opts LoadOptions) (*Loaded, error) {
	defs := keyTable()
	byKey := make(map[string]keyDef, len(defs))
	known := make([]string, 0, len(defs))
	defaults := make(map[string]any, len(defs))
	for _, d := range defs {
		byKey[d.key] = d
		known = append(known, d.key)
		defaults[d.key] = d.def
	}
	env := environMap(opts.Environ)
	l := &Loaded{Sources: make(map[string]string, len(defs))}
	k := koanf.New(".")
	layer := func(values map[string]any, source func(key string) string) error {
		if err := k.Load(confmap.Provider(values, "."), nil); err != nil {
			return &errdefs.ConfigError{Reason: errdefs.ErrInvalidValue, Msg: "merging configuration", Err: err}
		}
		for key := range values {
			l.Sources[key] = source(key)
		}
		return nil
	}

	if err := layer(defaults, func(string) string { return SourceDefault }); err != nil {
		return nil, err
	}

	path, via, searched, err := findFile(opts, env)
	if err != nil {
		return nil, err
	}
	l.Searched = searched
	var secrets []Secret
	var pools []PoolDecl
	if path != "" {
		data, err := readFile(path, via)
		if err != nil {
			return nil, err
		}
		values, lines, arrays, err := decodeFile(path, data, byKey, known)
		if err != nil {
			return nil, err
		}
		fileSecrets := arrays.secrets
		pools = arrays.pools
		l.Files = append(l.Files, path)
		l.fileLines = lines
		if fileSecrets != nil {
			secrets = fileSecrets
			l.Sources[SecretsKey] = path
		}
		if err := layer(values, func(string) string { return path }); err != nil {
			return nil, err
		}
	}

	envValues, warnings, err := envLayer(env, defs)
	if err != nil {
		return nil, err
	}
	l.Warnings = warnings
	if err := layer(envValues, envName); err != nil {
		return nil, err
	}

	flagValues, err := flagLayer(opts, byKey, known)
	if err != nil {
		return nil, err
	}
	if err := layer(flagValues, func(key string) string { return flagSource(opts, key) }); err != nil {
		return nil, err
	}

	for _, d := range defs {
		if err := assign(d, &l.Config, k.Get(d.key)); err != nil {
			return nil, &errdefs.ConfigError{Key: d.key, Source: l.Sources[d.key], Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
	}
	l.Config.Secrets = secrets
	l.Config.Pools = pools
	if err := l.Config.Validate(); err != nil {
		return nil, l.withSources(err)
	}
	l.Warnings = append(l.Warnings, l.EgressWarnings()...)
	return l, nil
}

// ValidateFor validates the loaded configuration for a subcommand and
// fills in the source of each offending key.
func (l *Loaded) ValidateFor(command string) error {
	if err := l.Config.ValidateFor(command); err != nil {
		return l.withSources(err)
	}
	return nil
}

// WithSources fills in the source (Origin) of each ConfigError in err that
// names a key but no source, for errors from checks made after Load, such
// as Config.ValidateNetwork. It returns err.
func (l *Loaded) WithSources(err error) error { return l.withSources(err) }

// withSources fills the Source of every ConfigError in err (walking joined
// errors) from l.Sources.
func (l *Loaded) withSources(err error) error {
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walk(inner)
			}
			return
		}
		var ce *errdefs.ConfigError
		if errors.As(e, &ce) && ce.Source == "" {
			ce.Source = l.Origin(ce.Key)
		}
	}
	walk(err)
	return err
}

func flagSource(opts LoadOptions, key string) string {
	if n := opts.FlagNames[key]; n != "" {
		return n
	}
	return SourceFlag
}

// environMap turns os.Environ form into a map; later entries win, as in
// the process environment.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// findFile picks the config file. It returns "" when no file applies.
// via names the setting that chose an explicit file, for errors; searched
// is Loaded.Searched.
func findFile(opts LoadOptions, env map[string]string) (path, via string, searched []string, err error) {
	if opts.ConfigPath != "" {
		return opts.ConfigPath, "--config", []string{opts.ConfigPath}, nil
	}
	if p := env[envConfigPath]; strings.TrimSpace(p) != "" {
		return p, envConfigPath, []string{p}, nil
	}
	for _, cand := range candidateFiles(opts, env) {
		searched = append(searched, cand)
		st, err := os.Stat(cand)
		switch {
		case err == nil && st.IsDir():
			return "", "", nil, &errdefs.ConfigError{Source: cand, Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("config path %s is a directory; it must be a TOML file", cand)}
		case err == nil:
			return cand, cand, searched, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", "", nil, fileError(cand, cand, err)
		}
	}
	return "", "", searched, nil
}

// candidateFiles lists the default config locations, most specific first.
// Relative base directories are ignored so the current directory is never
// consulted.
func candidateFiles(opts LoadOptions, env map[string]string) []string {
	var out []string
	xdg := opts.XDGConfigHome
	if xdg == "" {
		xdg = env["XDG_CONFIG_HOME"]
	}
	if filepath.IsAbs(xdg) {
		out = append(out, filepath.Join(xdg, "podbot", "config.toml"))
	}
	home := opts.HomeDir
	if home == "" {
		home = env["HOME"]
	}
	if filepath.IsAbs(home) {
		out = append(out, filepath.Join(home, ".config", "podbot", "config.toml"))
	}
	sys := opts.SystemDir
	if sys == "" {
		sys = "/etc"
	}
	if filepath.IsAbs(sys) {
		out = append(out, filepath.Join(sys, "podbot", "config.toml"))
	}
	return slices.Compact(out)
}
