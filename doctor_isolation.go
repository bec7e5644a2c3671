package podbot

import (
	"strings"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

// doctorIsolation reports the isolation actually in force for agent
// sandboxes on this engine and configuration: whether container root is
// the host's root, how SELinux and seccomp apply, and which of podbot's
// guarantees this setup cannot give, each with why.
func doctorIsolation(info *engine.EngineInfo, l *config.Loaded, add func(string, CheckStatus, string, string)) {
	if info == nil {
		return
	}
	has := func(name string) (string, bool) {
		for _, o := range info.SecurityOptions {
			if o == "name="+name || strings.HasPrefix(o, "name="+name+",") {
				return o, true
			}
		}
		return "", false
	}
	_, userns := has("userns")
	switch {
	case info.Rootless:
		add("user namespace", CheckOK, "rootless engine: container root is your own user on the host", "")
	case userns:
		add("user namespace", CheckOK, "the engine remaps users (userns-remap): container root is an unprivileged host user", "")
	default:
		add("user namespace", CheckOK, "none: container root is the host's root; podbot runs host-mount agents as the mounted directory's owner "+
			"(never root, no capabilities, no-new-privileges), so what they write belongs to that user", "")
	}
	if seccomp, ok := has("seccomp"); ok {
		add("seccomp", CheckOK, "the engine's default profile ("+seccomp+")", "")
	} else {
		add("seccomp", CheckWarn, "the engine reports no seccomp support: sandboxes get no system call filter",
			"use an engine built with seccomp (Debian's podman and docker.io are)")
	}
	var cfg config.Config
	if l != nil {
		cfg = l.Config
	}
	_, selinux := has("selinux")
	switch {
	case !selinux:
		add("selinux", CheckOK, "not enforced by this engine (no SELinux labels on sandboxes)", "")
	case cfg.Sandbox.SELinuxLabelMode == config.SELinuxKeepDefault:
		add("selinux", CheckOK, "sandboxes keep the engine's container label (keep_default)", "")
	default:
		add("selinux", CheckWarn, "sandboxes run with label=disable (selinux_label_mode = disable_for_container): SELinux does not confine them",
			"set sandbox.selinux_label_mode = \"keep_default\" unless nested containers need it")
	}
	var gaps []string
	if cfg.Sandbox.Privileged {
		gaps = append(gaps, "sandbox.privileged is set: a privileged container holds the host's root, so no guarantee below holds")
	}
	switch cfg.Network.Mode {
	case config.NetworkAllowlist:
		gaps = append(gaps, "network: agent sandboxes reach only the hosts network.allow and network.presets allow, through their egress proxy; an allowed host can still carry data away")
	case config.NetworkOpen:
		gaps = append(gaps, "network: network.mode is \"open\": agent sandboxes use the engine's default network and may reach any host")
	}
	gaps = append(gaps,
		"the GitHub installation token file is readable inside a sandbox that clones with it (the askpass helper answers only the configured host, but the agent can read the file)",
		"a host mount that is not a git repository can be made one by the agent (podbot protects only an existing .git)")
	add("isolation gaps", CheckWarn, strings.Join(gaps, "; "), "see the README's threat model; use github_clone instead of host_mount where you can")
}
