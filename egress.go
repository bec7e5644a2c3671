package podbot

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// Rule sources beyond the presets' ("preset NAME"), as egress.Rule.Source
// records them.
const (
	// EgressSourceConfig marks a rule from network.allow.
	EgressSourceConfig = "network.allow"
	// EgressSourceFlag marks a rule from --allow-host.
	EgressSourceFlag = "--allow-host"
)

// maxUpstreamCABytes bounds the PEM bundle network.upstream_ca names.
const maxUpstreamCABytes = 1 << 20

// EgressFromConfig builds the egress setting of an agent sandbox (podbot
// run, host and create) from cfg's [network] section: the mode and, in
// allowlist mode, the policy made of the presets' rules (Source "preset
// NAME", the agent preset for agentKind, the github preset from
// github.api_url and github.clone_base_url), network.allow's rules (Source
// "network.allow"), allowHosts (Source "--allow-host", for one launch) and
// network.resolve's pins. A rule that appears twice is kept once, with the
// source that came first. sandbox.network = "none" makes the mode none;
// bridge or a named network needs mode open (config.Config.ValidateNetwork).
// network.upstream_ca must name a readable file of at most 1 MiB holding at
// least one PEM certificate; it is checked here, at launch, rather than when
// the configuration loads.
//
// An empty network.mode (a Config not made by config.Load or config.Default)
// returns the zero Egress: no egress setting, the plan's network as before.
// Errors are *errdefs.ConfigError naming the key and the bad entry.
func EgressFromConfig(cfg config.Config, agentKind string, allowHosts ...string) (launchplan.Egress, error) {
	n := cfg.Network
	if n.Mode == "" {
		return launchplan.Egress{}, nil
	}
	if err := cfg.ValidateNetwork(); err != nil {
		return launchplan.Egress{}, err
	}
	if _, err := githubSecret(cfg.Secrets); err != nil {
		return launchplan.Egress{}, err
	}
	mode := egress.Mode(n.Mode)
	if cfg.Sandbox.Network == "none" {
		mode = egress.ModeNone
	}
	if mode != egress.ModeAllowlist {
		if len(cfg.Secrets) > 0 {
			return launchplan.Egress{}, &errdefs.ConfigError{Key: "network.mode", Reason: errdefs.ErrConflict,
				Msg: fmt.Sprintf("the %d [[secrets]] entries reach their hosts only through the egress proxy of network.mode = \"allowlist\"; the sandbox's mode is %q (sandbox.network = %q)",
					len(cfg.Secrets), mode, cfg.Sandbox.Network)}
		}
		if len(allowHosts) > 0 {
			return launchplan.Egress{}, &errdefs.ConfigError{Key: "network.allow", Source: EgressSourceFlag, Reason: errdefs.ErrConflict,
				Msg: fmt.Sprintf("--allow-host adds egress rules, which only network.mode = \"allowlist\" uses; the sandbox's mode is %q", mode)}
		}
		return launchplan.Egress{Mode: mode}, nil
	}

	var rules []egress.Rule
	seen := map[string]bool{}
	add := func(r egress.Rule) {
		if k := r.String(); !seen[k] {
			seen[k] = true
			rules = append(rules, r)
		}
	}
	po := egress.PresetOptions{AgentKind: agentKind, GitHubAPIURL: cfg.GitHub.APIURL, GitHubCloneURL: cfg.GitHub.CloneBaseURL}
	var presets []string
	for _, name := range n.Presets {
		if slices.Contains(presets, name) {
			continue
		}
		presets = append(presets, name)
		rs, _ := egress.PresetRules(name, po) // names checked by ValidateNetwork
		for _, r := range rs {
			add(r)
		}
	}
	for _, text := range n.Allow {
		r, _ := egress.ParseRule(text) // checked by ValidateNetwork
		r.Source = EgressSourceConfig
		add(r)
	}
	for _, text := range allowHosts {
		r, err := egress.ParseRule(text)
		if err != nil {
			return launchplan.Egress{}, &errdefs.ConfigError{Key: "network.allow", Source: EgressSourceFlag, Reason: errdefs.ErrInvalidValue, Msg: err.Error()}
		}
		r.Source = EgressSourceFlag
		add(r)
	}
	policy := egress.Policy{Rules: rules}
	for _, e := range n.Resolve {
		host, addr, _ := egress.ParsePin(e) // checked by ValidateNetwork
		if policy.Resolve == nil {
			policy.Resolve = map[string]string{}
		}
		policy.Resolve[host] = addr
	}
	if n.UpstreamCA != "" {
		if err := CheckUpstreamCA(n.UpstreamCA); err != nil {
			return launchplan.Egress{}, err
		}
	}
	return launchplan.Egress{Mode: mode, Policy: policy, UpstreamCA: n.UpstreamCA}, nil
}

// CheckUpstreamCA checks the network.upstream_ca file: a regular, readable
// file of at most 1 MiB whose PEM blocks include at least one certificate,
// and every CERTIFICATE block parses. Errors are *errdefs.ConfigError.
func CheckUpstreamCA(path string) error {
	bad := func(msg string, err error) error {
		return &errdefs.ConfigError{Key: "network.upstream_ca", Reason: errdefs.ErrInvalidValue, Msg: msg, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return bad(fmt.Sprintf("%s does not exist; point it at a PEM file of CA certificates", path), err)
		case errors.Is(err, fs.ErrPermission):
			return bad(fmt.Sprintf("%s is not readable; check its permissions", path), err)
		}
		return bad(fmt.Sprintf("cannot open %s", path), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return bad(fmt.Sprintf("cannot read %s", path), err)
	}
	if !st.Mode().IsRegular() {
		return bad(fmt.Sprintf("%s is not a regular file; point it at a PEM file of CA certificates", path), nil)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxUpstreamCABytes+1))
	if err != nil {
		return bad(fmt.Sprintf("cannot read %s", path), err)
	}
	if len(data) > maxUpstreamCABytes {
		return bad(fmt.Sprintf("%s is larger than %d bytes", path, maxUpstreamCABytes), nil)
	}
	certs := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return bad(fmt.Sprintf("certificate %d in %s does not parse", certs+1, path), err)
		}
		certs++
	}
	if certs == 0 {
		return bad(fmt.Sprintf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path), nil)
	}
	return nil
}

// EgressEntry is one effective egress rule and where it came from, for
// podbot config show.
type EgressEntry struct {
	// Rule is the rule as egress.ParseRule reads it.
	Rule string `json:"rule"`
	// Source is the rule's source: "preset NAME" or "network.allow".
	Source string `json:"source"`
	// Origin is where the setting behind it was made: the config file with
	// its line, an environment variable, a flag or "default"
	// (network.presets' for a preset's rules, network.allow's otherwise).
	Origin string `json:"origin"`
}

// PinEntry is one network.resolve pin, for podbot config show.
type PinEntry struct {
	// Host is the pinned name and Address where it goes.
	Host    string `json:"host"`
	Address string `json:"address"`
}

// EffectiveEgress is the egress setting a launch with the loaded
// configuration would get, with where each part came from.
type EffectiveEgress struct {
	// Mode is the effective mode (sandbox.network = "none" makes it none)
	// and ModeOrigin where network.mode was set.
	Mode       string `json:"mode"`
	ModeOrigin string `json:"mode_origin"`
	// Rules are the effective rules, in the order the policy checks them;
	// empty outside allowlist mode.
	Rules []EgressEntry `json:"rules"`
	// Resolve lists the pins, by host.
	Resolve []PinEntry `json:"resolve"`
	// UpstreamCA is network.upstream_ca.
	UpstreamCA string `json:"upstream_ca,omitempty"`
}

// EgressEffective resolves the loaded configuration's egress setting for
// its configured agent (EgressFromConfig, without --allow-host) and says
// where each rule came from.
func EgressEffective(l *config.Loaded) (EffectiveEgress, error) {
	eg, err := EgressFromConfig(l.Config, l.Config.Agent.Kind)
	if err != nil {
		return EffectiveEgress{}, l.WithSources(err)
	}
	out := EffectiveEgress{Mode: string(eg.Mode), ModeOrigin: l.Origin("network.mode"), Rules: []EgressEntry{}, Resolve: []PinEntry{}, UpstreamCA: eg.UpstreamCA}
	for _, r := range eg.Policy.Rules {
		origin := l.Origin("network.allow")
		if r.Source != EgressSourceConfig {
			origin = l.Origin("network.presets")
		}
		out.Rules = append(out.Rules, EgressEntry{Rule: r.String(), Source: r.Source, Origin: origin})
	}
	for _, h := range slices.Sorted(maps.Keys(eg.Policy.Resolve)) {
		out.Resolve = append(out.Resolve, PinEntry{Host: h, Address: eg.Policy.Resolve[h]})
	}
	return out, nil
}
