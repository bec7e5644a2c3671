//go:build kubernetes

package podbot

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/github"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/launchplan"
)

// noTokens is a TokenSource that is never asked.
type noTokens struct{}

func (noTokens) InstallationToken(context.Context, []string) (github.Token, error) {
	return github.Token{}, errors.New("not asked")
}

func TestKubeBackendCheckRefuses(t *testing.T) {
	var b kubeBackend
	for name, tc := range map[string]struct {
		opts LaunchOptions
		key  string
	}{
		"secrets": {LaunchOptions{Config: config.Config{Secrets: []config.Secret{{Name: "api", Source: "env:API"}}}}, ""},
		"github-app secret with a token": {LaunchOptions{Repo: "acme/app", TokenSource: noTokens{},
			Config: config.Config{Secrets: []config.Secret{{Name: "api", Source: "env:API"}, {Name: "gh", Source: config.SecretSourceGitHubApp}}}}, "secrets[1].source"},
		"host path":   {LaunchOptions{HostPath: "/src"}, "workspace.host_path"},
		"host mount":  {LaunchOptions{Config: config.Config{Workspace: config.Workspace{Source: config.SourceHostMount}}}, "workspace.host_path"},
		"local clone": {LaunchOptions{LocalClone: &LocalCloneOptions{Path: "/src"}}, ""},
		"public repo": {LaunchOptions{Repo: "acme/app"}, ""},
	} {
		err := b.check(tc.opts)
		if tc.key == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		var ce *errdefs.ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key || !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "kubernetes") {
			t.Errorf("%s: %v, want an unsupported %s naming the backend", name, err, tc.key)
		}
	}
}

func TestKubeBackendAdapt(t *testing.T) {
	req := launchplan.Request{Intent: launchplan.IntentInteractive, Image: "img", SessionID: "0123456789abcdef",
		Agent: launchplan.Agent{Kind: "custom", Command: "/bin/agent"}, AgentEnv: []string{"KEY=v"},
		Egress:    launchplan.Egress{Mode: egress.ModeNone},
		Workspace: launchplan.Workspace{Strategy: launchplan.WorkspaceGitHubClone, BaseDir: "/workspace", ContainerPath: "/workspace/acme/app"}}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	var b kubeBackend
	if err := b.adapt(LaunchOptions{}, req, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Home != launchplan.AgentHome || !slices.Contains(plan.Env, "HOME="+launchplan.AgentHome) {
		t.Errorf("home %q env %v", plan.Home, plan.Env)
	}
	if !slices.Equal(b.scratch, []string{launchplan.AgentHome, "/workspace"}) {
		t.Errorf("scratch %v", b.scratch)
	}
	for _, e := range plan.Env {
		if strings.HasPrefix(e, "KEY=") {
			t.Errorf("the agent's variable is in the Pod's env: %v", plan.Env)
		}
	}
	pod, err := kube.BuildPod(plan, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range b.podOpts {
		if err := o(pod); err != nil {
			t.Fatal(err)
		}
	}
	if wd := pod.Spec.Containers[0].WorkingDir; wd != "/workspace" {
		t.Errorf("the Pod starts in %q, want the clone's parent /workspace (the clone makes its own directory)", wd)
	}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "KEY" {
			t.Errorf("the agent's variable is in the Pod spec: %+v", e)
		}
	}

	req.Egress.Mode = egress.ModeAllowlist
	if plan, err = launchplan.Normalize(req); err != nil {
		t.Fatal(err)
	}
	// An allowlist sandbox's proxy runs from podbot-sidecar: none, refused.
	if err := b.adapt(LaunchOptions{}, req, &plan); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("allowlist without a sidecar: %v, want ErrMissingRequired", err)
	}
}

// TestKubeBackendAdaptLocalClone: a local_clone workspace gets its parent
// as a writable emptyDir, where the Pod starts (the copy makes its own
// directory); a copy whose parent would be / is refused.
func TestKubeBackendAdaptLocalClone(t *testing.T) {
	req := launchplan.Request{Intent: launchplan.IntentInteractive, Image: "img", SessionID: "0123456789abcdef",
		Agent: launchplan.Agent{Kind: "custom", Command: "/bin/agent"}, Egress: launchplan.Egress{Mode: egress.ModeNone},
		Workspace: localCloneWorkspace(LocalCloneOptions{Path: "/home/me/app"}, "/work")}
	plan, err := launchplan.Normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	var b kubeBackend
	if err := b.adapt(LaunchOptions{}, req, &plan); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.scratch, []string{launchplan.AgentHome, "/work"}) || plan.WorkingDir != "/work/app" {
		t.Errorf("scratch %v, workdir %q", b.scratch, plan.WorkingDir)
	}
	pod, err := kube.BuildPod(plan, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range append([]kube.PodOption{kube.WithScratchDirs(b.scratch...)}, b.podOpts...) {
		if err := o(pod); err != nil {
			t.Fatal(err)
		}
	}
	if wd := pod.Spec.Containers[0].WorkingDir; wd != "/work" {
		t.Errorf("the Pod starts in %q, want /work", wd)
	}
	mounted := false
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounted = mounted || m.MountPath == "/work"
	}
	if !mounted {
		t.Errorf("no writable volume at /work: %+v", pod.Spec.Containers[0].VolumeMounts)
	}
	if _, err := localCloneScratch(launchplan.Plan{WorkingDir: "/app"}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("a copy at /app: %v", err)
	}
}

func TestKubeBackendExecCommand(t *testing.T) {
	b := kubeBackend{secretEnv: map[string]string{"API_KEY": "sk-secret", "OTHER": "x"}}
	cmd, err := b.execCommand([]string{"API_KEY=sk-secret", "GIT_TERMINAL_PROMPT=0", "OTHER=not-the-secret-value"}, []string{"agent", "--flag"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(cmd, "\x00")
	if strings.Contains(joined, "sk-secret") {
		t.Errorf("a Secret value travels in the exec request: %q", cmd)
	}
	i := slices.Index(cmd, "--")
	if i < 0 || !slices.Equal(cmd[5:i], []string{"API_KEY"}) || cmd[4] != kube.SecretMountPath {
		t.Fatalf("argv %q: want API_KEY read from %s", cmd, kube.SecretMountPath)
	}
	if want := []string{"env", "GIT_TERMINAL_PROMPT=0", "OTHER=not-the-secret-value", "agent", "--flag"}; !slices.Equal(cmd[i+1:], want) {
		t.Errorf("command %q, want %q", cmd[i+1:], want)
	}
	plain, err := b.execCommand(nil, []string{"agent"})
	if err != nil || !slices.Equal(plain, []string{"agent"}) {
		t.Errorf("no env: %q, %v", plain, err)
	}
}
