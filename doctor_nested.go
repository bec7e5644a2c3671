package podbot

import (
	"strconv"
	"strings"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/engine"
)

// NestedCheckName is the doctor check that says which sandbox profile
// nested containers (an inner Podman in the agent image) work with.
const NestedCheckName = "nested containers"

// NestedVerdict says whether nested containers work in each sandbox
// profile on this host, and why.
type NestedVerdict struct {
	// Privileged and Minimal say whether the inner Podman can run
	// containers in that profile on this host; the Why fields say why.
	Privileged, Minimal       bool
	PrivilegedWhy, MinimalWhy string
	// MinimalNeeds are the settings the minimal profile needs for it.
	MinimalNeeds []string
}

// NestedFacts are the host and engine facts the verdict rests on.
type NestedFacts struct {
	// EngineKind is engine.KindPodman or engine.KindDocker.
	EngineKind string
	// EngineRootless reports an engine running without root.
	EngineRootless bool
	// UserNamespaces reports user.max_user_namespaces > 0.
	UserNamespaces bool
	// PrivilegedBlocked reports a host where the engine cannot start
	// privileged containers (dockerd with CAP_SYS_RESOURCE missing from the
	// bounding set).
	PrivilegedBlocked bool
}

// Settings the minimal profile needs for nested containers.
const (
	needAgentUser = `sandbox.user = "agent"`
	needSysAdmin  = "sandbox.mount_dev_fuse = true"
)

// Nested judges where nested containers work, from what was observed on
// Podman 4.3 and dockerd 20.10 hosts with the agent image:
//
//   - privileged profile: rootful inner Podman (vfs, runc, cgroupfs) works
//     wherever the engine can start privileged containers;
//   - minimal profile: rootful inner Podman cannot (no CAP_MKNOD, read-only
//     cgroupfs, no NET_ADMIN); rootless inner Podman as the image's "agent"
//     user works with one mapped uid (podbot's no-new-privileges stops the
//     setuid newuidmap), sharing the sandbox's network, PID and UTS
//     namespaces. It needs user namespaces on the host. On dockerd it
//     does not work: its default seccomp profile allows the user namespace
//     only with CAP_SYS_ADMIN (sandbox.mount_dev_fuse keeps it) and the
//     inner image store's chroot only with CAP_SYS_CHROOT, which the
//     minimal profile always drops.
func Nested(f NestedFacts) NestedVerdict {
	var v NestedVerdict
	switch {
	case f.PrivilegedBlocked:
		v.PrivilegedWhy = "the engine cannot start privileged containers on this host (CAP_SYS_RESOURCE is missing from the capability bounding set)"
	case f.EngineRootless:
		v.Privileged = true
		v.PrivilegedWhy = "inner Podman as root of the rootless engine's user namespace, vfs storage, runc, cgroupfs"
	default:
		v.Privileged = true
		v.PrivilegedWhy = "rootful inner Podman, vfs storage, runc, cgroupfs"
	}
	if !f.UserNamespaces {
		v.MinimalWhy = "user namespaces are disabled on this host, so rootless inner Podman cannot start"
		return v
	}
	if f.EngineKind == engine.KindDocker {
		v.MinimalWhy = "dockerd's default seccomp profile lets rootless inner Podman unpack images only with CAP_SYS_CHROOT " +
			"(and create its user namespace only with CAP_SYS_ADMIN); the minimal profile drops SYS_CHROOT"
		return v
	}
	v.Minimal = true
	v.MinimalNeeds = []string{needAgentUser}
	v.MinimalWhy = "rootless inner Podman as the non-root agent user, one mapped uid; as root it fails"
	return v
}

// MinimalReady reports whether the sandbox settings give the minimal
// profile what nested containers need, and names what is missing.
func (v NestedVerdict) MinimalReady(s config.Sandbox) (bool, []string) {
	if !v.Minimal {
		return false, nil
	}
	var missing []string
	for _, n := range v.MinimalNeeds {
		switch n {
		case needAgentUser:
			if s.User != "agent" && s.User != "1000" && !strings.HasPrefix(s.User, "1000:") && !strings.HasPrefix(s.User, "agent:") {
				missing = append(missing, n)
			}
		case needSysAdmin:
			if !s.MountDevFuse {
				missing = append(missing, n)
			}
		}
	}
	return len(missing) == 0, missing
}

// Detail renders the verdict as one doctor line.
func (v NestedVerdict) Detail() string {
	priv := "does not work"
	if v.Privileged {
		priv = "works"
	}
	min := "does not work"
	if v.Minimal {
		min = "works with " + strings.Join(v.MinimalNeeds, " and ")
	}
	return "privileged profile: " + priv + " (" + v.PrivilegedWhy + "); minimal profile: " + min + " (" + v.MinimalWhy + ")"
}

// doctorNested adds the nested-containers check. It warns when the
// configured profile and settings are not ones nested containers work with.
func doctorNested(h HostProbe, info *engine.EngineInfo, cfg *config.Loaded, add func(string, CheckStatus, string, string)) {
	if info == nil {
		return
	}
	f := NestedFacts{EngineKind: info.Kind, EngineRootless: info.Rootless}
	var sb config.Sandbox
	if cfg != nil {
		sb = cfg.Config.Sandbox
	}
	if b, err := h.readFile("/proc/sys/user/max_user_namespaces"); err == nil {
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		f.UserNamespaces = n > 0
	}
	if info.Kind == engine.KindDocker {
		if has, ok := boundingCap(h, capSysResource); ok && !has {
			f.PrivilegedBlocked = true
		}
	}
	v := Nested(f)
	const image = " with image = \"localhost/podbot-agent:latest\""
	ready, missing := v.MinimalReady(sb)
	switch {
	case sb.Privileged && v.Privileged, !sb.Privileged && ready:
		add(NestedCheckName, CheckOK, v.Detail(), "")
	case !sb.Privileged && v.Minimal:
		add(NestedCheckName, CheckWarn, v.Detail(), "for nested containers set "+strings.Join(missing, " and ")+image)
	case v.Privileged:
		add(NestedCheckName, CheckWarn, v.Detail(), "for nested containers set sandbox.privileged = true"+image)
	case v.Minimal:
		add(NestedCheckName, CheckWarn, v.Detail(), "for nested containers use the minimal profile: set "+strings.Join(v.MinimalNeeds, " and ")+image)
	default:
		add(NestedCheckName, CheckWarn, v.Detail(), "nested containers are not available on this host")
	}
}
