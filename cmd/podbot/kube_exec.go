//go:build kubernetes

package main

import (
	"context"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/kube"
	"github.com/podbot/podbot/runflow"
)

// execOnKubernetes is podbot exec on the kubernetes backend, through the
// pods/exec subresource. The exec request carries its command in the URL
// and has no environment or user field, so -e, --agent-env and -u are
// refused rather than put values where the API server logs them.
func execOnKubernetes(ctx context.Context, f *factory, opts *execOptions) error {
	switch {
	case len(opts.env) > 0 || opts.agentEnv:
		return &usageError{msg: "-e and --agent-env are not supported on the kubernetes backend: pods/exec has no environment field, and values in the command would reach the API server's URL and audit log; set them in a file inside the sandbox instead"}
	case opts.user != "":
		return &usageError{msg: "-u is not supported on the kubernetes backend: pods/exec runs as the Pod's user (sandbox.user)"}
	}
	kc, err := f.kubeClient()
	if err != nil {
		return err
	}
	sb, err := kc.Get(ctx, opts.ref, opts.any)
	if err != nil {
		return err
	}
	if !sb.Running() {
		return &errdefs.ContainerError{Op: "kubernetes exec", Container: sb.Name, Reason: errdefs.ErrConflict,
			Msg: "the Pod is " + string(sb.Phase) + ", not Running", Hint: "create a new sandbox with `podbot create`"}
	}
	lib := kube.ExecOptions{Cmd: opts.command, WorkingDir: opts.workdir, TTY: opts.wantTTY(f.ios.InTTY, f.ios.OutTTY)}
	if !opts.detach {
		lib.Stdin, lib.Stdout, lib.Stderr = f.ios.In, f.ios.Out, f.ios.ErrOut
	}
	if lib.TTY {
		restore, err := runflow.MakeRaw(f.ios.In)
		if err != nil {
			return err
		}
		defer restore()
		if sz, ok := runflow.Size(f.ios.Out); ok {
			lib.InitialSize = kube.TermSize{Rows: uint16(sz.Height), Cols: uint16(sz.Width)}
		}
		sizes, stop := runflow.WatchSize(ctx, f.ios.Out)
		defer stop()
		out := make(chan kube.TermSize, 1)
		go func() {
			defer close(out)
			for s := range sizes {
				select {
				case out <- kube.TermSize{Rows: uint16(s.Height), Cols: uint16(s.Width)}:
				case <-ctx.Done():
					return
				}
			}
		}()
		lib.Resize = out
	}
	code, err := kc.Exec(ctx, sb.Name, lib)
	if err != nil {
		return err
	}
	if code != 0 {
		return &errdefs.ExitError{Code: code}
	}
	return nil
}
