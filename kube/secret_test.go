package kube

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

const agentSecret = "sk-test-0123456789"

func secretPlan(t *testing.T) launchplan.Plan {
	return testPlan(t, func(r *launchplan.Request) {
		r.AgentEnv = []string{"ANTHROPIC_API_KEY=" + agentSecret, "EMPTY="}
	})
}

func TestBuildSecret(t *testing.T) {
	plan := secretPlan(t)
	pod, err := BuildPod(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := BuildSecret(pod, SecretData{Credentials: []byte("tar bytes"), Env: plan.AgentEnv})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != pod.Name || s.Type != corev1.SecretTypeOpaque || s.Immutable == nil || !*s.Immutable {
		t.Errorf("secret %s type %s immutable %v", s.Name, s.Type, s.Immutable)
	}
	if s.Labels[launchplan.LabelManaged] != "true" || s.Labels[launchplan.LabelSession] != pod.Labels[launchplan.LabelSession] {
		t.Errorf("labels %v", s.Labels)
	}
	want := map[string]string{SecretCredentialsKey: "tar bytes", "env.ANTHROPIC_API_KEY": agentSecret, "env.EMPTY": ""}
	if len(s.Data) != len(want) {
		t.Errorf("keys %v", s.Data)
	}
	for k, v := range want {
		if got, ok := s.Data[k]; !ok || string(got) != v {
			t.Errorf("key %s = %q, want %q", k, got, v)
		}
	}
	if len(s.StringData) != 0 {
		t.Error("stringData set")
	}
}

func TestBuildSecretRefuses(t *testing.T) {
	pod, err := BuildPod(testPlan(t, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]SecretData{
		"bad name":  {Env: []string{"A-B=x"}},
		"no value":  {Env: []string{"NAME"}},
		"too large": {Credentials: make([]byte, MaxSecretBytes+1)},
	} {
		if _, err := BuildSecret(pod, d); !errors.Is(err, errdefs.ErrInvalidValue) {
			t.Errorf("%s: err %v, want ErrInvalidValue", name, err)
		}
	}
}

func TestLaunchSecretMountedNotInEnv(t *testing.T) {
	cs := fake.NewClientset()
	runningReactor(cs, corev1.PodRunning, "")
	c := NewForClientset(cs, "sb", Options{})
	plan := secretPlan(t)
	ctx := context.Background()
	sb, err := c.Launch(ctx, plan, LaunchOptions{Secret: SecretData{Credentials: []byte("tar"), Env: plan.AgentEnv},
		ScratchDirs: []string{launchplan.AgentHome, "/workspace", launchplan.AgentHome}})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct := pod.Spec.Containers[0]
	for _, e := range ct.Env {
		if e.ValueFrom != nil || strings.Contains(e.Value, agentSecret) || e.Name == "ANTHROPIC_API_KEY" {
			t.Errorf("agent variable in the Pod spec: %+v", e)
		}
	}
	if len(ct.EnvFrom) != 0 {
		t.Errorf("envFrom %+v", ct.EnvFrom)
	}
	var vol *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			vol = &pod.Spec.Volumes[i]
		}
		if v.HostPath != nil {
			t.Errorf("hostPath volume %s", v.Name)
		}
	}
	if vol == nil || vol.Secret.SecretName != sb.Name || vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode != 0o440 {
		t.Fatalf("secret volume %+v", vol)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range ct.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts[SecretMountPath]; !ok || !m.ReadOnly || m.Name != vol.Name {
		t.Errorf("secret mount %+v", m)
	}
	for _, d := range []string{launchplan.AgentHome, "/workspace"} {
		if m, ok := mounts[d]; !ok || m.ReadOnly {
			t.Errorf("scratch dir %s: %+v", d, m)
		}
	}
	if len(ct.VolumeMounts) != len(mounts) {
		t.Errorf("a path is mounted twice: %+v", ct.VolumeMounts)
	}
	psc := pod.Spec.SecurityContext
	if psc.FSGroup == nil || psc.RunAsGroup == nil || *psc.FSGroup != *psc.RunAsGroup {
		t.Errorf("fsGroup %v, want the Pod's group", psc.FSGroup)
	}
	secret, err := cs.CoreV1().Secrets("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].Kind != "Pod" || secret.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("secret owners %+v: want the Pod", secret.OwnerReferences)
	}
	if err := c.Delete(ctx, sb.Name); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, cs)
	assertNoSecret(t, cs)
}

func TestLaunchWithoutSecret(t *testing.T) {
	cs := fake.NewClientset()
	runningReactor(cs, corev1.PodRunning, "")
	sb, err := NewForClientset(cs, "sb", Options{}).Launch(context.Background(), testPlan(t, nil), LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, cs)
	pod, _ := cs.CoreV1().Pods("sb").Get(context.Background(), sb.Name, metav1.GetOptions{})
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("secret volume without a secret: %+v", v)
		}
	}
}

func TestLaunchFailuresLeaveNoSecret(t *testing.T) {
	t.Run("image cannot be pulled", func(t *testing.T) {
		cs := fake.NewClientset()
		runningReactor(cs, corev1.PodPending, "ErrImageNeverPull")
		plan := secretPlan(t)
		_, err := NewForClientset(cs, "sb", Options{}).Launch(context.Background(), plan, LaunchOptions{Secret: SecretData{Env: plan.AgentEnv}})
		if !errors.Is(err, errdefs.ErrUnavailable) {
			t.Fatalf("err %v", err)
		}
		assertNothingLeft(t, cs)
		assertNoSecret(t, cs)
	})
	t.Run("pod forbidden", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("denied"))
		})
		plan := secretPlan(t)
		_, err := NewForClientset(cs, "sb", Options{}).Launch(context.Background(), plan, LaunchOptions{Secret: SecretData{Env: plan.AgentEnv}})
		if !errors.Is(err, errdefs.ErrPermissionDenied) {
			t.Fatalf("err %v", err)
		}
		assertNothingLeft(t, cs)
		assertNoSecret(t, cs)
	})
	t.Run("secret name taken", func(t *testing.T) {
		plan := secretPlan(t)
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: plan.Name, Namespace: "sb"}}
		cs := fake.NewClientset(other)
		_, err := NewForClientset(cs, "sb", Options{}).Launch(context.Background(), plan, LaunchOptions{Secret: SecretData{Env: plan.AgentEnv}})
		if !errors.Is(err, errdefs.ErrAlreadyExists) {
			t.Fatalf("err %v", err)
		}
		if _, err := cs.CoreV1().Secrets("sb").Get(context.Background(), plan.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the other Secret was deleted: %v", err)
		}
		assertNothingLeft(t, cs)
	})
}

func assertNoSecret(t *testing.T, cs *fake.Clientset) {
	t.Helper()
	secrets, _ := cs.CoreV1().Secrets("sb").List(context.Background(), metav1.ListOptions{})
	if len(secrets.Items) != 0 {
		t.Errorf("left behind: %d secrets", len(secrets.Items))
	}
}

// TestSecretEnvCommand runs the wrapper with the host's /bin/sh over a
// directory laid out as the Secret's mount: values come from the files
// (trailing newlines and shell metacharacters intact), names only in argv.
func TestSecretEnvCommand(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	vals := map[string]string{"A": "one two $HOME `x` \"q\"\n\n", "B": "", "C": "unused"}
	for k, v := range vals {
		if err := os.WriteFile(dir+"/env."+k, []byte(v), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	cmd, err := SecretEnvCommand([]string{"A", "B"}, []string{"sh", "-c", `printf '%s|%s|%s' "$A" "$B" "${C-unset}"`})
	if err != nil {
		t.Fatal(err)
	}
	if cmd[4] != SecretMountPath {
		t.Fatalf("argv %q", cmd)
	}
	for _, a := range cmd {
		if strings.Contains(a, "one two") {
			t.Errorf("a value travels in argv: %q", cmd)
		}
	}
	cmd[4] = dir
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if want := vals["A"] + "||unset"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if _, err := SecretEnvCommand([]string{"BAD NAME"}, []string{"true"}); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("bad name: %v", err)
	}
	if got, _ := SecretEnvCommand(nil, []string{"true"}); len(got) != 1 {
		t.Errorf("no names: %q", got)
	}
	// A variable missing from the Secret fails the exec rather than run
	// the agent without it.
	cmd, _ = SecretEnvCommand([]string{"MISSING"}, []string{"true"})
	cmd[4] = dir
	if err := exec.Command(cmd[0], cmd[1:]...).Run(); err == nil {
		t.Error("a missing variable ran the command")
	}
}

func TestRemoveDeletesOwnSecretOnly(t *testing.T) {
	ctx := context.Background()
	for _, foreign := range []bool{false, true} {
		cs := fake.NewClientset()
		runningReactor(cs, corev1.PodRunning, "")
		c := NewForClientset(cs, "sb", Options{})
		plan := secretPlan(t)
		var sb Sandbox
		var err error
		if foreign {
			// A Secret of the Pod's name that podbot did not make.
			other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: plan.Name, Namespace: "sb", Labels: map[string]string{launchplan.LabelManaged: "true", launchplan.LabelSession: "other"}}}
			if _, err := cs.CoreV1().Secrets("sb").Create(ctx, other, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			sb, err = c.Launch(ctx, plan, LaunchOptions{})
		} else {
			sb, err = c.Launch(ctx, plan, LaunchOptions{Secret: SecretData{Env: plan.AgentEnv}})
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Remove(ctx, sb.Name, RemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		assertNothingLeft(t, cs)
		secrets, _ := cs.CoreV1().Secrets("sb").List(ctx, metav1.ListOptions{})
		if foreign && len(secrets.Items) != 1 {
			t.Errorf("the foreign Secret was deleted")
		}
		if !foreign && len(secrets.Items) != 0 {
			t.Errorf("the sandbox's Secret was left behind")
		}
	}
}
