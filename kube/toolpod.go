package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/launchplan"
)

// Where a tool-session Pod keeps the sidecar and the workspace. The
// sidecar directory is the same path the engine backend mounts the binary
// at, so the same serve command works on both.
const (
	// SidecarDir is the emptyDir the sidecar binary is installed in,
	// mounted read-only in the sandbox container.
	SidecarDir = "/usr/local/libexec/podbot"
	// SidecarPath is the installed podbot-sidecar binary.
	SidecarPath = SidecarDir + "/podbot-sidecar"
	// WorkspaceDir is the tool session's workspace: an emptyDir, the
	// sandbox container's only writable volume besides /tmp.
	WorkspaceDir = "/workspace"
	// InstallContainerName is the init container the sidecar binary is
	// streamed into before the sandbox container starts.
	InstallContainerName = "install-sidecar"
)

// Limits of the sidecar install.
const (
	// MaxSidecarBytes bounds the binary read from the host and the
	// emptyDir it is installed in.
	MaxSidecarBytes = 64 << 20
	// maxInstallOutput bounds what the install script may print.
	maxInstallOutput = 4 << 10
)

// Volume names of a tool-session Pod.
const (
	sidecarVolume   = "podbot-sidecar"
	workspaceVolume = "workspace"
)

// installMarker is the file whose appearance ends the install container.
const installMarker = SidecarDir + "/.installed"

// installWait is the install container's command: it waits, without
// doing anything else, until the host has installed the binary.
var installWait = []string{"/bin/sh", "-c", "while [ ! -e " + installMarker + " ]; do sleep 0.1; done"}

// installScript writes stdin to the sidecar path through a temporary
// name, prints its size and SHA-256, and makes it the sidecar only when
// both match the expected values ($1 and $2, checked to be digits and hex
// by the host: no value is interpolated into the script). Every path is a
// constant.
const installScript = `set -eu
f=` + SidecarPath + `
cat > "$f.part"
size=$(wc -c < "$f.part")
sum=$(sha256sum "$f.part")
sum=${sum%% *}
echo "$size $sum"
if [ "$size" -ne "$1" ] || [ "$sum" != "$2" ]; then rm -f "$f.part"; exit 3; fi
chmod 0555 "$f.part"
mv "$f.part" "$f"
: > ` + installMarker + `
`

// Sidecar is a podbot-sidecar binary read from the host, with its size and
// SHA-256, ready to be streamed into Pods.
type Sidecar struct {
	data []byte
	sum  [sha256.Size]byte
}

// LoadSidecar reads the host's podbot-sidecar binary (at most
// MaxSidecarBytes) once, so every Pod of a session gets the same bytes.
func LoadSidecar(path string) (*Sidecar, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "read sidecar", Path: path, Reason: errdefs.ErrNotFound,
			Msg: "podbot-sidecar cannot be read; build it with `make build` or set PODBOT_SIDECAR_PATH", Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSidecarBytes+1))
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "read sidecar", Path: path, Err: err}
	}
	if len(data) > MaxSidecarBytes || len(data) == 0 {
		return nil, &errdefs.FilesystemError{Op: "read sidecar", Path: path, Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("podbot-sidecar must be 1 byte to %d MiB", MaxSidecarBytes>>20)}
	}
	return &Sidecar{data: data, sum: sha256.Sum256(data)}, nil
}

// Size is the binary's size in bytes.
func (s *Sidecar) Size() int { return len(s.data) }

// SHA256 is the binary's SHA-256 in hex.
func (s *Sidecar) SHA256() string { return hex.EncodeToString(s.sum[:]) }

// BuildToolPod is BuildPod for a tool session: the hardened sandbox Pod of
// plan (which must have no host mount) plus an emptyDir at SidecarDir,
// mounted read-only in the sandbox container and written only by the
// install container that runs before it, and an emptyDir workspace at
// WorkspaceDir, the sandbox container's working directory. The install
// container has the sandbox container's image, user, security context and
// limits. The sandbox container's command is plan.InitCommand.
func BuildToolPod(plan launchplan.Plan, opts Options) (*corev1.Pod, error) {
	pod, err := BuildPod(plan, opts)
	if err != nil {
		return nil, err
	}
	withSidecarInstall(pod)
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: workspaceVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	sandbox := &pod.Spec.Containers[0]
	sandbox.VolumeMounts = append(sandbox.VolumeMounts, corev1.VolumeMount{Name: workspaceVolume, MountPath: WorkspaceDir})
	sandbox.WorkingDir = WorkspaceDir
	return pod, nil
}

// withSidecarInstall adds to pod an emptyDir at SidecarDir, mounted
// read-only in the sandbox container and written only by the install
// container (InstallContainerName) that runs before it and waits until
// the host has streamed the binary in (installSidecar). The install
// container has the sandbox container's image, user, security context and
// limits, and a read-only root filesystem.
func withSidecarInstall(pod *corev1.Pod) {
	limit := resource.NewQuantity(MaxSidecarBytes, resource.BinarySI)
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: sidecarVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: limit}}})
	sandbox := &pod.Spec.Containers[0]
	install := corev1.Container{
		Name:                     InstallContainerName,
		Image:                    sandbox.Image,
		ImagePullPolicy:          sandbox.ImagePullPolicy,
		Command:                  installWait,
		SecurityContext:          sandbox.SecurityContext.DeepCopy(),
		Resources:                *sandbox.Resources.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{{Name: sidecarVolume, MountPath: SidecarDir}},
	}
	// The install container writes nothing but the sidecar volume.
	install.SecurityContext.ReadOnlyRootFilesystem = ptr(true)
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, install)
	sandbox.VolumeMounts = append(sandbox.VolumeMounts, corev1.VolumeMount{Name: sidecarVolume, MountPath: SidecarDir, ReadOnly: true})
}

// installThenRun is the wait of a Pod made withSidecarInstall: it waits
// for the install container, streams sc into it and waits until the
// sandbox container runs.
func (c *Client) installThenRun(name string, sc *Sidecar) func(context.Context) (*corev1.Pod, error) {
	return func(ctx context.Context) (*corev1.Pod, error) {
		if err := c.waitInstallRunning(ctx, name); err != nil {
			return nil, err
		}
		if err := c.installSidecar(ctx, name, sc); err != nil {
			return nil, err
		}
		return c.waitRunning(ctx, name)
	}
}

// CreateToolPod creates a tool session's Pod (BuildToolPod) and its
// NetworkPolicy (deny-all for network none), streams sc into the install
// container over a pods/exec stdin, where its size and SHA-256 are
// checked before it is made the sidecar, and waits until the sandbox
// container runs. As with Create, any failure or cancellation deletes
// both objects before it returns.
func (c *Client) CreateToolPod(ctx context.Context, plan launchplan.Plan, sc *Sidecar) (Sandbox, error) {
	if sc == nil {
		return Sandbox{}, &errdefs.ConfigError{Key: "sidecar", Reason: errdefs.ErrMissingRequired, Msg: "a tool Pod needs the podbot-sidecar binary"}
	}
	pod, err := BuildToolPod(plan, c.opts)
	if err != nil {
		return Sandbox{}, err
	}
	mode := plan.Egress.Mode
	if plan.Network == "none" {
		mode = egress.ModeNone
	}
	return c.createObjects(ctx, pod, BuildNetworkPolicy(pod, mode), plan.Egress, nil, c.installThenRun(pod.Name, sc))
}

// waitInstallRunning polls the Pod until its install container runs.
func (c *Client) waitInstallRunning(ctx context.Context, name string) error {
	limit := c.opts.StartTimeout
	if limit <= 0 {
		limit = DefaultStartTimeout
	}
	deadline := time.Now().Add(limit)
	for {
		gctx, cancel := context.WithTimeout(ctx, callTimeout)
		pod, err := c.cs.CoreV1().Pods(c.namespace).Get(gctx, name, metav1.GetOptions{})
		cancel()
		if err != nil {
			return c.classify("create", name, err)
		}
		for _, st := range pod.Status.InitContainerStatuses {
			if st.Name == InstallContainerName && (st.State.Running != nil || st.State.Terminated != nil) {
				if t := st.State.Terminated; t != nil {
					return &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrUnavailable,
						Msg: fmt.Sprintf("the sidecar install container ended before the sidecar arrived (exit %d, %s)", t.ExitCode, t.Reason)}
				}
				return nil
			}
			if w := st.State.Waiting; st.Name == InstallContainerName && w != nil && fatalReasons[w.Reason] {
				return &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrUnavailable,
					Msg: "the Pod cannot start: " + waitingMessage(st.Image, w), Hint: "the Pod was deleted"}
			}
		}
		if err := startFailure(pod); err != nil {
			return &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrUnavailable,
				Msg: "the Pod cannot start: " + err.Error(), Hint: "the Pod was deleted"}
		}
		if time.Now().After(deadline) {
			return &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrTimeout,
				Msg:  fmt.Sprintf("the Pod's sidecar install container was not running after %s (phase %s: %s)", limit, pod.Status.Phase, podReasons(pod)),
				Hint: "the Pod was deleted; check kubernetes.node_selector, kubernetes.runtime_class and the namespace's quota"}
		}
		select {
		case <-ctx.Done():
			return c.classify("create", name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// waitingMessage explains a container that waits for a reason that never
// resolves by itself.
func waitingMessage(image string, w *corev1.ContainerStateWaiting) string {
	msg := w.Reason + ": " + bounded(w.Message)
	if strings.Contains(w.Reason, "Image") {
		msg = fmt.Sprintf("image %q cannot be pulled (%s); check the image name and kubernetes.image_pull_policy", image, msg)
	}
	return msg
}

// installSidecar streams sc into the install container and checks what
// arrived: the script prints the size and SHA-256 it computed, which must
// be the host's, and installs the file only when they are.
func (c *Client) installSidecar(ctx context.Context, name string, sc *Sidecar) error {
	var out, errOut limitedBuffer
	out.max, errOut.max = maxInstallOutput, maxInstallOutput
	want := fmt.Sprintf("%d %s", sc.Size(), sc.SHA256())
	code, err := c.Exec(ctx, name, ExecOptions{
		Container: InstallContainerName,
		Cmd:       []string{"/bin/sh", "-c", installScript, "install-sidecar", strconv.Itoa(sc.Size()), sc.SHA256()},
		Stdin:     bytes.NewReader(sc.data),
		Stdout:    &out,
		Stderr:    &errOut,
	})
	if err != nil {
		return err
	}
	got := strings.TrimSpace(out.String())
	if code != 0 || got != want {
		msg := fmt.Sprintf("the sidecar binary did not arrive intact in the Pod (exit %d): want size and sha256 %q, the Pod computed %q", code, want, bounded(got))
		if e := strings.TrimSpace(errOut.String()); e != "" {
			msg += "; it said: " + bounded(e)
		}
		return &errdefs.ContainerError{Op: "kubernetes install sidecar", Container: name, Reason: errdefs.ErrExecFailed, Msg: msg,
			Hint: "the image needs /bin/sh, cat, wc, sha256sum, chmod and mv (coreutils); the Pod was deleted"}
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
