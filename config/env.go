package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// envLayer reads PODBOT_<SECTION>_<KEY> variables. Empty values count as
// unset. Unknown PODBOT_ variables become warnings, never errors, so a
// newer environment does not break an older podbot.
func envLayer(env map[string]string, defs []keyDef) (map[string]any, []string, error) {
	out := map[string]any{}
	names := make(map[string]bool, len(defs))
	envNames := make([]string, 0, len(defs))
	for _, d := range defs {
		name := envName(d.key)
		names[name] = true
		envNames = append(envNames, strings.ToLower(name))
		raw, ok := env[name]
		if !ok || strings.TrimSpace(raw) == "" {
			continue
		}
		v, err := parseText(d.typ, raw)
		if err != nil {
			return nil, nil, &errdefs.ConfigError{Key: d.key, Source: name, Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		out[d.key] = v
	}
	var warnings []string
	for name := range env {
		if !strings.HasPrefix(name, envPrefix) || names[name] || name == envConfigPath {
			continue
		}
		w := fmt.Sprintf("environment variable %s is not a podbot setting; ignored", name)
		if s := nearestKey(strings.ToLower(name), envNames); s != "" {
			w += "; did you mean " + strings.ToUpper(s) + "?"
		}
		warnings = append(warnings, w)
	}
	slices.Sort(warnings)
	return out, warnings, nil
}

// flagLayer parses flag values. A key that is not a config key is a
// programming error in the caller, reported as an unknown key.
func flagLayer(opts LoadOptions, byKey map[string]keyDef, known []string) (map[string]any, error) {
	out := make(map[string]any, len(opts.Flags))
	keys := make([]string, 0, len(opts.Flags))
	for k := range opts.Flags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		src := flagSource(opts, key)
		d, ok := byKey[key]
		if !ok {
			return nil, &errdefs.ConfigError{Key: key, Source: src, Reason: errdefs.ErrUnknownKey,
				Msg: "flag maps to unknown key" + didYouMean(key, known)}
		}
		v, err := parseText(d.typ, opts.Flags[key])
		if err != nil {
			return nil, &errdefs.ConfigError{Key: key, Source: src, Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		out[key] = v
	}
	return out, nil
}
