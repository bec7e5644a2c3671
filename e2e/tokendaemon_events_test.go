//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTokenDaemonFollowsEngineEvents: podbot token-daemon NAME, and
// podbot token-daemon --all (every container over one shared event
// stream), with polling and listing set to an hour, remove the token
// directory as soon as the container is removed, because they follow the
// engine's event stream; the one-container daemon then exits 0 on its own.
func TestTokenDaemonFollowsEngineEvents(t *testing.T) {
	for _, all := range []bool{false, true} {
		mode := "one container"
		if all {
			mode = "--all"
		}
		t.Run(mode, func(t *testing.T) { testTokenDaemonFollowsEngineEvents(t, all) })
	}
}

func testTokenDaemonFollowsEngineEvents(t *testing.T, all bool) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		f := newGHFixture(t, ctx, e, time.Hour, "ghevents")
		sb := launch(t, ctx, f.conn, f.launchOptions())
		if err := sb.Close(ctx, false); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(f.rt, "podbot", f.name)
		first := readToken(t, filepath.Join(dir, "ghapp_token"))

		tomlCfg := fmt.Sprintf("[github]\napp_id = %d\ninstallation_id = %d\nprivate_key_path = %q\napi_url = %q\n",
			f.gh.AppID(), f.gh.InstallationID(), f.keyPath, f.gh.URL)
		args := []string{"--log-level", "debug", "token-daemon", f.name, "--check-interval", "1h"}
		if all {
			args = []string{"--log-level", "debug", "token-daemon", "--all", "--check-interval", "1h", "--list-interval", "1h"}
		}
		cmd := podbotCmd(t, ctx, e, tomlCfg, args...)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+f.rt)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() { _ = cmd.Process.Kill() }()

		// The daemon takes over: it replaces the launch's token at once.
		waitForNewToken(t, ctx, filepath.Join(dir, "ghapp_token"), first, 30*time.Second)
		time.Sleep(time.Second) // let it open the event stream (a removal before that is seen when it opens)
		removed := time.Now()
		if err := f.conn.Remove(ctx, sb.ID, true); err != nil {
			t.Fatal(err)
		}
		// Polling would take an hour; the generous deadline is not a benchmark.
		deadline := removed.Add(15 * time.Second)
		for _, err := os.Stat(dir); err == nil && time.Now().Before(deadline); _, err = os.Stat(dir) {
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("token directory still there %s after the container was removed: %v\n%s", time.Since(removed), err, out.String())
		}
		t.Logf("%s: token directory gone %s after the removal", e.Name, time.Since(removed).Round(time.Millisecond))
		if all {
			return // --all keeps serving the containers to come
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("podbot token-daemon exited with %v after its container went away\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("podbot token-daemon did not exit after its container went away\n%s", out.String())
		}
	})
}
