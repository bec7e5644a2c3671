package engine

import (
	"context"
	"strings"
)

// Engine kinds reported in EngineInfo.Kind.
const (
	KindPodman = "podman"
	KindDocker = "docker"
)

// maxInfoText bounds each engine-supplied string in EngineInfo.
const maxInfoText = 256

// EngineInfo describes the engine behind a connection. Every string comes
// from the engine and is bounded and stripped of control characters.
type EngineInfo struct {
	// Kind is KindPodman or KindDocker.
	Kind string
	// Version is the engine's version (Podman's own version for Podman).
	Version string
	// APIVersion is the API version negotiated with the engine.
	APIVersion string
	// ServerAPIVersion and MinAPIVersion are the range the engine serves.
	ServerAPIVersion, MinAPIVersion string
	// OS, Arch and KernelVersion describe the engine's host.
	OS, Arch, KernelVersion string
	// Name is the engine host's name.
	Name string
	// OCIRuntime is the engine's default OCI runtime (runc, crun, ...).
	OCIRuntime string
	// CgroupVersion ("1" or "2") and CgroupDriver (cgroupfs, systemd).
	CgroupVersion, CgroupDriver string
	// Rootless reports an engine running without root.
	Rootless bool
	// SecurityOptions lists the engine's security features (name=seccomp,...).
	SecurityOptions []string
}

// Info asks the engine what it is: kind, versions, runtime, cgroups,
// rootless mode and security options.
func (c *Conn) Info(ctx context.Context) (EngineInfo, error) {
	v, err := c.api.ServerVersion(ctx)
	if err != nil {
		return EngineInfo{}, c.classify("engine version", "", err)
	}
	info, err := c.api.Info(ctx)
	if err != nil {
		return EngineInfo{}, c.classify("engine info", "", err)
	}
	out := EngineInfo{
		Kind:             KindDocker,
		Version:          v.Version,
		APIVersion:       c.api.ClientVersion(),
		ServerAPIVersion: v.APIVersion,
		MinAPIVersion:    v.MinAPIVersion,
		OS:               v.Os,
		Arch:             v.Arch,
		KernelVersion:    v.KernelVersion,
		Name:             info.Name,
		OCIRuntime:       info.DefaultRuntime,
		CgroupVersion:    info.CgroupVersion,
		CgroupDriver:     info.CgroupDriver,
	}
	for _, comp := range v.Components {
		if strings.EqualFold(strings.TrimSpace(comp.Name), "Podman Engine") {
			out.Kind = KindPodman
			if comp.Version != "" {
				out.Version = comp.Version
			}
			break
		}
	}
	for _, so := range info.SecurityOptions {
		if len(out.SecurityOptions) == 32 {
			break
		}
		so = truncate(so, maxInfoText)
		out.SecurityOptions = append(out.SecurityOptions, so)
		for _, part := range strings.Split(so, ",") {
			if part == "name=rootless" {
				out.Rootless = true
			}
		}
	}
	for _, s := range []*string{&out.Version, &out.APIVersion, &out.ServerAPIVersion, &out.MinAPIVersion,
		&out.OS, &out.Arch, &out.KernelVersion, &out.Name, &out.OCIRuntime, &out.CgroupVersion, &out.CgroupDriver} {
		*s = truncate(*s, maxInfoText)
	}
	return out, nil
}
