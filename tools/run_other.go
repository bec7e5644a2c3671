//go:build !linux

package tools

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"time"
)

// run starts spec.argv in its own process group and waits for it. On
// timeout the group gets SIGTERM, then SIGKILL after KillGrace. When the
// command ends, whatever is left of its group is killed, so no child
// outlives a call. Output beyond spec.limit bytes per stream is drained and
// dropped. Only a cancelled ctx is an error; a command that cannot start or
// fails is reported in the output.
func (w *Workspace) run(ctx context.Context, spec runSpec) (runOutput, error) {
	tctx, cancel := context.WithTimeout(ctx, spec.timeout)
	defer cancel()

	cmd := exec.CommandContext(tctx, spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.SysProcAttr = newProcAttr()
	cmd.WaitDelay = KillGrace
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, sigTerm) }
	if spec.stdin != "" {
		cmd.Stdin = strings.NewReader(spec.stdin)
	}
	var stdout, stderr cappedBuffer
	if spec.capture {
		stdout.limit, stderr.limit = spec.limit, spec.limit
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
	}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return runOutput{}, ctx.Err()
		}
		return startFailure(spec.argv[0], err, time.Since(start)), nil
	}
	pid := cmd.Process.Pid
	waitErr := cmd.Wait()
	_ = signalGroup(pid, sigKill) // leftovers of the group, if any
	out := runOutput{duration: time.Since(start)}
	if ctx.Err() != nil {
		return runOutput{}, ctx.Err()
	}
	out.stdout, out.stderr = stdout.String(), stderr.String()
	switch {
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		out.timedOut = true
		out.exitCode = TimeoutExitCode
	case cmd.ProcessState != nil:
		out.exitCode = exitStatus(cmd.ProcessState)
	default:
		out.exitCode = 1
		out.stderr += "podbot: " + waitErr.Error()
	}
	return out, nil
}
