package launchplan

import (
	"slices"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// DefaultKeptCapabilities returns the capabilities an agent container keeps
// after dropping all others. The list is the smallest that lets root inside
// the agent image install packages, unpack archives and manage its own
// processes:
//
//   - CHOWN: apt, npm, tar and git set file ownership when unpacking.
//   - DAC_OVERRIDE: root reads and writes files owned by other users, such as
//     a host-mounted workspace or uploaded credentials under an ID mapping.
//   - FOWNER: chmod and utime on files the process does not own (archive
//     extraction, git checkouts that restore modes).
//   - FSETID: modifying a file keeps its setgid bit (group-shared directories
//     that packages create).
//   - KILL: signal processes running under other users in the container.
//   - SETGID, SETUID: apt drops to its _apt user; su, runuser and a rootless
//     inner Podman switch users.
//   - NET_BIND_SERVICE: development servers the agent starts may bind ports
//     below 1024 inside the container's own network namespace.
//
// Deliberately dropped from the engines' defaults: MKNOD, NET_RAW, SETFCAP,
// SETPCAP, SYS_CHROOT and AUDIT_WRITE, which no agent task needs. Tool
// sessions keep none: they run as an unprivileged user.
func DefaultKeptCapabilities() []string {
	return []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}
}

// normalizeCapability upper-cases a capability name, strips an optional CAP_
// prefix and checks it names a Linux capability.
func normalizeCapability(name string) (string, error) {
	c := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "CAP_")
	if c == "ALL" {
		return "", configError("sandbox.cap_add", errdefs.ErrRefused,
			"capability ALL is refused: use sandbox.privileged = true for the privileged profile")
	}
	if !knownCapability(c) {
		return "", configError("sandbox.cap_add", errdefs.ErrInvalidValue,
			"%q is not a Linux capability name (for example SYS_PTRACE or CAP_SYS_PTRACE)", name)
	}
	return c, nil
}

// mergeCapabilities appends the normalized names in add that caps lacks.
func mergeCapabilities(caps []string, add ...string) ([]string, error) {
	for _, name := range add {
		c, err := normalizeCapability(name)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	return caps, nil
}

// knownCapability reports whether c (without CAP_) is a Linux capability.
func knownCapability(c string) bool {
	switch c {
	case "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL",
		"SETGID", "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
		"NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
		"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
		"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
		"SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
		"SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
		"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE":
		return true
	}
	return false
}
