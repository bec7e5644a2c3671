package kube

import (
	"bufio"
	"context"
	"errors"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/egressnet"
	"github.com/podbot/podbot/errdefs"
)

// maxLogLine bounds one decision log line EgressLog passes on.
const maxLogLine = 64 << 10

// EgressProxy is an allowlist sandbox's proxy as the network commands show it.
type EgressProxy struct {
	// Name is the proxy Pod's (and its ConfigMap's) name.
	Name string
	// Addr is the proxy Pod's IP, empty when it does not run.
	Addr string
	// Policy is the policy in its ConfigMap.
	Policy *egress.Policy
}

// egressConfigMap returns sandbox's proxy ConfigMap, refusing one that is
// not that sandbox's (its labels), and a sandbox podbot did not make.
func (c *Client) egressConfigMap(ctx context.Context, sandbox string) (*corev1.ConfigMap, error) {
	if _, err := c.Get(ctx, sandbox, false); err != nil {
		return nil, err
	}
	name := EgressName(sandbox)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cm, err := c.cs.CoreV1().ConfigMaps(c.namespace).Get(cctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, c.classify("get egress config map", name, err)
	}
	if err != nil || cm.Labels[egressnet.LabelSandbox] != sandbox || cm.Labels[egressnet.LabelRole] != egressnet.RoleProxy {
		return nil, &errdefs.ContainerError{Op: "kubernetes network", Container: sandbox, Reason: errdefs.ErrInvalidValue,
			Msg: "the sandbox is not in allowlist mode (network.mode): it has no egress proxy"}
	}
	return cm, nil
}

// EgressPolicy returns sandbox's proxy: its name, address and the policy
// in its ConfigMap.
func (c *Client) EgressPolicy(ctx context.Context, sandbox string) (EgressProxy, error) {
	cm, err := c.egressConfigMap(ctx, sandbox)
	if err != nil {
		return EgressProxy{}, err
	}
	pol, err := egress.ParsePolicy([]byte(cm.Data[egressPolicyKey]))
	if err != nil {
		return EgressProxy{}, &errdefs.ContainerError{Op: "kubernetes network", Container: sandbox, Reason: errdefs.ErrInvalidValue,
			Msg: "the egress ConfigMap " + cm.Name + " holds no valid policy: " + bounded(err.Error())}
	}
	ep := EgressProxy{Name: cm.Name, Policy: pol}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if p, err := c.cs.CoreV1().Pods(c.namespace).Get(cctx, cm.Name, metav1.GetOptions{}); err == nil && p.Labels[egressnet.LabelSandbox] == sandbox {
		ep.Addr = p.Status.PodIP
	}
	return ep, nil
}

// ChangeEgressPolicy applies change to sandbox's policy and writes it back
// to the ConfigMap. The update carries the version it read, so a change
// made meanwhile by someone else fails (errdefs.ErrConflict) rather than
// being lost. The kubelet brings the new file into the proxy Pod's mount
// (within its sync period, about a minute by default) and the proxy
// reloads it; nothing restarts.
func (c *Client) ChangeEgressPolicy(ctx context.Context, sandbox string, change func(*egress.Policy)) (EgressProxy, error) {
	cm, err := c.egressConfigMap(ctx, sandbox)
	if err != nil {
		return EgressProxy{}, err
	}
	pol, err := egress.ParsePolicy([]byte(cm.Data[egressPolicyKey]))
	if err != nil {
		return EgressProxy{}, &errdefs.ContainerError{Op: "kubernetes network", Container: sandbox, Reason: errdefs.ErrInvalidValue,
			Msg: "the egress ConfigMap " + cm.Name + " holds no valid policy: " + bounded(err.Error())}
	}
	change(pol)
	data, err := egress.MarshalPolicy(pol)
	if err != nil {
		return EgressProxy{}, err
	}
	cm.Data[egressPolicyKey] = string(data)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := c.cs.CoreV1().ConfigMaps(c.namespace).Update(cctx, cm, metav1.UpdateOptions{}); err != nil {
		return EgressProxy{}, c.classify("update egress policy", cm.Name, err)
	}
	return EgressProxy{Name: cm.Name, Policy: pol}, nil
}

// EgressLog calls fn with each line of sandbox's decision log, read in the
// proxy Pod over pods/exec (cat, or tail -F with follow, until ctx ends).
// Lines longer than 64 KiB are skipped; fn's error stops it.
func (c *Client) EgressLog(ctx context.Context, sandbox string, follow bool, fn func(line []byte) error) error {
	cm, err := c.egressConfigMap(ctx, sandbox)
	if err != nil {
		return err
	}
	path := egressnet.LogDirTarget + "/" + egressnet.LogFile
	cmd := []string{"/bin/sh", "-c", `[ -e "$1" ] || exit 0; exec cat "$1"`, "log", path}
	if follow {
		cmd = []string{"tail", "-n", "+1", "-F", path}
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- splitLines(pr, fn)
		_, _ = io.Copy(io.Discard, pr)
	}()
	var errOut limitedBuffer
	errOut.max = maxInstallOutput
	code, err := c.Exec(ctx, cm.Name, ExecOptions{Container: EgressContainerName, Cmd: cmd, Stdout: pw, Stderr: &errOut})
	pw.Close()
	ferr := <-done
	switch {
	case ferr != nil:
		return ferr
	case follow && ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	case code != 0:
		return &errdefs.ContainerError{Op: "kubernetes network log", Container: cm.Name, Reason: errdefs.ErrExecFailed,
			Msg: "reading the decision log failed: " + bounded(errOut.String())}
	}
	return nil
}

// splitLines calls fn with each newline-terminated line of r, skipping
// lines longer than maxLogLine.
func splitLines(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 4096)
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long && len(line)+len(chunk) <= maxLogLine {
			line = append(line, chunk...)
		} else {
			long, line = true, line[:0]
		}
		switch {
		case err == nil:
			if !long && len(line) > 1 {
				if ferr := fn(line[:len(line)-1]); ferr != nil {
					return ferr
				}
			}
			line, long = line[:0], false
		case errors.Is(err, bufio.ErrBufferFull):
		default:
			return nil
		}
	}
}
