package kube

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// LogsOptions are the inputs of Logs.
type LogsOptions struct {
	// Follow keeps streaming until the Pod stops or ctx ends.
	Follow bool
	// Tail, when positive, shows only the last Tail lines.
	Tail int64
	// Any allows a Pod podbot did not create.
	Any bool
}

// Logs copies the sandbox container's output to w. The kubelet keeps
// stdout and stderr in one log, so both arrive on w.
func (c *Client) Logs(ctx context.Context, name string, opts LogsOptions, w io.Writer) error {
	if _, err := c.Get(ctx, name, opts.Any); err != nil {
		return err
	}
	lo := &corev1.PodLogOptions{Container: ContainerName, Follow: opts.Follow}
	if opts.Tail > 0 {
		lo.TailLines = &opts.Tail
	}
	rc, err := c.cs.CoreV1().Pods(c.namespace).GetLogs(name, lo).Stream(ctx)
	if err != nil {
		return c.classify("logs", name, err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil && ctx.Err() == nil {
		return c.classify("logs", name, err)
	}
	return nil
}
