package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podbot/podbot/errdefs"
)

// rbacHint says what a sandbox namespace must grant.
const rbacHint = "grant the kubeconfig's user a Role in that namespace with create, get, list, watch, patch and delete on pods (patch: pool claims), " +
	"create on pods/exec, get on pods/log, create, get, update and delete on networkpolicies, and create, update and delete on secrets (podbot run and host; see the README's Kubernetes backend section), or choose another kubernetes.namespace"

// classify turns a client-go error into a typed podbot error naming the
// cause: op is the operation, name the Pod (or "").
func (c *Client) classify(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var ce *errdefs.ContainerError
	if errors.As(err, &ce) {
		return err
	}
	out := &errdefs.ContainerError{Op: "kubernetes " + op, Container: name, Err: err}
	where := fmt.Sprintf("namespace %q", c.namespace)
	if s := c.Server(); s != "" {
		where += " on " + s
	}
	var urlErr *url.Error
	var netErr *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		out.Reason, out.Msg = context.Canceled, "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		out.Reason, out.Msg = errdefs.ErrTimeout, "the API server did not answer in time ("+where+")"
	case apierrors.IsUnauthorized(err):
		out.Reason = errdefs.ErrAuth
		out.Msg = "the API server rejected the kubeconfig's credentials (" + where + "): the token or certificate is wrong, revoked or expired"
		out.Hint = "refresh the kubeconfig (or kubernetes.context) and try again"
	case apierrors.IsForbidden(err):
		out.Reason = errdefs.ErrPermissionDenied
		out.Msg = "RBAC forbids it in " + where
		out.Hint = rbacHint
	case apierrors.IsNotFound(err):
		out.Reason, out.Msg = errdefs.ErrNotFound, "not found in "+where
	case apierrors.IsAlreadyExists(err):
		out.Reason, out.Msg = errdefs.ErrAlreadyExists, "already exists in "+where
		out.Hint = "pick another --name or remove the old sandbox with podbot rm -f"
	case apierrors.IsInvalid(err):
		out.Reason, out.Msg = errdefs.ErrInvalidValue, "the API server refused the object"
	case errors.As(err, &netErr) || errors.As(err, &urlErr):
		out.Reason = errdefs.ErrConnectionFailed
		out.Msg = "cannot reach the API server (" + where + ")"
		out.Hint = "is the cluster up? check kubernetes.kubeconfig, kubernetes.context and KUBECONFIG"
	default:
		out.Reason = errdefs.ErrUnavailable
	}
	return out
}

// unsupported is the error for a plan the backend cannot run.
func unsupported(key, msg string) error {
	return &errdefs.ConfigError{Key: key, Reason: errdefs.ErrUnsupported, Msg: msg + " on the kubernetes backend"}
}
