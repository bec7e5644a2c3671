package kube

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podbot/podbot/launchplan"
)

// PodOption changes the Pod BuildPod made before Create creates it.
type PodOption func(*corev1.Pod) error

// Supported refuses, with an *errdefs.ConfigError naming the key, a plan
// BuildPod cannot run (the privileged profile, host mounts or devices, an
// engine network), before anything is made.
func Supported(plan launchplan.Plan) error { return supported(plan) }

// LaunchOptions are the inputs of Launch beyond the plan.
type LaunchOptions struct {
	// Secret is what enters the sandbox through its Secret; empty makes
	// no Secret.
	Secret SecretData
	// ScratchDirs get an empty, writable directory each (WithScratchDirs).
	ScratchDirs []string
	// PodOptions change the Pod further, after the scratch directories.
	PodOptions []PodOption
	// Sidecar, when set, is streamed into the Pod before its sandbox
	// container starts, as into a tool Pod (see CreateToolPod), and is
	// read-only at SidecarPath there: git's askpass program for a token.
	Sidecar *Sidecar
	// Token gives the Pod a token container and volume
	// (WithTokenContainer), for WriteToken.
	Token bool
	// Vault, when set, is the credential vault of an allowlist plan: it
	// goes to the egress proxy in a Secret of the proxy's, and the Pod
	// gets the CA's trust files (see BuildVaultSecret, WithVaultTrust).
	Vault *EgressVault
}

// WithWorkingDir sets the sandbox container's working directory. A
// directory the launch makes later (a clone's) must not be the Pod's: the
// runtime would create it, owned by root, before the agent's user could.
func WithWorkingDir(dir string) PodOption {
	return func(pod *corev1.Pod) error {
		pod.Spec.Containers[0].WorkingDir = dir
		return nil
	}
}

// Launch is Create for podbot run and podbot host: the plan's Pod with
// writable scratch directories and, when opts.Secret holds anything, a
// Secret of its own (BuildSecret) mounted read-only at SecretMountPath.
// The Secret is created first, so the Pod never starts without it, and
// once the Pod exists it is owned by the Pod (ownerReferences), so
// deleting the Pod by any means deletes it too. Like Create, a failed or
// interrupted Launch deletes what it made (Pod, NetworkPolicy, Secret).
func (c *Client) Launch(ctx context.Context, plan launchplan.Plan, opts LaunchOptions) (sb Sandbox, err error) {
	pod, err := BuildPod(plan, c.opts)
	if err != nil {
		return Sandbox{}, err
	}
	podOpts := append([]PodOption{WithScratchDirs(opts.ScratchDirs...)}, opts.PodOptions...)
	if opts.Token {
		podOpts = append(podOpts, WithTokenContainer())
	}
	if opts.Secret.Empty() {
		return c.create(ctx, plan, opts.Sidecar, opts.Vault, podOpts...)
	}
	secret, err := BuildSecret(pod, opts.Secret)
	if err != nil {
		return Sandbox{}, err
	}
	dctx := context.WithoutCancel(ctx)
	cctx, cancel := context.WithTimeout(dctx, callTimeout)
	defer cancel()
	if _, err := c.cs.CoreV1().Secrets(c.namespace).Create(cctx, secret, metav1.CreateOptions{}); err != nil {
		return Sandbox{}, c.classify("create secret", pod.Name, err)
	}
	defer func() {
		if err != nil {
			dc, dcancel := context.WithTimeout(dctx, callTimeout)
			defer dcancel()
			if derr := c.deleteSecret(dc, secret.Name); derr != nil {
				err = errors.Join(err, derr)
			}
		}
	}()
	podOpts = append(podOpts, WithSecretVolume(secret.Name))
	sb, err = c.create(ctx, plan, opts.Sidecar, opts.Vault, podOpts...)
	if err != nil {
		return Sandbox{}, err
	}
	// The Secret goes with its Pod when the Pod is deleted by anyone.
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: sb.Name, UID: types.UID(sb.UID)}
	oc, ocancel := context.WithTimeout(dctx, callTimeout)
	defer ocancel()
	cur, err := c.cs.CoreV1().Secrets(c.namespace).Get(oc, secret.Name, metav1.GetOptions{})
	if err == nil {
		cur.OwnerReferences = []metav1.OwnerReference{owner}
		_, err = c.cs.CoreV1().Secrets(c.namespace).Update(oc, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		err = c.classify("own secret", sb.Name, err)
		if derr := c.Delete(oc, sb.Name); derr != nil {
			err = errors.Join(err, derr)
		}
		return Sandbox{}, err
	}
	return sb, nil
}

// Delete deletes a sandbox podbot launched: its Pod (at once, no grace),
// its NetworkPolicy, its Secret and its egress proxy's objects (Pod,
// ConfigMap, NetworkPolicy). Missing objects are not an error. It
// runs on a context detached from ctx's cancellation, bounded in time, so
// an interrupted caller still cleans up.
func (c *Client) Delete(ctx context.Context, name string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	return errors.Join(c.deleteObjects(dctx, name, true, true), c.deleteSecret(dctx, name), c.deleteEgress(dctx, name))
}

// deleteSecret deletes the sandbox's Secret; a missing one is not an error.
func (c *Client) deleteSecret(ctx context.Context, name string) error {
	err := c.cs.CoreV1().Secrets(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return c.classify("delete secret", name, err)
	}
	return nil
}

// deleteOwnSecret deletes the Secret name when it is the sandbox's own
// (podbot's labels, the Pod's session); a missing one is not an error.
func (c *Client) deleteOwnSecret(ctx context.Context, name, session string) error {
	s, err := c.cs.CoreV1().Secrets(c.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return c.classify("get secret", name, err)
	case s.Labels[launchplan.LabelManaged] != "true" || s.Labels[launchplan.LabelSession] != session:
		return nil
	}
	return c.deleteSecret(ctx, name)
}
