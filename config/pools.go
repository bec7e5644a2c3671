package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// PoolsKey is the [[pools]] array of tables: warm pools a service declares
// in its configuration file (besides those podbot pool create records).
const PoolsKey = "pools"

// maxPools bounds the [[pools]] entries.
const maxPools = 64

// PoolDecl is one [[pools]] entry.
type PoolDecl struct {
	// Name names the pool (1 to 24 lower-case letters, digits and dashes).
	Name string
	// Kind is tools (default) or agent.
	Kind string
	// Size is how many ready members to keep (0 to 64).
	Size int64
	// Image overrides the kind's image.
	Image string
	// Network overrides the kind's network (agent pools: allowlist, none or open).
	Network string
	// Memory overrides the memory limit when positive.
	Memory ByteSize
	// CPUs overrides the CPU limit when positive.
	CPUs float64
	// PidsLimit overrides the process limit when positive.
	PidsLimit int64
	// ReadOnlyRootfs, when set, overrides the read-only root setting.
	ReadOnlyRootfs *bool
}

// poolFields are the keys a [[pools]] table may hold.
var poolFields = []string{"name", "kind", "size", "image", "network", "memory", "cpus", "pids_limit", "read_only_rootfs"}

// poolNamePattern is a pool name (package pool checks the same).
var poolNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

func poolKey(i int, field string) string {
	k := fmt.Sprintf("%s[%d]", PoolsKey, i)
	if field != "" {
		k += "." + field
	}
	return k
}

// decodePools decodes and checks the [[pools]] array of tables.
func decodePools(v any, src func(key string) string) ([]PoolDecl, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, &errdefs.ConfigError{Key: PoolsKey, Source: src(PoolsKey), Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("got %s; declare each pool as a [[pools]] table", tomlKind(v))}
	}
	if len(arr) > maxPools {
		return nil, &errdefs.ConfigError{Key: PoolsKey, Source: src(PoolsKey), Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("%d pools; at most %d are allowed", len(arr), maxPools)}
	}
	out := make([]PoolDecl, 0, len(arr))
	seen := map[string]bool{}
	for i, item := range arr {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, &errdefs.ConfigError{Key: poolKey(i, ""), Source: src(poolKey(i, "")), Reason: errdefs.ErrInvalidValue,
				Msg: fmt.Sprintf("got %s; declare each pool as a [[pools]] table", tomlKind(item))}
		}
		var p PoolDecl
		for _, f := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			key := poolKey(i, f)
			bad := func(reason error, format string, a ...any) error {
				return &errdefs.ConfigError{Key: key, Source: src(key), Reason: reason, Msg: fmt.Sprintf(format, a...)}
			}
			if !slices.Contains(poolFields, f) {
				return nil, bad(errdefs.ErrUnknownKey, "unknown key %q in a [[pools]] table; expected %s", f, strings.Join(poolFields, ", "))
			}
			typ := map[string]Type{"size": TypeInt, "memory": TypeSize, "cpus": TypeFloat, "pids_limit": TypeInt, "read_only_rootfs": TypeBool}[f]
			if typ == "" {
				typ = TypeString
			}
			val, err := fromTOML(typ, m[f])
			if err != nil {
				return nil, bad(errdefs.ErrInvalidValue, "%s", err)
			}
			switch f {
			case "name":
				p.Name = val.(string)
			case "kind":
				p.Kind = val.(string)
			case "size":
				p.Size = val.(int64)
			case "image":
				p.Image = val.(string)
			case "network":
				p.Network = val.(string)
			case "memory":
				p.Memory = val.(ByteSize)
			case "cpus":
				p.CPUs = val.(float64)
			case "pids_limit":
				p.PidsLimit = val.(int64)
			case "read_only_rootfs":
				b := val.(bool)
				p.ReadOnlyRootfs = &b
			}
		}
		bad := func(field, format string, a ...any) error {
			return &errdefs.ConfigError{Key: poolKey(i, field), Source: src(poolKey(i, field)), Reason: errdefs.ErrInvalidValue, Msg: fmt.Sprintf(format, a...)}
		}
		switch {
		case !poolNamePattern.MatchString(p.Name):
			return nil, bad("name", "pool name %q: use 1 to 24 lower-case letters, digits and dashes, starting with a letter or digit", p.Name)
		case seen[p.Name]:
			return nil, bad("name", "pool %q is declared twice", p.Name)
		case p.Kind != "" && p.Kind != "tools" && p.Kind != "agent":
			return nil, bad("kind", "got %q; expected tools or agent", p.Kind)
		case p.Size > 64:
			return nil, bad("size", "got %d; expected 0 to 64", p.Size)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	return out, nil
}
