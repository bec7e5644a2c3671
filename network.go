package podbot

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
)

// NetworkPolicy is an allowlist sandbox's egress policy in force.
type NetworkPolicy struct {
	// Sandbox is the sandbox's name.
	Sandbox string `json:"sandbox"`
	// Mode is its egress mode.
	Mode string `json:"mode"`
	// Proxy is the proxy's address on the internal network.
	Proxy string `json:"proxy,omitempty"`
	// PolicyFile is the host path of the policy file the proxy reads.
	PolicyFile string `json:"policy_file"`
	// Policy is the policy: rules with their sources, denies, pins.
	Policy *egress.Policy `json:"policy"`
	// Secrets are the credential vault's secrets, by name and hosts (never
	// a value or a placeholder); empty without a vault.
	Secrets []VaultIndexEntry `json:"secrets,omitempty"`
	// InForce, after NetworkAllow or NetworkDeny, reports that the running
	// proxy confirmed it loaded the changed policy before the call
	// returned; false when the proxy was not running (it loads the file
	// when the sandbox starts again).
	InForce bool `json:"in_force,omitempty"`
}

// maxVaultIndexLabel bounds the vault index label NetworkShow parses.
const maxVaultIndexLabel = 256 << 10

// vaultIndex parses a sandbox's vault index label; a missing or bad label
// gives none.
func vaultIndex(labels map[string]string) []VaultIndexEntry {
	raw := labels[egressnet.LabelSecrets]
	if raw == "" || len(raw) > maxVaultIndexLabel {
		return nil
	}
	var out []VaultIndexEntry
	if json.Unmarshal([]byte(raw), &out) != nil {
		return nil
	}
	return out
}

// egressDirs resolves ref to an allowlist sandbox and returns it with its
// egress directories.
func egressDirs(ctx context.Context, conn *engine.Conn, ref string) (Container, egressnet.Dirs, error) {
	c, err := ResolveContainer(ctx, conn, ref, false)
	if err != nil {
		return c, egressnet.Dirs{}, err
	}
	root := c.Labels[LabelEgressDir]
	if c.Labels[egressnet.LabelMode] != string(egress.ModeAllowlist) || root == "" {
		return c, egressnet.Dirs{}, &errdefs.ContainerError{Op: "network", Container: c.Name, Reason: errdefs.ErrInvalidValue,
			Msg: "the sandbox is not in allowlist mode (network.mode): it has no egress policy"}
	}
	d := egressnet.Dirs{Root: root, Policy: root + "/policy", Log: root + "/log"}
	return c, d, nil
}

// NetworkShow returns the egress policy in force for sandbox ref.
func NetworkShow(ctx context.Context, conn *engine.Conn, ref string) (NetworkPolicy, error) {
	np, _, _, err := networkShow(ctx, conn, ref)
	return np, err
}

// networkShow is NetworkShow, also returning the sandbox and its egress
// directories.
func networkShow(ctx context.Context, conn *engine.Conn, ref string) (NetworkPolicy, Container, egressnet.Dirs, error) {
	c, d, err := egressDirs(ctx, conn, ref)
	if err != nil {
		return NetworkPolicy{}, c, d, err
	}
	p, err := egressnet.ReadPolicy(d.PolicyPath())
	if err != nil {
		return NetworkPolicy{}, c, d, err
	}
	return NetworkPolicy{Sandbox: c.Name, Mode: c.Labels[egressnet.LabelMode], Proxy: c.Labels[egressnet.LabelProxyAddr],
		PolicyFile: d.PolicyPath(), Policy: p, Secrets: vaultIndex(c.Labels)}, c, d, nil
}

// SourceLive is the source of rules added by NetworkAllow and NetworkDeny.
const SourceLive = "podbot network"

// NetworkAllow adds an allow rule (host, host:port, *.domain) to a
// sandbox's policy and drops denies of that exact rule. The file is
// rewritten atomically; a running proxy is told to reload it (SIGHUP) and
// the call returns once the proxy confirms the new policy is in force
// (egressnet.ApplyPolicy), no restart.
func NetworkAllow(ctx context.Context, conn *engine.Conn, ref, rule string) (NetworkPolicy, error) {
	return changePolicy(ctx, conn, ref, rule, func(p *egress.Policy, r egress.Rule) {
		p.Deny = without(p.Deny, r)
		p.Rules = append(without(p.Rules, r), r)
	})
}

// NetworkDeny adds a deny rule, checked before every allow rule.
func NetworkDeny(ctx context.Context, conn *engine.Conn, ref, rule string) (NetworkPolicy, error) {
	return changePolicy(ctx, conn, ref, rule, func(p *egress.Policy, r egress.Rule) {
		p.Deny = append(without(p.Deny, r), r)
	})
}

func changePolicy(ctx context.Context, conn *engine.Conn, ref, rule string, change func(*egress.Policy, egress.Rule)) (NetworkPolicy, error) {
	r, err := egress.ParseRule(rule)
	if err != nil {
		return NetworkPolicy{}, &errdefs.ConfigError{Key: "HOST", Reason: errdefs.ErrInvalidValue, Msg: err.Error(), Err: err}
	}
	r.Source = SourceLive
	np, c, d, err := networkShow(ctx, conn, ref)
	if err != nil {
		return np, err
	}
	change(np.Policy, r)
	proxy := egressnet.ProxyName(egressNameOf(c))
	running, err := containerRunning(ctx, conn, proxy)
	if err != nil {
		return np, err
	}
	if !running {
		// A stopped sandbox's proxy reads the file when podbot start
		// starts it again.
		if err := egressnet.WritePolicy(np.PolicyFile, np.Policy); err != nil {
			return np, err
		}
		return np, nil
	}
	poke := func(ctx context.Context) error {
		// SIGHUP makes the proxy load the file at once rather than at its
		// next poll; ApplyPolicy then waits for the proxy to confirm it.
		return conn.API().ContainerKill(ctx, proxy, "HUP")
	}
	if err := egressnet.ApplyPolicy(ctx, d, np.Policy, policyLoadTimeout, poke); err != nil {
		return np, err
	}
	np.InForce = true
	return np, nil
}

// without returns rs less the rules for the same host and ports as r.
func without(rs []egress.Rule, r egress.Rule) []egress.Rule {
	out := rs[:0:0]
	for _, x := range rs {
		if x.Host == r.Host && equalPorts(x.Ports, r.Ports) {
			continue
		}
		out = append(out, x)
	}
	return out
}

func equalPorts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// maxLogLine bounds one decision log line.
const maxLogLine = 64 << 10

// NetworkLogOptions are the inputs of NetworkLog.
type NetworkLogOptions struct {
	// Follow waits for new entries until ctx ends.
	Follow bool
	// Poll is how often Follow looks for new entries; zero means 300ms.
	Poll time.Duration
}

// NetworkLog calls fn with each line (one JSON object) of sandbox ref's
// decision log, in order; with Follow it keeps reading until ctx ends.
// Lines longer than 64 KiB are skipped. fn's error stops it.
func NetworkLog(ctx context.Context, conn *engine.Conn, ref string, opts NetworkLogOptions, fn func(line []byte) error) error {
	_, d, err := egressDirs(ctx, conn, ref)
	if err != nil {
		return err
	}
	return readLog(ctx, d.LogPath(), opts, fn)
}

// readLog is NetworkLog on a log file's path.
func readLog(ctx context.Context, path string, opts NetworkLogOptions, fn func(line []byte) error) error {
	poll := opts.Poll
	if poll <= 0 {
		poll = 300 * time.Millisecond
	}
	var f *os.File
	var err error
	for f == nil {
		f, err = os.Open(path)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				return &errdefs.FilesystemError{Op: "open", Path: path, Msg: "cannot read the decision log", Err: err}
			}
			if !opts.Follow {
				return nil // no decision yet
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
		}
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 4096)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLogLine {
			line = append(line, chunk...)
		} else {
			line = line[:0:0]
			line = append(line, 0) // marks an over-long line, dropped at its end
		}
		switch {
		case err == nil:
			if len(line) > 1 && line[0] != 0 {
				if ferr := fn(line[:len(line)-1]); ferr != nil {
					return ferr
				}
			}
			line = line[:0]
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			if !opts.Follow {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
		default:
			return &errdefs.FilesystemError{Op: "read", Path: path, Msg: "cannot read the decision log", Err: err}
		}
	}
}
