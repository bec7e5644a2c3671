package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot"
	"github.com/podbot/podbot/errdefs"
)

// run invokes Main with an isolated environment and returns exit code, stdout, stderr.
func run(t *testing.T, environ []string, args ...string) (int, string, string) {
	t.Helper()
	ios, out, errOut := testIO()
	home := t.TempDir()
	env := append([]string{"HOME=" + home, "XDG_RUNTIME_DIR=" + home}, environ...)
	code := Main(context.Background(), ios, args, env)
	return code, out.String(), errOut.String()
}

func TestExitCodeMap(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&usageError{msg: "bad flag"}, exitUsage},
		{&errdefs.ConfigError{Key: "image"}, exitConfig},
		{fmt.Errorf("wrapped: %w", &errdefs.ContainerError{Op: "ping"}), exitEngine},
		{&errdefs.GitHubError{Op: "load key"}, exitGitHub},
		{&errdefs.FilesystemError{Op: "read", Path: "/x"}, exitFilesystem},
		{&errdefs.ExitError{Code: 42}, 42},
		{&silentError{code: 1}, 1},
		{context.Canceled, exitInterrupted},
		{errors.New("anything else"), exitFailure},
	}
	for _, tc := range cases {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestVersionJSON(t *testing.T) {
	code, out, _ := run(t, nil, "version", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != podbot.Version {
		t.Errorf("version %q, want %q", v.Version, podbot.Version)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"version", "--no-such-flag"},
		{"version", "extra-arg"},
		{"completion", "tcsh"},
		{"--log-format", "xml", "version"},
	} {
		code, out, errOut := run(t, nil, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitUsage, errOut)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout: %q", args, out)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, _ := run(t, nil, "completion", sh)
		if code != 0 || !strings.Contains(out, "podbot") {
			t.Errorf("completion %s: exit %d, %d bytes", sh, code, len(out))
		}
	}
}

func TestConfigShowSources(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[sandbox]\nmemory = \"2g\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, []string{"PODBOT_SANDBOX_PRIVILEGED=true"},
		"--config", cfg, "--image", "example/img:1", "config", "show", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Files  []string `json:"files"`
		Values []struct {
			Key    string `json:"key"`
			Text   string `json:"text"`
			Source string `json:"source"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string][2]string{
		"sandbox.memory":     {"2g", cfg},
		"sandbox.privileged": {"true", "PODBOT_SANDBOX_PRIVILEGED"},
		"image":              {"example/img:1", "--image"},
		"agent.kind":         {"claude", "default"},
	}
	seen := 0
	for _, v := range doc.Values {
		if w, ok := want[v.Key]; ok {
			seen++
			if v.Text != w[0] || v.Source != w[1] {
				t.Errorf("%s = %q from %q, want %q from %q", v.Key, v.Text, v.Source, w[0], w[1])
			}
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of %d keys in %s", seen, len(want), out)
	}
}

func TestBadConfigExit3NamesKey(t *testing.T) {
	code, _, errOut := run(t, []string{"PODBOT_SANDBOX_PRIVILEGED=maybe"}, "config", "show")
	if code != exitConfig {
		t.Fatalf("exit %d, want %d", code, exitConfig)
	}
	for _, want := range []string{"sandbox.privileged", "PODBOT_SANDBOX_PRIVILEGED"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
}

func TestDoctorFailsWithoutEngine(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "missing.sock")
	code, out, _ := run(t, nil, "--engine-socket", "unix://"+sock, "doctor", "--json")
	if code != exitFailure {
		t.Fatalf("exit %d, want %d", code, exitFailure)
	}
	var report podbot.DoctorReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, c := range report.Checks {
		if c.Name == "engine reachable" && c.Status == podbot.CheckFail && strings.Contains(c.Detail, sock) {
			found = true
		}
	}
	if !found {
		t.Errorf("no failed reachability check naming %s: %+v", sock, report.Checks)
	}
}

func TestEngineErrorExit4(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "missing.sock")
	code, _, errOut := run(t, nil, "--engine-socket", sock, "image", "build")
	if code != exitEngine {
		t.Fatalf("exit %d, want %d (%s)", code, exitEngine, errOut)
	}
	if !strings.Contains(errOut, sock) {
		t.Errorf("error does not name the socket: %s", errOut)
	}
}

// TestEndpointPasswordNeverPrinted plays a user who put a password in the
// engine endpoint (flag, environment, config file): no command prints it.
func TestEndpointPasswordNeverPrinted(t *testing.T) {
	const ep = "tcp://user:S3cretPw@127.0.0.1:1"
	cfg := filepath.Join(t.TempDir(), "podbot.toml")
	if err := os.WriteFile(cfg, []byte("engine_socket = \""+ep+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		environ []string
		args    []string
	}{
		{"flag doctor", nil, []string{"--engine-socket", ep, "doctor"}},
		{"flag doctor json", nil, []string{"--engine-socket", ep, "doctor", "--json"}},
		{"flag ps", nil, []string{"--engine-socket", ep, "--log-level", "debug", "ps"}},
		{"env ps", []string{"PODBOT_ENGINE_SOCKET=" + ep}, []string{"ps"}},
		{"DOCKER_HOST ps", []string{"DOCKER_HOST=" + ep}, []string{"ps"}},
		{"config file ps", nil, []string{"--config", cfg, "ps"}},
		{"config show", nil, []string{"--engine-socket", ep, "config", "show"}},
		{"config show json", nil, []string{"--engine-socket", ep, "config", "show", "--json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, out, errOut := run(t, tc.environ, tc.args...)
			if strings.Contains(out+errOut, "S3cretPw") {
				t.Errorf("password printed:\nstdout: %s\nstderr: %s", out, errOut)
			}
		})
	}
}
