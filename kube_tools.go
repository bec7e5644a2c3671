//go:build kubernetes

package podbot

import (
	"context"
	"errors"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
	"github.com/podbot/podbot/sandbox"
)

// NewKubeToolSession is NewToolSession on the kubernetes backend: the
// container backend's tools, limits and MCP link, with the sandbox a
// hardened Pod (kube.BuildToolPod) made on the first call. The host's
// podbot-sidecar (opts.SidecarPath) is read once and streamed into each
// Pod over a pods/exec stdin, checked by size and SHA-256, into an
// emptyDir the sandbox container mounts read-only; `podbot-sidecar serve`
// then answers every call over one long-lived pods/exec stream. The
// workspace is an emptyDir in the Pod, so host mounts are refused, and
// the Pod lives until Close (tools.idle_timeout does not apply; see
// sandbox.NewRemoteContainer). With tools.network = "allowlist" each Pod
// gets an egress proxy Pod of its own, as an agent sandbox's (package
// kube, EgressName), with the policy of the [network] section
// (network.allow, network.presets); its NetworkPolicy lets the sandbox
// reach that proxy alone. The unsafe local backend needs no cluster
// and is NewToolSession's. Warm pools are not served here yet.
func NewKubeToolSession(ctx context.Context, kc *kube.Client, opts ToolSessionOptions) (ToolSession, error) {
	backend, err := ParseToolBackend(opts.Backend)
	if err != nil {
		return nil, err
	}
	if backend == ToolBackendUnsafeLocal {
		return NewToolSession(ctx, nil, opts)
	}
	if opts.Pool != nil {
		return nil, &errdefs.ConfigError{Key: "pool", Reason: errdefs.ErrUnsupported,
			Msg: "tool pools (--pool " + opts.Pool.Name + ") are not served on the kubernetes backend by this command; drop --pool"}
	}
	if kc == nil {
		return nil, &errdefs.ConfigError{Key: "sandbox.backend", Reason: errdefs.ErrMissingRequired, Msg: "the kubernetes tool backend needs a cluster client"}
	}
	path, err := sandbox.CanonicalSidecar(opts.SidecarPath)
	if err != nil {
		return nil, err
	}
	sc, err := kube.LoadSidecar(path)
	if err != nil {
		return nil, err
	}
	t := opts.Config.Tools
	common := sandbox.Options{
		ID:               opts.ID,
		Mounts:           opts.Mounts,
		AllowedHostRoots: t.AllowedHostRoots,
		ShellTimeout:     t.ShellTimeout,
		OnEvent:          opts.OnEvent,
		Redactor:         opts.Redactor,
		Logger:           opts.Logger,
	}
	copts := containerOptions(nil, opts, common)
	copts.CPUSet = sandbox.CPUSetNone
	rt := &kubeToolRuntime{kc: kc, sidecar: sc, opts: copts}
	if copts.Network == ToolsNetworkAllowlist {
		// The sandbox reaches the Pod network; its NetworkPolicy lets it
		// reach its egress proxy Pod alone, which runs from the same sidecar.
		if rt.egress, err = toolsEgress(opts.Config); err != nil {
			return nil, err
		}
		rt.opts.Network = "bridge" // the Pod network (empty means none for a tool plan)
		rt.kc = kc.WithSidecar(sc)
	}
	c, err := sandbox.NewRemoteContainer(ctx, rt, rt.opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// kubeToolRuntime makes tool-session Pods: sandbox.RemoteRuntime on a
// cluster. A sandbox's id is its Pod's name.
type kubeToolRuntime struct {
	kc      *kube.Client
	sidecar *kube.Sidecar
	opts    sandbox.ContainerOptions
	// egress is the allowlist setting with tools.network = "allowlist"
	// (each Pod gets an egress proxy Pod of its own), else zero.
	egress launchplan.Egress
}

// plan is the tool session's launch plan, as on the engine but without a
// host mount: the Pod gets its workspace and sidecar as emptyDirs.
func (r *kubeToolRuntime) plan(sessionID, name string) (launchplan.Plan, error) {
	o := r.opts
	ro := o.ReadOnlyRootfs
	if ro == nil {
		ro = ptrTo(true)
	}
	user := o.User
	if user == "" {
		user = launchplan.ToolsUser
	}
	return launchplan.Normalize(launchplan.Request{
		Intent:      launchplan.IntentTools,
		Image:       o.Image,
		Name:        name,
		SessionID:   sessionID,
		InitCommand: []string{kube.SidecarPath, "init"},
		Sandbox: launchplan.Sandbox{
			PidsLimit: o.PidsLimit, MemoryBytes: o.MemoryBytes, NanoCPUs: o.NanoCPUs,
			Network: o.Network, ReadOnlyRootfs: ro, User: user,
		},
		Labels:  o.Labels,
		Version: o.Version,
		Egress:  r.egress,
	})
}

// StartSandbox creates the Pod, installs the sidecar in it and waits until it runs.
func (r *kubeToolRuntime) StartSandbox(ctx context.Context, sessionID, name string) (string, error) {
	plan, err := r.plan(sessionID, name)
	if err != nil {
		return "", err
	}
	sb, err := r.kc.CreateToolPod(ctx, plan, r.sidecar)
	if err != nil {
		return "", err
	}
	return sb.Name, nil
}

// AttachSidecar runs argv in the Pod over one pods/exec stream.
func (r *kubeToolRuntime) AttachSidecar(ctx context.Context, id string, argv []string) (*sandbox.RemoteStream, error) {
	st, err := r.kc.ExecStream(ctx, id, argv)
	if err != nil {
		return nil, err
	}
	return &sandbox.RemoteStream{Stdout: st.Stdout, Stdin: st.Stdin, Stderr: stringer(st.Stderr), Close: st.Close}, nil
}

// SandboxRunning reports whether the Pod exists and runs.
func (r *kubeToolRuntime) SandboxRunning(ctx context.Context, id string) (bool, error) {
	sb, err := r.kc.Get(ctx, id, false)
	if errors.Is(err, errdefs.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sb.Running(), nil
}

// RemoveSandbox deletes the Pod and its NetworkPolicy, and its egress
// proxy's Pod, ConfigMap and NetworkPolicy when it has one.
func (r *kubeToolRuntime) RemoveSandbox(ctx context.Context, id string) error {
	_, err := r.kc.Remove(ctx, id, kube.RemoveOptions{Force: true})
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	return err
}

// stringer is a func as a fmt.Stringer.
type stringer func() string

func (s stringer) String() string { return s() }

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
