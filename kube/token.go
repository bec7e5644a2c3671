package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/launchplan"
)

// A GitHub token in a sandbox Pod lives in a memory-backed emptyDir that
// the sandbox container mounts read-only at TokenMountPath (the engine
// backend's paths, so podbot-sidecar answers git's askpass prompts from
// the same files) and that only the Pod's token container
// (TokenContainerName) mounts writable. The host writes the token there
// by an exec into the token container, the value on its stdin: it is in
// no Secret, no Pod spec, no environment and no argv, and a refresh is in
// the Pod as soon as the exec returns. (A Secret volume would leave the
// refresh to the kubelet's sync, which took 63 s to more than 4 minutes
// on the test cluster, longest for Pods with an init container.)
const (
	// TokenMountPath is the sandbox container's read-only view of the token.
	TokenMountPath = gitcred.SecretsDir
	// TokenFileName is the token's file name there.
	TokenFileName = launchplan.TokenFileName
	// OriginFileName is the file name of the one origin git may send it to.
	OriginFileName = gitcred.OriginFileName
	// TokenContainerName is the container that writes the token; it runs
	// nothing but a wait.
	TokenContainerName = "token"
)

// tokenVolume is the Pod volume of the token; maxTokenVolume bounds it.
const (
	tokenVolume    = "podbot-token"
	maxTokenVolume = 64 << 10
)

// maxTokenLen bounds a token value; GitHub's are about 40 bytes.
const maxTokenLen = 4096

// tokenWait is the token container's command: it waits and does nothing.
var tokenWait = []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"}

// writeTokenScript replaces the token and origin files atomically with the
// two lines on stdin (token, then origin), read by the shell's builtins so
// neither is ever in an argv. Every path is a constant but for the
// temporaries' suffix, the shell's process id: two writers at once (podbot
// create and a token daemon, say) each rename their own files instead of
// one renaming the other's away. A writer that fails leaves none behind.
const writeTokenScript = `set -eu
umask 077
d=` + TokenMountPath + `
tn="$d/.` + TokenFileName + `.new.$$"
on="$d/.` + OriginFileName + `.new.$$"
trap 'rm -f "$tn" "$on"' EXIT
IFS= read -r t
IFS= read -r o
printf '%s' "$t" > "$tn"
printf '%s\n' "$o" > "$on"
mv -f "$on" "$d/` + OriginFileName + `"
mv -f "$tn" "$d/` + TokenFileName + `"
`

// withdrawTokenScript removes the token file (the origin stays).
const withdrawTokenScript = `rm -f ` + TokenMountPath + `/` + TokenFileName

// WithTokenContainer gives the Pod a memory-backed emptyDir for the token,
// mounted read-only at TokenMountPath in the sandbox container, and the
// token container that alone mounts it writable: the sandbox container's
// image, user and security context (with a read-only root filesystem and
// no capability) and small limits of its own, running a wait. WriteToken fills it.
func WithTokenContainer() PodOption {
	return func(pod *corev1.Pod) error {
		limit := resource.NewQuantity(maxTokenVolume, resource.BinarySI)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: tokenVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: limit}}})
		sandbox := &pod.Spec.Containers[0]
		sandbox.VolumeMounts = append(sandbox.VolumeMounts, corev1.VolumeMount{Name: tokenVolume, MountPath: TokenMountPath, ReadOnly: true})
		writer := corev1.Container{
			Name:                     TokenContainerName,
			Image:                    sandbox.Image,
			ImagePullPolicy:          sandbox.ImagePullPolicy,
			Command:                  tokenWait,
			SecurityContext:          sandbox.SecurityContext.DeepCopy(),
			Resources:                tokenResources(),
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			VolumeMounts:             []corev1.VolumeMount{{Name: tokenVolume, MountPath: TokenMountPath}},
		}
		// It writes nothing but the token volume and needs no capability.
		writer.SecurityContext.ReadOnlyRootFilesystem = ptr(true)
		writer.SecurityContext.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		pod.Spec.Containers = append(pod.Spec.Containers, writer)
		return nil
	}
}

// tokenResources are the token container's requests and limits: it runs
// a shell that sleeps.
func tokenResources() corev1.ResourceRequirements {
	l := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("50m"),
		corev1.ResourceMemory: resource.MustParse("16Mi"),
	}
	return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// checkToken refuses a token value that cannot be a GitHub token.
func checkToken(v string) error {
	if v == "" || len(v) > maxTokenLen || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return &errdefs.GitHubError{Op: "installation token", Reason: errdefs.ErrInvalidValue,
			Msg: "GitHub returned a token that is empty, too long or holds whitespace; refusing to store it"}
	}
	return nil
}

// WriteToken puts token and origin (gitcred.Origin's canonical form) into
// the token volume of the sandbox name, by an exec into its token
// container with both on stdin, replacing what was there atomically.
func (c *Client) WriteToken(ctx context.Context, name, token, origin string) error {
	if err := checkToken(token); err != nil {
		return err
	}
	if _, err := gitcred.ReadOriginString(origin); err != nil {
		return err
	}
	return c.tokenExec(ctx, name, "write token", writeTokenScript, token+"\n"+origin+"\n")
}

// WithdrawToken removes the token file from the sandbox name (a kept Pod
// whose token is no longer refreshed). A Pod already gone is not an error.
func (c *Client) WithdrawToken(ctx context.Context, name string) error {
	err := c.tokenExec(ctx, name, "withdraw token", withdrawTokenScript, "")
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	return err
}

// tokenExec runs script in the token container with stdin.
func (c *Client) tokenExec(ctx context.Context, name, op, script, stdin string) error {
	var errOut limitedBuffer
	errOut.max = maxInstallOutput
	code, err := c.Exec(ctx, name, ExecOptions{
		Container: TokenContainerName,
		Cmd:       []string{"/bin/sh", "-c", script},
		Stdin:     bytes.NewReader([]byte(stdin)),
		Stderr:    &errOut,
	})
	if err != nil {
		return err
	}
	if code != 0 {
		return &errdefs.ContainerError{Op: "kubernetes " + op, Container: name, Reason: errdefs.ErrExecFailed,
			Msg: fmt.Sprintf("the token container exited with status %d: %s", code, bounded(strings.TrimSpace(errOut.String())))}
	}
	return nil
}

// hasTokenContainer reports whether pod has a token container.
func hasTokenContainer(pod *corev1.Pod) bool {
	for _, ct := range pod.Spec.Containers {
		if ct.Name == TokenContainerName {
			return true
		}
	}
	return false
}

// thenTokenRunning is wait followed by a wait for the token container: a
// Pod is Running once one of its containers is, which need not be the
// token container WriteToken execs into.
func (c *Client) thenTokenRunning(name string, wait func(context.Context) (*corev1.Pod, error)) func(context.Context) (*corev1.Pod, error) {
	return func(ctx context.Context) (*corev1.Pod, error) {
		pod, err := wait(ctx)
		if err != nil {
			return nil, err
		}
		limit := c.opts.StartTimeout
		if limit <= 0 {
			limit = DefaultStartTimeout
		}
		deadline := time.Now().Add(limit)
		for {
			for _, st := range pod.Status.ContainerStatuses {
				if st.Name != TokenContainerName {
					continue
				}
				switch {
				case st.State.Running != nil:
					return pod, nil
				case st.State.Terminated != nil:
					return nil, &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrUnavailable,
						Msg: fmt.Sprintf("the Pod's token container ended (exit %d, %s)", st.State.Terminated.ExitCode, st.State.Terminated.Reason), Hint: "the Pod was deleted"}
				case st.State.Waiting != nil && fatalReasons[st.State.Waiting.Reason]:
					return nil, &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrUnavailable,
						Msg: "the Pod's token container cannot start: " + waitingMessage(st.Image, st.State.Waiting), Hint: "the Pod was deleted"}
				}
			}
			if time.Now().After(deadline) {
				return nil, &errdefs.ContainerError{Op: "kubernetes create", Container: name, Reason: errdefs.ErrTimeout,
					Msg: fmt.Sprintf("the Pod's token container was not running after %s", limit), Hint: "the Pod was deleted"}
			}
			select {
			case <-ctx.Done():
				return nil, c.classify("create", name, ctx.Err())
			case <-time.After(pollInterval):
			}
			gctx, cancel := context.WithTimeout(ctx, callTimeout)
			pod, err = c.cs.CoreV1().Pods(c.namespace).Get(gctx, name, metav1.GetOptions{})
			cancel()
			if err != nil {
				return nil, c.classify("create", name, err)
			}
		}
	}
}
