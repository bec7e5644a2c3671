package egressnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// maxLoadedBytes bounds the proxy's LoadedFile as podbot reads it (a hex
// digest and a newline).
const maxLoadedBytes = 128

// loadedPoll is how often ApplyPolicy looks at the proxy's LoadedFile.
const loadedPoll = 50 * time.Millisecond

// ApplyPolicy writes p into d's policy file (atomically, WritePolicy) and
// waits, up to timeout, until the proxy records in d's LoadedFile that the
// content written is the policy in force. A proxy that does not confirm in
// time (stopped, or older than the --loaded flag) is an error matching
// errdefs.ErrTimeout. poke, when set, is called once after the write to
// have the proxy look at once (podbot sends it SIGHUP); its error is
// ignored, the proxy's poll comes anyway.
func ApplyPolicy(ctx context.Context, d Dirs, p *egress.Policy, timeout time.Duration, poke func(context.Context) error) error {
	if err := WritePolicy(d.PolicyPath(), p); err != nil {
		return err
	}
	if poke != nil {
		_ = poke(ctx)
	}
	_, want, err := egress.ReadPolicyFileDigest(d.PolicyPath())
	if err != nil {
		return &errdefs.FilesystemError{Op: "read", Path: d.PolicyPath(), Msg: "cannot read back the egress policy", Err: err}
	}
	return WaitLoaded(ctx, d, want, timeout)
}

// WaitLoaded waits, up to timeout, until d's LoadedFile holds digest.
func WaitLoaded(ctx context.Context, d Dirs, digest string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(loadedPoll)
	defer t.Stop()
	for {
		got, err := readLoaded(d.LoadedPath())
		if err == nil && got == digest {
			return nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return &errdefs.FilesystemError{Op: "read", Path: d.LoadedPath(), Msg: "cannot read which egress policy the proxy has in force", Err: err}
		}
		if time.Now().After(deadline) {
			return &errdefs.FilesystemError{Op: "wait", Path: d.LoadedPath(), Reason: errdefs.ErrTimeout,
				Msg: "the egress proxy did not confirm the new policy within " + timeout.String() + " (is it running, and is podbot-sidecar the same version as podbot?)"}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// readLoaded reads a LoadedFile, bounded, without its trailing newline.
func readLoaded(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLoadedBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxLoadedBytes {
		return "", nil // not a digest: never equal to one
	}
	return string(bytes.TrimSpace(b)), nil
}
