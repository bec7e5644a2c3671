package config

import (
	"strings"
	"time"
)

// Redacted replaces secret values wherever configuration is shown.
const Redacted = "[redacted]"

// Entry is one key of the effective configuration, for podbot config show.
type Entry struct {
	// Key is the dotted key.
	Key string `json:"key"`
	// Value is the typed value (string, bool, int64, float64, []string;
	// sizes and durations as their text form), with secrets redacted.
	Value any `json:"value"`
	// Text is the value as text, as the environment layer would read it.
	Text string `json:"text"`
	// Source is "default", a file path, an environment variable or a flag.
	Source string `json:"source"`
}

// Effective lists every key with its value and source, in documentation
// order. Values of secret keys are replaced by Redacted, and any password
// embedded in a URL value is removed.
func (l *Loaded) Effective() []Entry {
	return effective(keyTable(), &l.Config, l.Sources)
}

func effective(defs []keyDef, c *Config, sources map[string]string) []Entry {
	out := make([]Entry, 0, len(defs))
	for _, d := range defs {
		v := fieldValue(d, c)
		text := formatValue(v)
		switch x := v.(type) {
		case ByteSize, time.Duration:
			v = text
		case string:
			v = redactURL(x)
			text = v.(string)
		}
		if d.secret && !isZero(v) {
			v, text = Redacted, Redacted
		}
		src := sources[d.key]
		if src == "" {
			src = SourceDefault
		}
		out = append(out, Entry{Key: d.key, Value: v, Text: text, Source: src})
	}
	return out
}

func isZero(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []string:
		return len(x) == 0
	case map[string]string:
		return len(x) == 0
	}
	return false
}

// redactURL hides the password of a URL with user info ("ssh://u:p@h" ->
// "ssh://u:[redacted]@h"); other strings are returned unchanged.
func redactURL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 {
		return s
	}
	return s[:i+3] + rest[:colon+1] + Redacted + rest[at:]
}
