package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/workspace"
)

// factory builds what commands share, lazily and once: the effective
// configuration, the logger and the engine connection.
type factory struct {
	ios     *ioStreams
	environ []string
	global  globalOptions
	logger  *slog.Logger
	// redactor masks secret values (allowlisted environment values and
	// configured secrets) in every log line and progress message.
	redactor *creds.Redactor

	loaded *config.Loaded
	// base is the configuration from global flags, the environment and
	// files alone, loaded by the checks that run before a command; the
	// command takes it as its own when it adds no flags of its own.
	base *config.Loaded
	conn *engine.Conn
	kube kubeState
	// handOver is how a build without the kubernetes backend passes a
	// command to the companion binary (see handover.go).
	handOver handOver
}

func newFactory(ios *ioStreams, environ []string) *factory {
	return &factory{
		ios:      ios,
		environ:  environ,
		logger:   slog.New(slog.NewTextHandler(ios.ErrOut, nil)),
		redactor: creds.NewRedactor(),
		handOver: defaultHandOver(),
	}
}

// getenv reads a variable from the environment podbot was started with.
func (f *factory) getenv(key string) string {
	prefix := key + "="
	for i := len(f.environ) - 1; i >= 0; i-- {
		if strings.HasPrefix(f.environ[i], prefix) {
			return f.environ[i][len(prefix):]
		}
	}
	return ""
}

// flagOverrides returns the global flags the user set, keyed by config key.
func (f *factory) flagOverrides() map[string]string {
	m := map[string]string{}
	if f.global.engineSocket != "" {
		m["engine_socket"] = f.global.engineSocket
	}
	if f.global.image != "" {
		m["image"] = f.global.image
	}
	if f.global.backend != "" {
		m["sandbox.backend"] = f.global.backend
	}
	return m
}

// flagNames names the flag behind each overridden key, for config sources.
func flagNames(flags map[string]string) map[string]string {
	names := make(map[string]string, len(flags))
	for k := range flags {
		switch k {
		case "network.mode":
			names[k] = "--network"
		case "sandbox.backend":
			names[k] = "--backend"
		case "workspace.host_path":
			names[k] = "--workspace"
		case "workspace.source":
			names[k] = "--repo"
			if flags["workspace.host_path"] != "" {
				names[k] = "--workspace"
			}
		default:
			names[k] = "--" + strings.ReplaceAll(strings.ReplaceAll(k, ".", "-"), "_", "-")
		}
	}
	return names
}

// config loads and validates the layered configuration once.
func (f *factory) config(extra map[string]string) (*config.Loaded, error) {
	if f.loaded != nil {
		return f.loaded, nil
	}
	if len(extra) == 0 && f.base != nil {
		f.loaded = f.base
		return f.loaded, nil
	}
	loaded, err := f.loadConfig(extra)
	if err != nil {
		return nil, err
	}
	f.loaded = loaded
	return loaded, nil
}

// baseConfig loads the configuration without a command's own flags once,
// for the checks that run before the command (checkBackend,
// maybeHandOver).
func (f *factory) baseConfig() (*config.Loaded, error) {
	if f.base != nil {
		return f.base, nil
	}
	loaded, err := f.loadConfig(nil)
	if err != nil {
		return nil, err
	}
	f.base = loaded
	return loaded, nil
}

// loadConfig loads and validates the layered configuration without
// keeping it.
func (f *factory) loadConfig(extra map[string]string) (*config.Loaded, error) {
	flags := f.flagOverrides()
	for k, v := range extra {
		flags[k] = v
	}
	loaded, err := config.Load(config.LoadOptions{
		ConfigPath: f.global.configPath,
		Environ:    f.environ,
		Flags:      flags,
		FlagNames:  flagNames(flags),
	})
	if err != nil {
		return nil, err
	}
	return loaded, nil
}

// engine resolves the endpoint, connects and pings the engine once.
func (f *factory) engine(ctx context.Context) (*engine.Conn, error) {
	if f.conn != nil {
		return f.conn, nil
	}
	loaded, err := f.config(nil)
	if err != nil {
		return nil, err
	}
	ep, source, err := f.endpoint(loaded)
	if err != nil {
		return nil, err
	}
	f.logger.Debug("engine endpoint", "endpoint", ep.String(), "source", source)
	conn, err := engine.Connect(ctx, ep, f.tlsOptions()...)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx, 0); err != nil {
		conn.Close()
		return nil, err
	}
	f.conn = conn
	return conn, nil
}

// onKubernetes reports whether sandbox.backend (or --backend) selects the
// kubernetes backend.
func (f *factory) onKubernetes() (bool, error) {
	loaded, err := f.config(nil)
	if err != nil {
		return false, err
	}
	return loaded.Config.Sandbox.Backend == config.BackendKubernetes, nil
}

func (f *factory) endpoint(loaded *config.Loaded) (engine.Endpoint, string, error) {
	in := engine.ResolveInput{
		Flag:      f.global.engineSocket,
		PodbotEnv: f.getenv("PODBOT_ENGINE_SOCKET"),
		Environ:   f.environ,
	}
	if src := loaded.Sources["engine_socket"]; src != "" && src != "default" && !strings.HasPrefix(src, "--") && !strings.HasPrefix(src, "PODBOT_") {
		in.ConfigValue = loaded.Config.EngineSocket
	}
	return engine.Resolve(in)
}

func (f *factory) tlsOptions() []engine.Option {
	return []engine.Option{engine.WithTLSFromEnviron(f.environ)}
}

func (f *factory) close() {
	if f.conn != nil {
		f.conn.Close()
	}
}

// wrapHandler installs log redaction: every record passes through the
// factory's redactor before it is written.
func (f *factory) wrapHandler(h slog.Handler) slog.Handler {
	return creds.NewRedactingHandler(h, f.redactor)
}

func isProcessExit(err error) bool {
	var exit *errdefs.ExitError
	return errors.As(err, &exit)
}

// cacheDir is podbot's cache directory: $XDG_CACHE_HOME/podbot, else
// ~/.cache/podbot, else a private per-user directory under the temporary
// directory (podbot-cache-<uid>, 0700, refused when another user owns it,
// it is a symlink, or others may write to it).
func (f *factory) cacheDir() (string, error) {
	if d := f.getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "podbot"), nil
	}
	if home := f.getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".cache", "podbot"), nil
	}
	return workspace.PrivateTempDir("podbot-cache")
}
