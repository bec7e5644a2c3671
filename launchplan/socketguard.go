package launchplan

import (
	"path/filepath"

	"github.com/podbot/podbot/errdefs"
)

// WithSocketGuard records host paths that must never enter the container (the
// engine socket, its directory, and the paths they resolve to, all resolved by
// the caller) and checks every mount already in the plan. Plan.Apply re-runs
// the check after every later option.
//
// A mount is refused when its source equals a guarded path or its directory,
// lies inside a guarded path, or contains one (an ancestor directory would
// expose the socket). A sibling inside the socket's directory is allowed: that
// directory is often shared (/run) and a sibling does not lead to the socket.
// Passing a directory itself as a guarded path also refuses everything below it.
func WithSocketGuard(paths ...string) Option {
	return func(p *Plan) error {
		for _, s := range paths {
			if s == "" {
				continue
			}
			if !filepath.IsAbs(s) {
				return configError("engine_socket", errdefs.ErrInvalidValue,
					"engine socket path %q must be an absolute host path", s)
			}
			p.EngineSocketPaths = append(p.EngineSocketPaths, filepath.Clean(s))
		}
		return guardMounts(p.Mounts, p.EngineSocketPaths)
	}
}

// guardMounts refuses any mount that would expose a guarded path.
func guardMounts(mounts []Mount, guarded []string) error {
	for _, m := range mounts {
		src := filepath.Clean(m.Source)
		for _, s := range guarded {
			for _, g := range []string{s, filepath.Dir(s)} {
				contains := hostPathWithin(g, src) // includes equality
				inside := g == s && hostPathWithin(src, s)
				if contains || inside {
					key := m.Origin
					if key == "" {
						key = "engine_socket"
					}
					return &errdefs.ConfigError{
						Key:    key,
						Reason: errdefs.ErrRefused,
						Msg: "mount source " + m.Source + " (target " + m.Target +
							") would expose the container engine socket " + s +
							"; choose a directory that neither is nor contains the socket or its directory",
					}
				}
			}
		}
	}
	return nil
}
