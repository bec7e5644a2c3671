package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/launchplan"
)

// Where a GitHub token appears in a sandbox Pod: the paths the engine
// backend's token directory has, so podbot-sidecar answers git's askpass
// prompts from the same files on both backends.
const (
	// TokenMountPath is the read-only mount of the token and its origin.
	TokenMountPath = gitcred.SecretsDir
	// SecretTokenKey is the Secret key (and file name) of the token.
	SecretTokenKey = launchplan.TokenFileName
	// SecretOriginKey is the Secret key (and file name) of the origin.
	SecretOriginKey = gitcred.OriginFileName
)

// tokenVolume is the Pod volume name of the token's projection.
const tokenVolume = "podbot-token"

// maxTokenLen bounds a token value; GitHub's are about 40 bytes.
const maxTokenLen = 4096

// addToken puts d's token and origin into a Secret's data, refusing a
// token that is empty, too long or holds whitespace or control characters,
// and an origin that is not canonical.
func addToken(data map[string][]byte, d SecretData) error {
	if d.Token == "" && d.Origin == "" {
		return nil
	}
	if err := checkToken(d.Token); err != nil {
		return err
	}
	if _, err := gitcred.ReadOriginString(d.Origin); err != nil {
		return err
	}
	data[SecretTokenKey] = []byte(d.Token)
	data[SecretOriginKey] = []byte(d.Origin + "\n")
	return nil
}

// checkToken refuses a token value that cannot be a GitHub token.
func checkToken(v string) error {
	if v == "" || len(v) > maxTokenLen || strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return &errdefs.GitHubError{Op: "installation token", Reason: errdefs.ErrInvalidValue,
			Msg: "GitHub returned a token that is empty, too long or holds whitespace; refusing to store it"}
	}
	return nil
}

// WithTokenVolume mounts the token and origin keys of the Secret name
// read-only at TokenMountPath in the sandbox container (files mode 0440,
// owned by the Pod's group, as WithSecretVolume's). The kubelet replaces
// the files atomically when UpdateToken changes the Secret, after its
// sync delay (see the README's Kubernetes backend section).
func WithTokenVolume(name string) PodOption {
	return func(pod *corev1.Pod) error {
		mode := int32(0o440)
		// Optional, so that the token file goes when WithdrawToken takes
		// the key away (a missing key of a required volume would keep the
		// old file). The Secret exists before the Pod.
		yes := true
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: tokenVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: &mode, Optional: &yes, Items: []corev1.KeyToPath{
				{Key: SecretTokenKey, Path: SecretTokenKey},
				{Key: SecretOriginKey, Path: SecretOriginKey},
			}},
		}})
		c := &pod.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: tokenVolume, MountPath: TokenMountPath, ReadOnly: true})
		return nil
	}
}

// UpdateToken replaces the token in the Secret of the sandbox name with
// value, by a JSON merge patch of that one key: the value goes in the
// request body only. The Secret must be podbot's (podbot.managed=true)
// and already hold a token.
func (c *Client) UpdateToken(ctx context.Context, name, value string) error {
	if err := checkToken(value); err != nil {
		return err
	}
	return c.patchToken(ctx, name, []byte(value))
}

// WithdrawToken takes the token out of the Secret of the sandbox name (a
// kept Pod whose token is no longer refreshed); the kubelet then removes
// the file from the Pod after its sync delay. A Secret already without a
// token, or gone, is not an error.
func (c *Client) WithdrawToken(ctx context.Context, name string) error {
	err := c.patchToken(ctx, name, nil)
	if errors.Is(err, errdefs.ErrNotFound) || errors.Is(err, errNoToken) {
		return nil
	}
	return err
}

// errNoToken is patchToken's refusal of a Secret without a token.
var errNoToken = errors.New("no token in the Secret")

// patchToken sets the token key of the sandbox's Secret to value, or
// removes it when value is nil.
func (c *Client) patchToken(ctx context.Context, name string, value []byte) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	secrets := c.cs.CoreV1().Secrets(c.namespace)
	cur, err := secrets.Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		return c.classify("get secret", name, err)
	}
	if cur.Labels[launchplan.LabelManaged] != "true" || cur.Data[SecretTokenKey] == nil {
		return &errdefs.ContainerError{Op: "kubernetes update token", Container: name, Reason: errdefs.ErrRefused,
			Msg: "Secret " + name + " is not a podbot sandbox's Secret holding a GitHub token", Err: errNoToken}
	}
	// A nil value marshals as null, which a merge patch reads as "remove".
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cur.ResourceVersion},
		"data":     map[string][]byte{SecretTokenKey: value},
	})
	if err != nil {
		return err
	}
	if _, err := secrets.Patch(cctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return c.classify("update token", name, err)
	}
	return nil
}
