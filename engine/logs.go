package engine

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// LogsOptions selects what Logs returns.
type LogsOptions struct {
	// Follow keeps streaming new output until the container stops or ctx
	// is cancelled.
	Follow bool
	// Tail is the number of lines from the end to show; 0 means all.
	Tail int
	// Since, when set, shows only output after this time.
	Since time.Time
	// Timestamps prefixes each line with its time.
	Timestamps bool
}

// Logs copies the container's output: its stdout to stdout and its stderr
// to stderr (demultiplexed; a TTY container has a single stream, which goes
// to stdout).
func (c *Conn) Logs(ctx context.Context, id string, opts LogsOptions, stdout, stderr io.Writer) error {
	info, err := c.Inspect(ctx, id, false)
	if err != nil {
		return err
	}
	tty := info.Config != nil && info.Config.Tty
	lo := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: opts.Follow, Timestamps: opts.Timestamps, Tail: "all"}
	if opts.Tail > 0 {
		lo.Tail = strconv.Itoa(opts.Tail)
	}
	if !opts.Since.IsZero() {
		lo.Since = strconv.FormatInt(opts.Since.Unix(), 10)
	}
	rc, err := c.api.ContainerLogs(ctx, id, lo)
	if err != nil {
		return c.classify("logs", id, err)
	}
	defer rc.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if tty {
		_, err = io.Copy(stdout, rc)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, rc)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return c.classify("logs", id, err)
	}
	return nil
}
