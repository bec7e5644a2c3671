package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/errdefs"
)

const (
	testToken  = "ghs_first0123456789"
	testOrigin = "https://github.com"
)

// tokenReactor makes every created Pod Running with its token container
// in state.
func tokenReactor(cs *fake.Clientset, state corev1.ContainerState) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pod.UID, pod.Namespace = "uid-1", a.GetNamespace()
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: TokenContainerName, State: state},
		}
		if err := cs.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		return true, pod, nil
	})
}

func TestLaunchWaitsForTokenContainer(t *testing.T) {
	for name, st := range map[string]corev1.ContainerState{
		"ended":      {Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		"cannot run": {Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}},
	} {
		cs := fake.NewClientset()
		tokenReactor(cs, st)
		_, err := NewForClientset(cs, "sb", Options{}).Launch(context.Background(), testPlan(t, nil), LaunchOptions{Token: true})
		if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "token container") {
			t.Errorf("%s: err %v, want the token container named", name, err)
		}
		assertNothingLeft(t, cs)
	}
}

func TestLaunchTokenContainer(t *testing.T) {
	cs := fake.NewClientset()
	tokenReactor(cs, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	c := NewForClientset(cs, "sb", Options{})
	ctx := context.Background()
	sb, err := c.Launch(ctx, testPlan(t, nil), LaunchOptions{Token: true})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("sb").Get(ctx, sb.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, cs)
	var vol *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == tokenVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory || vol.EmptyDir.SizeLimit == nil {
		t.Fatalf("token volume %+v: want a bounded memory-backed emptyDir", vol)
	}
	if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[0].Name != ContainerName || pod.Spec.Containers[1].Name != TokenContainerName {
		t.Fatalf("containers %d: want the sandbox, then the token container", len(pod.Spec.Containers))
	}
	mountOf := func(ct corev1.Container) *corev1.VolumeMount {
		for i, m := range ct.VolumeMounts {
			if m.Name == tokenVolume {
				return &ct.VolumeMounts[i]
			}
		}
		return nil
	}
	sandbox, writer := pod.Spec.Containers[0], pod.Spec.Containers[1]
	if m := mountOf(sandbox); m == nil || !m.ReadOnly || m.MountPath != TokenMountPath {
		t.Errorf("sandbox token mount %+v: want read-only at %s", m, TokenMountPath)
	}
	if m := mountOf(writer); m == nil || m.ReadOnly || m.MountPath != TokenMountPath || len(writer.VolumeMounts) != 1 {
		t.Errorf("token container mounts %+v: want the token volume alone, writable", writer.VolumeMounts)
	}
	wsc, ssc := writer.SecurityContext, sandbox.SecurityContext
	if wsc == nil || wsc.ReadOnlyRootFilesystem == nil || !*wsc.ReadOnlyRootFilesystem || wsc.AllowPrivilegeEscalation == nil || *wsc.AllowPrivilegeEscalation ||
		wsc.Capabilities == nil || len(wsc.Capabilities.Add) != 0 || !equalDrop(wsc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		wsc.RunAsNonRoot == nil || !*wsc.RunAsNonRoot || wsc.SeccompProfile == nil || ssc == nil {
		t.Errorf("token container security context %+v: want the sandbox's hardening and a read-only root", wsc)
	}
	if writer.Image != sandbox.Image || writer.Resources.Limits.Memory().IsZero() || writer.Resources.Limits.Cpu().IsZero() {
		t.Errorf("token container image %q resources %+v", writer.Image, writer.Resources)
	}
	if len(writer.Env) != 0 || len(writer.EnvFrom) != 0 {
		t.Errorf("token container env %+v", writer.Env)
	}
}

func equalDrop(a, b []corev1.Capability) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWriteTokenRefusesBadInput(t *testing.T) {
	c := NewForClientset(fake.NewClientset(), "sb", Options{})
	for name, in := range map[string][2]string{
		"empty token":   {"", testOrigin},
		"newline token": {"a\nb", testOrigin},
		"space token":   {"a b", testOrigin},
		"long token":    {strings.Repeat("x", maxTokenLen+1), testOrigin},
		"no origin":     {testToken, ""},
		"path origin":   {testToken, "https://github.com/x"},
		"newline":       {testToken, testOrigin + "\nhttps://evil.example"},
	} {
		err := c.WriteToken(context.Background(), "p", in[0], in[1])
		if err == nil || errors.Is(err, errdefs.ErrUnsupported) {
			t.Errorf("%s: err %v, want a refusal before any exec", name, err)
		}
	}
}

// TestTokenScripts runs the write and withdraw scripts with the token
// directory moved to a temporary one: the files are replaced whole, a
// token is written verbatim (never evaluated), and withdraw removes it.
func TestTokenScripts(t *testing.T) {
	dir := t.TempDir()
	run := func(script, stdin string) {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", strings.ReplaceAll(script, TokenMountPath, dir))
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("script: %v: %s", err, out)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	hostile := "ghs_$(touch${IFS}pwned)`touch${IFS}pwned2`\\n%s"
	run(writeTokenScript, hostile+"\n"+testOrigin+"\n")
	if read(TokenFileName) != hostile || read(OriginFileName) != testOrigin+"\n" {
		t.Fatalf("token %q origin %q", read(TokenFileName), read(OriginFileName))
	}
	if st, err := os.Stat(filepath.Join(dir, TokenFileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, %v; want 0600", st.Mode(), err)
	}
	run(writeTokenScript, testToken+"\n"+testOrigin+"\n")
	if read(TokenFileName) != testToken {
		t.Fatalf("after a second write: %q", read(TokenFileName))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left: %v (no temporaries, nothing the token made run)", entries)
	}
	run(withdrawTokenScript, "")
	if _, err := os.Stat(filepath.Join(dir, TokenFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the token is still there after withdraw: %v", err)
	}
	if read(OriginFileName) != testOrigin+"\n" {
		t.Error("withdraw removed the origin")
	}
}

// TestTokenScriptConcurrentWriters runs many writes at once into one
// directory, as podbot create and a token daemon can: every write
// succeeds (none renames another's temporaries away), the token left is
// one of theirs, and no temporary stays.
func TestTokenScriptConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	script := strings.ReplaceAll(writeTokenScript, TokenMountPath, dir)
	const writers = 16
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("/bin/sh", "-c", script)
			cmd.Stdin = strings.NewReader(fmt.Sprintf("%s%02d\n%s\n", testToken, i, testOrigin))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("writer %d: %v: %s", i, err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, TokenFileName))
	if err != nil || !strings.HasPrefix(string(b), testToken) || len(b) != len(testToken)+2 {
		t.Fatalf("token after concurrent writes: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("files left: %v, want only the token and the origin", entries)
	}
}
