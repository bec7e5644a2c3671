package egress

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Bounds on a policy file. The file is written by podbot on the host but
// read inside the sandbox's proxy container, so it is parsed as untrusted
// input.
const (
	// MaxPolicyFileBytes bounds a policy file.
	MaxPolicyFileBytes = 1 << 20
	// maxPolicyRules bounds the allow and deny rules together.
	maxPolicyRules = 10000
	// maxPolicyPins bounds the pinned names.
	maxPolicyPins = 1000
	// maxRulePorts bounds one rule's ports.
	maxRulePorts = 64
	// maxSourceLen bounds a rule's Source.
	maxSourceLen = 200
)

// policyFileVersion is the only version ReadPolicyFile accepts.
const policyFileVersion = 1

// policyFile is the JSON form of a Policy on disk.
type policyFile struct {
	Version int               `json:"version"`
	Rules   []fileRule        `json:"rules"`
	Deny    []fileRule        `json:"deny,omitempty"`
	Resolve map[string]string `json:"resolve,omitempty"`
}

type fileRule struct {
	Host   string `json:"host"`
	Ports  []int  `json:"ports,omitempty"`
	Source string `json:"source,omitempty"`
}

// ErrBadPolicyFile classes a policy file that ReadPolicyFile refuses.
var ErrBadPolicyFile = errors.New("bad egress policy file")

// WritePolicyFile writes p to path atomically (a temporary file in the same
// directory, synced, then renamed over path) with mode 0644, in the form
// ReadPolicyFile reads.
func WritePolicyFile(path string, p *Policy) error {
	data, err := MarshalPolicy(p)
	if err != nil {
		var fe *errdefs.FilesystemError
		if errors.As(err, &fe) {
			fe.Path = path
		}
		return err
	}
	return writeFileAtomic(path, data, 0o644, "write egress policy")
}

// MarshalPolicy returns p in the form ReadPolicyFile and ParsePolicy read,
// refusing a policy larger than MaxPolicyFileBytes.
func MarshalPolicy(p *Policy) ([]byte, error) {
	pf := policyFile{Version: policyFileVersion, Rules: toFileRules(p.Rules), Deny: toFileRules(p.Deny), Resolve: p.Resolve}
	if pf.Rules == nil {
		pf.Rules = []fileRule{}
	}
	data, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "write egress policy", Err: err}
	}
	data = append(data, '\n')
	if len(data) > MaxPolicyFileBytes {
		return nil, &errdefs.FilesystemError{Op: "write egress policy", Reason: errdefs.ErrRefused,
			Msg: fmt.Sprintf("the policy takes %d bytes, more than the %d a policy file may hold", len(data), MaxPolicyFileBytes)}
	}
	return data, nil
}

func toFileRules(rs []Rule) []fileRule {
	if rs == nil {
		return nil
	}
	out := make([]fileRule, len(rs))
	for i, r := range rs {
		out[i] = fileRule{Host: r.Host, Ports: r.Ports, Source: r.Source}
	}
	return out
}

// ReadPolicyFile reads a policy written by WritePolicyFile. It refuses a
// file over MaxPolicyFileBytes, JSON with unknown fields or trailing data,
// another version, and any rule or pin that ParseRule or ParsePin would not
// produce itself. Content errors match ErrBadPolicyFile.
func ReadPolicyFile(path string) (*Policy, error) {
	p, _, err := ReadPolicyFileDigest(path)
	return p, err
}

// ReadPolicyFileDigest is ReadPolicyFile that also returns PolicyDigest of
// the bytes it parsed.
func ReadPolicyFileDigest(path string) (*Policy, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", &errdefs.FilesystemError{Op: "read egress policy", Path: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPolicyFileBytes+1))
	if err != nil {
		return nil, "", &errdefs.FilesystemError{Op: "read egress policy", Path: path, Err: err}
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, "", &errdefs.FilesystemError{Op: "read egress policy", Path: path, Err: err}
	}
	return p, PolicyDigest(data), nil
}

// PolicyDigest identifies the content of a policy file: the hex SHA-256 of
// its bytes. The proxy records the digest of the policy it loaded (its
// --loaded file) so that podbot can tell when a policy it wrote is in force.
func PolicyDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ParsePolicy parses the content of a policy file, as ReadPolicyFile does.
func ParsePolicy(data []byte) (*Policy, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadPolicyFile, fmt.Sprintf(format, a...))
	}
	if len(data) > MaxPolicyFileBytes {
		return nil, bad("larger than %d bytes", MaxPolicyFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var pf policyFile
	if err := dec.Decode(&pf); err != nil {
		return nil, bad("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("trailing data after the policy")
	}
	if pf.Version != policyFileVersion {
		return nil, bad("version %d, want %d", pf.Version, policyFileVersion)
	}
	if pf.Rules == nil {
		return nil, bad(`"rules" is missing`)
	}
	if len(pf.Rules)+len(pf.Deny) > maxPolicyRules {
		return nil, bad("more than %d rules", maxPolicyRules)
	}
	if len(pf.Resolve) > maxPolicyPins {
		return nil, bad("more than %d resolve entries", maxPolicyPins)
	}
	p := &Policy{}
	var err error
	if p.Rules, err = fromFileRules(pf.Rules); err != nil {
		return nil, bad("rules: %v", err)
	}
	if p.Deny, err = fromFileRules(pf.Deny); err != nil {
		return nil, bad("deny: %v", err)
	}
	if pf.Resolve != nil {
		p.Resolve = make(map[string]string, len(pf.Resolve))
		for h, a := range pf.Resolve {
			host, addr, err := ParsePin(h + "=" + a)
			if err != nil || host != h || addr != a {
				return nil, bad("resolve entry for %.100q is not canonical host=address", h)
			}
			p.Resolve[host] = addr
		}
	}
	return p, nil
}

func fromFileRules(frs []fileRule) ([]Rule, error) {
	if frs == nil {
		return nil, nil
	}
	out := make([]Rule, 0, len(frs))
	for _, fr := range frs {
		host := fr.Host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		r, err := ParseRule(host)
		if err != nil {
			return nil, err
		}
		if r.Host != fr.Host {
			return nil, fmt.Errorf("rule host %.100q is not in canonical form (%q)", fr.Host, r.Host)
		}
		if len(fr.Ports) > maxRulePorts {
			return nil, fmt.Errorf("rule %s has more than %d ports", r.Host, maxRulePorts)
		}
		for _, port := range fr.Ports {
			if port < 1 || port > 65535 {
				return nil, fmt.Errorf("rule %s: port %d is out of range", r.Host, port)
			}
		}
		if len(fr.Source) > maxSourceLen || strings.ContainsFunc(fr.Source, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			return nil, fmt.Errorf("rule %s: source is over-long or holds control characters", r.Host)
		}
		r.Ports = fr.Ports
		r.Source = fr.Source
		out = append(out, r)
	}
	return out, nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, made with mode, synced, then renamed over path, so a reader
// (the proxy polling the file) sees the old or the new content, never a
// part. Errors are *errdefs.FilesystemError with op.
func writeFileAtomic(path string, data []byte, mode os.FileMode, op string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*") // CreateTemp makes it 0600
	if err != nil {
		return &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return &errdefs.FilesystemError{Op: op, Path: path, Err: err}
	}
	return nil
}
