package config

import (
	"fmt"
	"regexp"
	"strings"
)

// Taint effects a toleration names.
const (
	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// Toleration is one entry of kubernetes.tolerations: sandbox Pods tolerate
// the taint Key with Effect, and Value when it is set (any value when not).
type Toleration struct {
	// Key is the taint's key, a Kubernetes qualified name (prefix/name).
	Key string
	// Value is the taint's value; empty with no "=" tolerates any value.
	Value string
	// Exists is set when the entry had no "=": every value of Key matches.
	Exists bool
	// Effect is EffectNoSchedule, EffectPreferNoSchedule or EffectNoExecute.
	Effect string
}

// Shapes of a taint's parts, as the API server checks them: the key is a
// qualified name (an optional DNS subdomain prefix and "/", then up to 63
// letters, digits, '-', '_' and '.'), the value a label value.
var (
	taintKeyName  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)
	taintKeyPfx   = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
	taintValueRE  = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$`)
	maxToleration = 512
)

// ParseToleration reads one kubernetes.tolerations entry written as kubectl
// taint writes a taint: key=value:Effect tolerates that taint, key:Effect
// tolerates key with any value.
func ParseToleration(s string) (Toleration, error) {
	if len(s) > maxToleration {
		return Toleration{}, fmt.Errorf("toleration of %d bytes is too long", len(s))
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Toleration{}, fmt.Errorf("toleration %q: expected key=value:Effect or key:Effect", s)
	}
	kv, effect := s[:i], s[i+1:]
	switch effect {
	case EffectNoSchedule, EffectPreferNoSchedule, EffectNoExecute:
	default:
		return Toleration{}, fmt.Errorf("toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
	}
	t := Toleration{Effect: effect}
	var hasValue bool
	t.Key, t.Value, hasValue = strings.Cut(kv, "=")
	t.Exists = !hasValue
	if !validTaintKey(t.Key) {
		return Toleration{}, fmt.Errorf("toleration %q: key %q is not a qualified name ([prefix/]name of letters, digits, '-', '_', '.')", s, t.Key)
	}
	if hasValue && (t.Value == "" || !taintValueRE.MatchString(t.Value)) {
		return Toleration{}, fmt.Errorf("toleration %q: value %q is not a label value (at most 63 letters, digits, '-', '_', '.'); leave out =value to match any value", s, t.Value)
	}
	return t, nil
}

// validTaintKey checks a qualified name: [prefix/]name.
func validTaintKey(k string) bool {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix && !taintKeyPfx.MatchString(prefix) {
		return false
	}
	return taintKeyName.MatchString(name)
}

// String writes t back as key=value:Effect or key:Effect.
func (t Toleration) String() string {
	if t.Exists {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}
