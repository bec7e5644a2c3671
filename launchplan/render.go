package launchplan

import (
	"maps"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/strslice"
)

// Security options as both Docker and Podman's compatibility API accept them.
const (
	securityOptNoNewPrivileges = "no-new-privileges"
	securityOptLabelDisable    = "label=disable"
	cdiDriver                  = "cdi"
)

// Render returns the Engine API bodies for creating the plan's container. The
// container runs InitCommand; the agent is started later as an exec (see
// AgentExec). Only Env reaches the container's configuration: AgentEnv,
// which holds secrets, never does. Nothing in the result aliases the plan.
func (p Plan) Render() (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	cfg := &container.Config{
		Image:  p.Image,
		Cmd:    strslice.StrSlice(slices.Clone(p.InitCommand)),
		Env:    slices.Clone(p.Env),
		User:   p.User,
		Labels: maps.Clone(p.Labels),
	}
	// A clone directory does not exist until the clone runs inside the
	// container, so only a mounted workspace is the container's working dir.
	if p.Workspace == WorkspaceHostMount {
		cfg.WorkingDir = p.WorkingDir
	}

	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(p.Network),
		Privileged:     p.Security.Privileged,
		ReadonlyRootfs: p.Security.ReadOnlyRootfs,
		Tmpfs:          maps.Clone(p.Tmpfs),
	}
	if p.Security.NoNewPrivileges {
		hc.SecurityOpt = append(hc.SecurityOpt, securityOptNoNewPrivileges)
	}
	if !p.Security.Privileged {
		if p.Security.CapDropAll {
			hc.CapDrop = strslice.StrSlice{"ALL"}
		}
		if len(p.Security.CapAdd) > 0 {
			hc.CapAdd = strslice.StrSlice(slices.Clone(p.Security.CapAdd))
		}
		if p.Security.LabelDisable {
			hc.SecurityOpt = append(hc.SecurityOpt, securityOptLabelDisable)
		}
		for _, d := range p.Security.Devices {
			hc.Devices = append(hc.Devices, container.DeviceMapping{
				PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: d.Permissions,
			})
		}
	}
	if len(p.Security.GPUs) > 0 {
		hc.DeviceRequests = []container.DeviceRequest{{Driver: cdiDriver, DeviceIDs: slices.Clone(p.Security.GPUs)}}
	}
	if p.Resources.PidsLimit > 0 {
		n := p.Resources.PidsLimit
		hc.PidsLimit = &n
	}
	hc.Memory = p.Resources.MemoryBytes
	hc.NanoCPUs = p.Resources.NanoCPUs
	hc.CpusetCpus = p.Resources.CPUSet
	for _, m := range p.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type:        mount.TypeBind,
			Source:      m.Source,
			Target:      m.Target,
			ReadOnly:    m.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	return cfg, hc, &network.NetworkingConfig{}
}

// AgentExec returns the exec options that start the agent in a running
// container built from the plan, following its stream policy. The TTY flag
// is the plan's wish; an interactive caller clears it when the local stdin or
// stdout is not a terminal. The exec carries AgentEnv, which the engine keeps
// out of the container's configuration. It returns false when the plan has no
// agent.
func (p Plan) AgentExec() (container.ExecOptions, bool) {
	if len(p.AgentCommand) == 0 {
		return container.ExecOptions{}, false
	}
	return container.ExecOptions{
		User:         p.User,
		Tty:          p.Stream.TTY,
		AttachStdin:  p.Stream.Stdin,
		AttachStdout: true,
		AttachStderr: true,
		WorkingDir:   p.WorkingDir,
		Cmd:          slices.Clone(p.AgentCommand),
		Env:          slices.Clone(p.AgentEnv),
	}, true
}

// AgentEnvNames returns the names of the AgentEnv entries, in order, for
// showing what the agent gets without showing the values.
func (p Plan) AgentEnvNames() []string {
	names := make([]string, 0, len(p.AgentEnv))
	for _, e := range p.AgentEnv {
		k, _, _ := strings.Cut(e, "=")
		names = append(names, k)
	}
	return names
}
