package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxListItems bounds a list value so a hostile value cannot grow memory.
const maxListItems = 1024

// ParseList splits a comma-separated value as environment variables and
// flags carry lists: items are trimmed and empty items dropped, so "a, b,,"
// is ["a" "b"] and "," is the empty list.
func ParseList(s string) []string {
	out := []string{}
	for item := range strings.SplitSeq(s, ",") {
		if t := strings.TrimSpace(item); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// ParseBool accepts exactly "true" or "false" (any case, surrounding space
// ignored). Unlike strconv.ParseBool it refuses 1, 0, t, f, yes and no.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("got %q; expected true or false", s)
}

// parseText converts a raw string (from the environment or a flag) to the
// typed value of a key.
func parseText(typ Type, raw string) (any, error) {
	s := strings.TrimSpace(raw)
	switch typ {
	case TypeString:
		return s, nil
	case TypeBool:
		return ParseBool(s)
	case TypeID, TypeInt:
		return parseNonNegInt(typ, s)
	case TypeFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("got %q; expected a non-negative number such as 1 or 1.5", raw)
		}
		return checkFloat(f)
	case TypeSize:
		b, err := ParseSize(s)
		if err != nil {
			return nil, err
		}
		return b, nil
	case TypeDuration:
		return parseDuration(s)
	case TypeList:
		l := ParseList(s)
		if len(l) > maxListItems {
			return nil, fmt.Errorf("list has %d items; at most %d are allowed", len(l), maxListItems)
		}
		return l, nil
	case TypeMap:
		return parseMap(s)
	}
	return nil, fmt.Errorf("unsupported type %s", typ)
}

// parseMap reads a map as environment variables and flags carry it:
// comma-separated NAME=VALUE items, trimmed, each name at most once.
func parseMap(s string) (map[string]string, error) {
	items := ParseList(s)
	if len(items) > maxListItems {
		return nil, fmt.Errorf("map has %d entries; at most %d are allowed", len(items), maxListItems)
	}
	out := make(map[string]string, len(items))
	for _, item := range items {
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %q is not NAME=VALUE", item)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("entry %q names %s twice", item, k)
		}
		out[k] = v
	}
	return out, nil
}

func parseNonNegInt(typ Type, s string) (int64, error) {
	what := "a non-negative whole number"
	if typ == TypeID {
		what = "a numeric id (digits only)"
	}
	if s == "" {
		return 0, fmt.Errorf("empty value; expected %s", what)
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			if strings.HasPrefix(s, "-") {
				return 0, fmt.Errorf("got %q; expected %s, not a negative number", s, what)
			}
			return 0, fmt.Errorf("got %q; expected %s", s, what)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("got %q; the number is too large", s)
	}
	return n, nil
}

func checkFloat(f float64) (float64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("got %v; expected a finite non-negative number", f)
	}
	return f, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("got %q; expected a duration such as 30s, 15m or 1h30m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("got %q; expected a duration that is not negative", s)
	}
	return d, nil
}

// fromTOML converts a value decoded from the TOML file to the typed value
// of a key, refusing values of the wrong TOML type.
func fromTOML(typ Type, v any) (any, error) {
	switch typ {
	case TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("got %s; expected a string (in quotes)", tomlKind(v))
	case TypeBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("got %s; expected true or false (without quotes)", tomlKind(v))
	case TypeID, TypeInt:
		n, ok := v.(int64)
		if !ok {
			if typ == TypeID {
				return nil, fmt.Errorf("got %s; expected a numeric id (an integer without quotes)", tomlKind(v))
			}
			return nil, fmt.Errorf("got %s; expected a non-negative integer", tomlKind(v))
		}
		if n < 0 {
			return nil, fmt.Errorf("got %d; expected a non-negative integer", n)
		}
		return n, nil
	case TypeFloat:
		switch n := v.(type) {
		case int64:
			return checkFloat(float64(n))
		case float64:
			return checkFloat(n)
		}
		return nil, fmt.Errorf("got %s; expected a non-negative number", tomlKind(v))
	case TypeSize:
		switch n := v.(type) {
		case int64:
			if n < 0 {
				return nil, fmt.Errorf("got %d; expected a non-negative size", n)
			}
			return ByteSize(n), nil
		case string:
			return ParseSize(n)
		}
		return nil, fmt.Errorf("got %s; expected a size such as \"512m\" or a number of bytes", tomlKind(v))
	case TypeDuration:
		if s, ok := v.(string); ok {
			return parseDuration(strings.TrimSpace(s))
		}
		return nil, fmt.Errorf("got %s; expected a duration string such as \"30s\" or \"15m\"", tomlKind(v))
	case TypeList:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("got %s; expected an array of strings such as [\"a\", \"b\"]", tomlKind(v))
		}
		if len(arr) > maxListItems {
			return nil, fmt.Errorf("array has %d items; at most %d are allowed", len(arr), maxListItems)
		}
		out := make([]string, 0, len(arr))
		for i, item := range arr {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("item %d is %s; expected an array of strings", i, tomlKind(item))
			}
			out = append(out, s)
		}
		return out, nil
	case TypeMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("got %s; expected a table such as { contents = \"write\" }", tomlKind(v))
		}
		if len(m) > maxListItems {
			return nil, fmt.Errorf("table has %d entries; at most %d are allowed", len(m), maxListItems)
		}
		out := make(map[string]string, len(m))
		for k, item := range m {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("entry %s is %s; expected a string", k, tomlKind(item))
			}
			out[k] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported type %s", typ)
}

// tomlKind names the TOML type of a decoded value for error messages.
func tomlKind(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("a %T value", v)
}

// assign stores a typed value into the field of d in c.
func assign(d keyDef, c *Config, v any) error {
	switch p := d.field(c).(type) {
	case *string:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("internal: %s wants string, got %T", d.key, v)
		}
		*p = s
	case *bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("internal: %s wants bool, got %T", d.key, v)
		}
		*p = b
	case *int64:
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("internal: %s wants int64, got %T", d.key, v)
		}
		*p = n
	case *float64:
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("internal: %s wants float64, got %T", d.key, v)
		}
		*p = f
	case *ByteSize:
		b, ok := v.(ByteSize)
		if !ok {
			return fmt.Errorf("internal: %s wants ByteSize, got %T", d.key, v)
		}
		*p = b
	case *time.Duration:
		t, ok := v.(time.Duration)
		if !ok {
			return fmt.Errorf("internal: %s wants duration, got %T", d.key, v)
		}
		*p = t
	case *[]string:
		l, ok := v.([]string)
		if !ok {
			return fmt.Errorf("internal: %s wants []string, got %T", d.key, v)
		}
		*p = slices.Clone(l)
	case *map[string]string:
		m, ok := v.(map[string]string)
		if !ok {
			return fmt.Errorf("internal: %s wants map[string]string, got %T", d.key, v)
		}
		*p = maps.Clone(m)
	default:
		return fmt.Errorf("internal: %s has unsupported field type %T", d.key, p)
	}
	return nil
}

// fieldValue reads the typed value of d from c.
func fieldValue(d keyDef, c *Config) any {
	switch p := d.field(c).(type) {
	case *string:
		return *p
	case *bool:
		return *p
	case *int64:
		return *p
	case *float64:
		return *p
	case *ByteSize:
		return *p
	case *time.Duration:
		return *p
	case *[]string:
		return slices.Clone(*p)
	case *map[string]string:
		return maps.Clone(*p)
	}
	return nil
}

// formatValue renders a typed value as text, in a form the environment
// layer reads back.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case ByteSize:
		return x.String()
	case time.Duration:
		return x.String()
	case []string:
		return strings.Join(x, ",")
	case map[string]string:
		items := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			items = append(items, k+"="+x[k])
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v)
}
