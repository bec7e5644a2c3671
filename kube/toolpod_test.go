package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// toolPlan is the plan of a tool session's Pod, as podbot builds it.
func toolPlan(t *testing.T) launchplan.Plan {
	t.Helper()
	return testPlan(t, func(r *launchplan.Request) {
		r.Intent = launchplan.IntentTools
		r.Name = "podbot-tools-0123456789ab-1"
		r.InitCommand = []string{SidecarPath, "init"}
		r.Sandbox = launchplan.Sandbox{}
		r.Egress = launchplan.Egress{}
	})
}

func TestBuildToolPod(t *testing.T) {
	plan := toolPlan(t)
	pod, err := BuildToolPod(plan, Options{ImagePullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	base, err := BuildPod(plan, Options{ImagePullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("%d containers, %d init containers; want 1 and 1", len(pod.Spec.Containers), len(pod.Spec.InitContainers))
	}
	sb, in := pod.Spec.Containers[0], pod.Spec.InitContainers[0]
	// The sandbox container keeps BuildPod's hardening unchanged.
	if sb.SecurityContext.String() != base.Spec.Containers[0].SecurityContext.String() ||
		pod.Spec.SecurityContext.String() != base.Spec.SecurityContext.String() {
		t.Errorf("hardening changed:\n%v\n%v", sb.SecurityContext, base.Spec.Containers[0].SecurityContext)
	}
	if *pod.Spec.SecurityContext.RunAsUser != DefaultUID || !*sb.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("tool Pod runs as %d, read-only %v", *pod.Spec.SecurityContext.RunAsUser, *sb.SecurityContext.ReadOnlyRootFilesystem)
	}
	if strings.Join(sb.Command, " ") != SidecarPath+" init" || sb.WorkingDir != WorkspaceDir {
		t.Errorf("sandbox command %q in %q", sb.Command, sb.WorkingDir)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range sb.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts[SidecarDir]; !ok || !m.ReadOnly {
		t.Errorf("sidecar directory mount %+v: want read-only", m)
	}
	if m, ok := mounts[WorkspaceDir]; !ok || m.ReadOnly {
		t.Errorf("workspace mount %+v: want writable", m)
	}
	if _, ok := mounts["/tmp"]; !ok {
		t.Errorf("no /tmp beside the read-only root: %+v", sb.VolumeMounts)
	}
	// The install container: same image, user and hardening, only the sidecar volume.
	if in.Name != InstallContainerName || in.Image != sb.Image || in.ImagePullPolicy != corev1.PullNever ||
		in.SecurityContext.String() != sb.SecurityContext.String() {
		t.Errorf("install container %+v", in)
	}
	if len(in.VolumeMounts) != 1 || in.VolumeMounts[0].MountPath != SidecarDir || in.VolumeMounts[0].ReadOnly {
		t.Errorf("install container mounts %+v", in.VolumeMounts)
	}
	if in.Resources.Limits.Memory().String() != sb.Resources.Limits.Memory().String() {
		t.Errorf("install container limits %v, sandbox %v", in.Resources.Limits, sb.Resources.Limits)
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil || v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir", v.Name)
		}
		if v.Name == sidecarVolume && v.EmptyDir.SizeLimit.Value() != MaxSidecarBytes {
			t.Errorf("sidecar volume size %v", v.EmptyDir.SizeLimit)
		}
	}
}

func TestBuildToolPodRefusesHostMounts(t *testing.T) {
	plan := toolPlan(t)
	plan.Mounts = append(plan.Mounts, launchplan.Mount{Source: "/home/me", Target: "/workspace", Origin: "workspace"})
	if _, err := BuildToolPod(plan, Options{}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("host mount: %v, want ErrUnsupported", err)
	}
}

func TestLoadSidecar(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "podbot-sidecar")
	data := []byte("\x7fELF not really")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sc, err := LoadSidecar(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if sc.Size() != len(data) || sc.SHA256() != hex.EncodeToString(sum[:]) {
		t.Errorf("size %d sha %s", sc.Size(), sc.SHA256())
	}
	if _, err := LoadSidecar(filepath.Join(dir, "missing")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSidecar(empty); !errors.Is(err, errdefs.ErrInvalidValue) {
		t.Errorf("empty: %v", err)
	}
}

// initReactor makes every created Pod Pending with its install container
// in the given state, as a kubelet would.
func initReactor(cs *fake.Clientset, state corev1.ContainerState) {
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		pod.UID = "uid-1"
		pod.Namespace = a.GetNamespace()
		pod.Status.Phase = corev1.PodPending
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: InstallContainerName, Image: pod.Spec.InitContainers[0].Image, State: state}}
		if err := cs.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		return true, pod, nil
	})
}

func TestCreateToolPodFailuresLeaveNothing(t *testing.T) {
	sc := &Sidecar{data: []byte("x")}
	for _, tc := range []struct {
		name   string
		state  corev1.ContainerState
		reason error
		msg    string
	}{
		{"install image cannot be pulled", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}, errdefs.ErrUnavailable, "cannot be pulled"},
		{"install container ended early", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}, errdefs.ErrUnavailable, "ended before the sidecar arrived"},
		{"install container never starts", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}, errdefs.ErrTimeout, "install container was not running"},
		// The fake clientset has no REST config, so the exec that carries
		// the binary fails: what any exec failure does.
		{"the binary cannot be streamed in", corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, errdefs.ErrUnsupported, "no REST config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			initReactor(cs, tc.state)
			c := NewForClientset(cs, "sb", Options{StartTimeout: 300 * time.Millisecond})
			_, err := c.CreateToolPod(context.Background(), toolPlan(t), sc)
			if !errors.Is(err, tc.reason) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v, want %v naming %q", err, tc.reason, tc.msg)
			}
			assertNothingLeft(t, cs)
		})
	}
	if _, err := NewForClientset(fake.NewClientset(), "sb", Options{}).CreateToolPod(context.Background(), toolPlan(t), nil); !errors.Is(err, errdefs.ErrMissingRequired) {
		t.Errorf("no sidecar: %v", err)
	}
}

func TestLimitedBuffer(t *testing.T) {
	b := limitedBuffer{max: 4}
	for _, s := range []string{"ab", "cdef", "gh"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	if b.String() != "abcd" {
		t.Errorf("kept %q, want abcd", b.String())
	}
}
