//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/creds"
	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// RunOnKubernetes is Run on the kubernetes backend: the same launch
// sequence and the same attached agent, with the sandbox a hardened Pod
// (see package kube and CreateOnKubernetes). What differs:
//   - the credential files and git identity go into a Secret of the
//     sandbox's own (type Opaque, owned by the Pod), mounted read-only at
//     kube.SecretMountPath and extracted into the agent's home
//     (launchplan.AgentHome, an emptyDir) by an exec once the Pod runs;
//   - the allowlisted variables go into the same Secret and reach the
//     agent's exec only, read from the mount by a wrapper: they are not in
//     the Pod spec and not in the exec request;
//   - a GitHub repository is cloned by exec into an emptyDir at
//     workspace.base_dir; a local repository (--repo PATH) is bundled on
//     the host as on the engine and its bundle streamed into that emptyDir
//     over a pods/exec stdin (see kube_localclone.go); with a GitHub App, podbot-sidecar is streamed
//     into the Pod and is git's askpass program there, and the
//     installation token (limited to the repository) and its origin are
//     written by exec into a memory volume the agent sees read-only at
//     /run/secrets, and rewritten by the run's token refresh (see
//     kube_token.go);
//   - after the agent exits, a Pod that is not removed (no Remove) keeps
//     running, without its token: a Pod cannot be stopped and started
//     again.
//
// An interrupted or failed run deletes the Pod, its NetworkPolicy and its
// Secret. What the backend cannot do is refused before anything is made
// (see CreateOnKubernetes).
func RunOnKubernetes(ctx context.Context, kc *kube.Client, opts RunOptions) (RunResult, error) {
	be := newKubeBackend(kc, opts.Launch.SidecarPath)
	opts.Launch.SidecarPath = ""
	return run(ctx, be, nil, opts)
}

// HostOnKubernetes is Host on the kubernetes backend: the agent's server
// runs in a Pod (launched as RunOnKubernetes describes) and its exec
// stream is bridged through the same ACP or Codex app-server policy.
// The Pod, its NetworkPolicy and its Secret are deleted when it returns.
func HostOnKubernetes(ctx context.Context, kc *kube.Client, opts HostOptions) (int, error) {
	be := newKubeBackend(kc, opts.Launch.SidecarPath)
	opts.Launch.SidecarPath = ""
	return host(ctx, be, nil, opts)
}

// kubeBackend is the launch backend of a Pod on a cluster.
type kubeBackend struct {
	kc *kube.Client
	// user is the plan's user: pods/exec runs as the Pod's user only.
	user string
	// scratch are the directories the Pod gets as emptyDirs.
	scratch []string
	// podOpts change the Pod further.
	podOpts []kube.PodOption
	// secretEnv are the agent's variables in the Pod's Secret.
	secretEnv map[string]string
	// sidecarPath is the host's podbot-sidecar (LaunchOptions.SidecarPath,
	// which the Pod cannot mount): an allowlist sandbox's egress proxy runs
	// from it (kube_egress.go); sidecar is it loaded, for a Pod that gets a
	// GitHub token (see kube_token.go), and token that token's store.
	sidecarPath string
	sidecar     *kube.Sidecar
	token       *kubeTokenStore
	// vault is the credential vault for the egress proxy (carryVault).
	vault *kube.EgressVault
}

func newKubeBackend(kc *kube.Client, sidecarPath string) *kubeBackend {
	return &kubeBackend{kc: kc, sidecarPath: sidecarPath}
}

// check refuses what needs the engine or the host: a host mount, a
// github-app secret that would hold this launch's installation token (the
// token's refresh writes into the Pod, not the proxy's vault, on this
// backend); a GitHub token needs the host's podbot-sidecar, which it
// loads. A local clone goes in over pods/exec (kube_localclone.go).
func (b *kubeBackend) check(opts LaunchOptions) error {
	cfg := opts.Config
	switch {
	case opts.HostPath != "" || cfg.Workspace.Source == config.SourceHostMount:
		return &errdefs.ConfigError{Key: "workspace.host_path", Reason: errdefs.ErrUnsupported,
			Msg: "a host-mount workspace (--workspace PATH) needs a host path, which a Pod never gets on the kubernetes backend; use --repo OWNER/NAME (cloned in the Pod) or --backend engine"}
	case opts.Repo != "" && opts.TokenSource != nil:
		if i, err := githubSecret(cfg.Secrets); err != nil {
			return err
		} else if i >= 0 {
			return &errdefs.ConfigError{Key: fmt.Sprintf("%s[%d].source", config.SecretsKey, i), Reason: errdefs.ErrUnsupported,
				Msg: fmt.Sprintf("secret %q: source = \"github-app\" is not supported on the kubernetes backend (the installation token's refresh writes into the Pod, not into the egress proxy's vault); drop the secret to give the Pod the token as a read-only file, or use --backend engine", cfg.Secrets[i].Name)}
		}
		return b.loadSidecar()
	}
	return nil
}

// adapt refuses a plan a Pod cannot carry (the allowlist proxy, the
// privileged profile, ...) and gives the agent a writable home and, for
// a clone, a writable workspace.
func (b *kubeBackend) adapt(opts LaunchOptions, req launchplan.Request, plan *launchplan.Plan) error {
	if err := kube.Supported(*plan); err != nil {
		return err
	}
	if err := b.withEgress(*plan); err != nil {
		return err
	}
	if plan.Home == "" {
		if err := plan.Apply(launchplan.WithAgentHome(launchplan.AgentHome)); err != nil {
			return err
		}
	}
	b.user = plan.User
	b.scratch = []string{plan.Home}
	if req.Workspace.Strategy == launchplan.WorkspaceGitHubClone {
		base := req.Workspace.BaseDir
		if base == "" {
			base = plan.WorkingDir
		}
		b.scratch = append(b.scratch, base)
		// The clone makes the workspace; the container starts in its parent.
		b.podOpts = append(b.podOpts, kube.WithWorkingDir(base))
	}
	if req.Workspace.Strategy == launchplan.WorkspaceLocalClone {
		base, err := localCloneScratch(*plan)
		if err != nil {
			return err
		}
		b.scratch = append(b.scratch, base)
		b.podOpts = append(b.podOpts, kube.WithWorkingDir(base))
	}
	return nil
}

// ensureImage does nothing: the node's kubelet pulls the image as
// kubernetes.image_pull_policy says, and Launch reports an image it cannot pull.
func (b *kubeBackend) ensureImage(context.Context, string) error { return nil }

// start creates the Secret (credential archive and agent variables), the
// NetworkPolicy and the Pod, and waits for the Pod to run.
func (b *kubeBackend) start(ctx context.Context, plan launchplan.Plan, arch *creds.Archive) (string, error) {
	data := kube.SecretData{Env: plan.AgentEnv}
	if arch != nil {
		data.Credentials = arch.Tar
	}
	lo := kube.LaunchOptions{Secret: data, ScratchDirs: b.scratch, PodOptions: b.podOpts, Vault: b.vault}
	if b.token != nil {
		lo.Sidecar, lo.Token = b.sidecar, true
	}
	sb, err := b.kc.Launch(ctx, plan, lo)
	if err != nil {
		return "", err
	}
	if b.token != nil {
		if err := b.token.attach(ctx); err != nil {
			return "", errors.Join(err, b.kc.Delete(ctx, sb.Name))
		}
	}
	b.secretEnv = make(map[string]string, len(plan.AgentEnv))
	for _, e := range plan.AgentEnv {
		k, v, _ := strings.Cut(e, "=")
		b.secretEnv[k] = v
	}
	return sb.Name, nil
}

// installCredentials extracts the archive from the read-only Secret mount
// into the agent's home, by an exec as the agent's user.
func (b *kubeBackend) installCredentials(ctx context.Context, sb *Sandbox, arch *creds.Archive) error {
	if arch == nil {
		return nil
	}
	return sb.run(ctx, []string{"tar", "-x", "--no-same-owner", "-f", kube.CredentialsArchivePath(), "-C", arch.TargetHome}, nil, "", nil)
}

// stop leaves the Pod running (a Pod cannot be stopped and started
// again, so a kept sandbox runs until podbot rm), but takes its GitHub
// token away: nothing refreshes it once podbot run returns.
func (b *kubeBackend) stop(ctx context.Context, _ string, _ time.Duration) error {
	if b.token == nil {
		return nil
	}
	return b.token.withdraw(ctx)
}

// remove deletes the Pod, its NetworkPolicy and its Secret.
func (b *kubeBackend) remove(ctx context.Context, name string) error { return b.kc.Delete(ctx, name) }

// Exec runs a command in the Pod through pods/exec. The variables of
// opts.Env that are the agent's (in the Pod's Secret) are read from the
// Secret's mount inside the container; any other entry (podbot's own
// constants, such as the clone's GIT_TERMINAL_PROMPT=0) is passed by env(1)
// in the command. A user other than the Pod's is refused: pods/exec has
// no user field.
func (b *kubeBackend) Exec(ctx context.Context, name string, opts engine.ExecOptions) (int, error) {
	if opts.User != "" && opts.User != b.user {
		return 0, &errdefs.ContainerError{Op: "kubernetes exec", Container: name, Reason: errdefs.ErrUnsupported,
			Msg: fmt.Sprintf("user %q: pods/exec runs as the Pod's user (%q) only", opts.User, b.user)}
	}
	cmd, err := b.execCommand(opts.Env, opts.Cmd)
	if err != nil {
		return 0, err
	}
	ko := kube.ExecOptions{Cmd: cmd, WorkingDir: opts.WorkDir, TTY: opts.TTY}
	if !opts.Detach {
		ko.Stdin, ko.Stdout, ko.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	}
	if opts.TTY {
		ko.InitialSize = kube.TermSize{Rows: uint16(opts.InitialSize.Height), Cols: uint16(opts.InitialSize.Width)}
		if opts.Resize != nil {
			sizes := make(chan kube.TermSize)
			done := make(chan struct{})
			defer close(done)
			go func() {
				defer close(sizes)
				for {
					select {
					case s, ok := <-opts.Resize:
						if !ok {
							return
						}
						select {
						case sizes <- kube.TermSize{Rows: uint16(s.Height), Cols: uint16(s.Width)}:
						case <-done:
							return
						}
					case <-done:
						return
					}
				}
			}()
			ko.Resize = sizes
		}
	}
	return b.kc.Exec(ctx, name, ko)
}

// execCommand is cmd run with env: the agent's variables (those in the
// Pod's Secret, with the same value) read from the Secret's mount, the
// others set by env(1) in the command.
func (b *kubeBackend) execCommand(env, cmd []string) ([]string, error) {
	var names, public []string
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		if sv, ok := b.secretEnv[k]; ok && sv == v {
			names = append(names, k)
			continue
		}
		public = append(public, e)
	}
	if len(public) > 0 {
		cmd = append(append([]string{"env"}, public...), cmd...)
	}
	return kube.SecretEnvCommand(names, cmd)
}
