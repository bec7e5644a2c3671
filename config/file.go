package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/v2"
	gotoml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/podbot/podbot/errdefs"
)

// maxFileBytes bounds the configuration file podbot will read.
const maxFileBytes = 1 << 20

// bytesProvider hands already-read file bytes to koanf's TOML parser.
type bytesProvider []byte

// ReadBytes returns the file's bytes.
func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }

// Read is not supported; the bytes need a parser.
func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("config file provider needs a parser")
}

// readFile reads a regular file of at most maxFileBytes. via names where the
// path came from, for errors.
func readFile(path, via string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, via, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fileError(path, via, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &errdefs.ConfigError{Source: via, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("config file %s is not a regular file; point it at a TOML file", path)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fileError(path, via, err)
	}
	if len(data) > maxFileBytes {
		return nil, &errdefs.ConfigError{Source: via, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("config file %s is larger than %d bytes", path, maxFileBytes)}
	}
	return data, nil
}

func fileError(path, via string, err error) error {
	msg := fmt.Sprintf("cannot read config file %s", path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg = fmt.Sprintf("config file %s does not exist; create it or fix the path", path)
	case errors.Is(err, fs.ErrPermission):
		msg = fmt.Sprintf("config file %s is not readable; check its permissions", path)
	}
	return &errdefs.ConfigError{Source: via, Reason: errdefs.ErrInvalidValue, Msg: msg, Err: err}
}

// decodeFile parses TOML bytes from path into typed values per dotted key,
// and returns the line each key was written on (0 when unknown).
//
// The [[secrets]] array of tables, which the key table cannot hold, comes
// back decoded in secrets (nil when the file has none); its lines are in
// the returned map as "secrets[i]" and "secrets[i].field".
//
// The [[pools]] array comes back decoded in fileArrays.pools.
func decodeFile(path string, data []byte, defs map[string]keyDef, known []string) (map[string]any, map[string]int, fileArrays, error) {
	k := koanf.New(".")
	lines, dup := keyLines(data)
	var arrays fileArrays
	if err := k.Load(bytesProvider(data), toml.Parser()); err != nil {
		return nil, nil, arrays, parseError(path, err, dup, lines[dup])
	}
	var secrets []Secret
	flat := k.All()
	keys := make([]string, 0, len(flat))
	for key := range flat {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	out := make(map[string]any, len(flat))
	tables := map[string]map[string]any{} // map-typed keys, gathered from their flattened entries
	for _, key := range keys {
		src := withLine(path, lineOf(lines, key))
		if key == SecretsKey {
			var err error
			if secrets, err = decodeSecrets(flat[key], func(k string) string { return withLine(path, lineOf(lines, k)) }); err != nil {
				return nil, nil, arrays, err
			}
			continue
		}
		if key == PoolsKey {
			var err error
			if arrays.pools, err = decodePools(flat[key], func(k string) string { return withLine(path, lineOf(lines, k)) }); err != nil {
				return nil, nil, arrays, err
			}
			continue
		}
		if strings.HasPrefix(key, PoolsKey+".") {
			return nil, nil, arrays, &errdefs.ConfigError{Key: key, Source: src, Reason: errdefs.ErrInvalidValue,
				Msg: "pools is an array of tables: write each pool under [[pools]], not [pools]"}
		}
		if strings.HasPrefix(key, SecretsKey+".") {
			return nil, nil, arrays, &errdefs.ConfigError{Key: key, Source: src, Reason: errdefs.ErrInvalidValue,
				Msg: "secrets is an array of tables: write each secret under [[secrets]], not [secrets]"}
		}
		if parent := knownPrefix(key, known); parent != "" && defs[parent].typ == TypeMap {
			if tables[parent] == nil {
				tables[parent] = map[string]any{}
			}
			tables[parent][strings.TrimPrefix(key, parent+".")] = flat[key]
			continue
		}
		d, ok := defs[key]
		if !ok {
			return nil, nil, arrays, unknownFileKey(key, src, known)
		}
		v, err := fromTOML(d.typ, flat[key])
		if err != nil {
			return nil, nil, arrays, &errdefs.ConfigError{Key: key, Source: src, Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		out[key] = v
	}
	for key, table := range tables {
		v, err := fromTOML(TypeMap, table)
		if err != nil {
			return nil, nil, arrays, &errdefs.ConfigError{Key: key, Source: withLine(path, lineOf(lines, key)), Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		out[key] = v
	}
	keyLine := make(map[string]int, len(out))
	for key := range out {
		keyLine[key] = lineOf(lines, key)
	}
	if secrets != nil {
		keyLine[SecretsKey] = lineOf(lines, SecretsKey)
		for key, line := range lines {
			if strings.HasPrefix(key, SecretsKey+"[") {
				keyLine[key] = line
			}
		}
	}
	arrays.secrets = secrets
	return out, keyLine, arrays, nil
}

// fileArrays are the arrays of tables of a configuration file, which the
// key table cannot hold.
type fileArrays struct {
	secrets []Secret
	pools   []PoolDecl
}

func unknownFileKey(key, src string, known []string) error {
	msg := fmt.Sprintf("unknown key %q", key)
	sections := sectionNames(known)
	if slices.Contains(sections, key) {
		msg = fmt.Sprintf("%q is a section; write its keys under [%s]", key, key)
	} else if leaf := knownPrefix(key, known); leaf != "" {
		msg = fmt.Sprintf("%q takes a value, not a table", leaf)
	} else {
		msg += didYouMean(key, known)
	}
	return &errdefs.ConfigError{Key: key, Source: src, Reason: errdefs.ErrUnknownKey, Msg: msg}
}

// knownPrefix returns a known key that is a strict prefix (by segments) of key.
func knownPrefix(key string, known []string) string {
	for _, k := range known {
		if strings.HasPrefix(key, k+".") {
			return k
		}
	}
	return ""
}

func sectionNames(known []string) []string {
	var out []string
	for _, k := range known {
		if i := strings.IndexByte(k, '.'); i > 0 && !slices.Contains(out, k[:i]) {
			out = append(out, k[:i])
		}
	}
	return out
}

// parseError turns a TOML syntax error into a ConfigError with the line.
// dup and dupLine name a key written twice, found by keyLines, for the
// decoder errors that carry no position.
func parseError(path string, err error, dup string, dupLine int) error {
	var de *gotoml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return &errdefs.ConfigError{
			Source: fmt.Sprintf("%s:%d:%d", path, row, col),
			Reason: errdefs.ErrParse,
			Msg:    fmt.Sprintf("invalid TOML at line %d, column %d: %s", row, col, de.Error()),
		}
	}
	if dup != "" {
		return &errdefs.ConfigError{Key: dup, Source: withLine(path, dupLine), Reason: errdefs.ErrParse,
			Msg: fmt.Sprintf("invalid TOML at line %d: %s is defined twice", dupLine, dup)}
	}
	return &errdefs.ConfigError{Source: path, Reason: errdefs.ErrParse, Msg: "invalid TOML", Err: err}
}

// keyLines maps each dotted key written in the file to its line number, and
// returns the first key written twice (and records the line of its second
// occurrence). It is best effort: on a syntax error it returns what it
// found so far.
func keyLines(data []byte) (lines map[string]int, dup string) {
	lines = map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	prefix := ""
	arrays := map[string]int{} // entries seen per array of tables
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			name, line := joinKey(&p, e.Key())
			prefix = name
			if e.Kind == unstable.ArrayTable {
				// Each entry's keys are recorded as name[i].key.
				if _, seen := lines[name]; !seen {
					lines[name] = line
				}
				prefix = fmt.Sprintf("%s[%d]", name, arrays[name])
				arrays[name]++
				name = prefix
			}
			if _, seen := lines[name]; !seen {
				lines[name] = line
			} else if e.Kind == unstable.Table && dup == "" {
				dup = name
				lines[name] = line
			}
		case unstable.KeyValue:
			name, line := joinKey(&p, e.Key())
			if prefix != "" {
				name = prefix + "." + name
			}
			if _, seen := lines[name]; !seen {
				lines[name] = line
			} else if dup == "" {
				dup = name
				lines[name] = line
			}
		}
	}
	return lines, dup
}

func joinKey(p *unstable.Parser, it unstable.Iterator) (string, int) {
	var parts []string
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
		parts = append(parts, string(n.Data))
	}
	return strings.Join(parts, "."), line
}

// lineOf finds the line of key, or of its closest written parent.
func lineOf(lines map[string]int, key string) int {
	for k := key; k != ""; {
		if l, ok := lines[k]; ok {
			return l
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

func withLine(path string, line int) string {
	if line <= 0 {
		return path
	}
	return fmt.Sprintf("%s:%d", path, line)
}
