package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes. In configuration it is written as an integer
// number of bytes or as a string with a binary unit suffix: "512m", "4g",
// "64KiB" (k, m, g, t with optional "b" or "ib"; case-insensitive).
type ByteSize int64

// Size units, powers of 1024.
const (
	KiB ByteSize = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
)

// maxSizeText bounds the length of a size string so parsing stays cheap.
const maxSizeText = 64

// ParseSize parses a size string such as "512m", "4g", "1GiB" or "1048576"
// (plain bytes). Units are binary (k = 1024). The number must be a
// non-negative integer; use a smaller unit instead of a fraction ("1536m").
func ParseSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size; expected a number with an optional unit such as 512m or 4g")
	}
	if len(t) > maxSizeText {
		return 0, fmt.Errorf("size %.20q... is too long", t)
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q must start with a non-negative whole number (e.g. 512m, 4g)", t)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q is too large", t)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	var mult ByteSize
	switch unit {
	case "", "b":
		mult = 1
	case "k", "kb", "kib":
		mult = KiB
	case "m", "mb", "mib":
		mult = MiB
	case "g", "gb", "gib":
		mult = GiB
	case "t", "tb", "tib":
		mult = TiB
	default:
		return 0, fmt.Errorf("size %q has unknown unit %q; use b, k, m, g or t (binary units)", t, unit)
	}
	if n > int64((1<<63-1)/mult) {
		return 0, fmt.Errorf("size %q is too large", t)
	}
	return ByteSize(n) * mult, nil
}

// String formats the size with the largest unit that divides it exactly,
// in the form ParseSize reads back ("4g", "512m", "100").
func (b ByteSize) String() string {
	if b == 0 {
		return "0"
	}
	for _, u := range []struct {
		size   ByteSize
		suffix string
	}{{TiB, "t"}, {GiB, "g"}, {MiB, "m"}, {KiB, "k"}} {
		if b%u.size == 0 {
			return strconv.FormatInt(int64(b/u.size), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// Bytes returns the size as a plain number of bytes.
func (b ByteSize) Bytes() int64 { return int64(b) }
