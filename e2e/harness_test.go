//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// engineUnderTest is one real engine the suite runs against.
type engineUnderTest struct {
	Name     string // "podman" or "docker"
	Endpoint string // unix:///...
	API      *client.Client
}

var suite struct {
	engines []engineUnderTest
	bin     string
	runID   string
}

func TestMain(m *testing.M) {
	code, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup failed: %v\n", err)
		os.Exit(1)
	}
	if code >= 0 {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// setup connects to every named engine. It returns -1 to go on with the
// tests, or an exit status to stop with.
func setup() (int, error) {
	suite.bin = os.Getenv("PODBOT_E2E_BIN")
	if suite.bin == "" {
		return 0, fmt.Errorf("PODBOT_E2E_BIN is not set: run the suite with `make test-e2e`")
	}
	if _, err := os.Stat(filepath.Join(suite.bin, "podbot")); err != nil {
		return 0, fmt.Errorf("podbot binary missing in PODBOT_E2E_BIN=%s: %w", suite.bin, err)
	}
	suite.runID = fmt.Sprintf("e2e%d", time.Now().UnixNano()%1_000_000_000)
	named := map[string]string{
		"podman": os.Getenv("PODBOT_E2E_PODMAN_SOCKET"),
		"docker": os.Getenv("PODBOT_E2E_DOCKER_SOCKET"),
	}
	ci := os.Getenv("CI") == "true"
	for _, name := range []string{"podman", "docker"} {
		ep := named[name]
		if ep == "" {
			if ci {
				return 0, fmt.Errorf("CI=true but no %s engine was named (PODBOT_E2E_%s_SOCKET)", name, strings.ToUpper(name))
			}
			fmt.Fprintf(os.Stderr, "e2e: %s engine not named; its tests will not run\n", name)
			continue
		}
		api, err := client.NewClientWithOpts(client.WithHost(ep), client.WithAPIVersionNegotiation())
		if err != nil {
			return 0, fmt.Errorf("%s engine %s: %w", name, ep, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err = api.Ping(ctx)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("%s engine %s was named but does not answer a ping: %w", name, ep, err)
		}
		suite.engines = append(suite.engines, engineUnderTest{Name: name, Endpoint: ep, API: api})
	}
	if len(suite.engines) == 0 {
		return 0, fmt.Errorf("no engine named: set PODBOT_E2E_PODMAN_SOCKET and/or PODBOT_E2E_DOCKER_SOCKET (make test-e2e does)")
	}
	return -1, nil
}

// forEachEngine runs fn as a subtest per engine, the engines' subtests at
// the same time: the engines share nothing but this machine (every name,
// directory, port and token a test makes is its own per engine), and most
// of a test's time is spent waiting on its engine. It returns once every
// subtest has, so what the test deferred or left to its cleanups runs
// after them, as it would with the subtests one after the other. A test
// whose engine subtests must not overlap uses forEachEngineSerial and says
// why.
//
// The longest tests, most of whose time is waiting (token lifetimes, pool
// backoffs, interrupted creates), also call t.Parallel: go test runs them
// after all the others, -parallel of them at a time. Each touches only the
// containers, pools, directories and ports it names itself. A test that
// reads or changes what is engine-wide (ps, prune, token-daemon --all, CPU
// placement, the images) or holds a fixed host port must not: it runs
// alone.
func forEachEngine(t *testing.T, fn func(t *testing.T, e engineUnderTest)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, e := range suite.engines {
		wg.Go(func() { t.Run(e.Name, func(t *testing.T) { fn(t, e) }) })
	}
	wg.Wait()
}

// forEachEngineSerial runs fn as a subtest per engine, one engine after the
// other, for the tests that hold something of the host's only one of them
// can have at a time.
func forEachEngineSerial(t *testing.T, fn func(t *testing.T, e engineUnderTest)) {
	t.Helper()
	for _, e := range suite.engines {
		t.Run(e.Name, func(t *testing.T) { fn(t, e) })
	}
}

// result is what one podbot invocation did.
type result struct {
	Code           int
	Stdout, Stderr string
}

// runPodbot runs the podbot binary against engine e with args.
func runPodbot(t *testing.T, ctx context.Context, e engineUnderTest, args ...string) result {
	t.Helper()
	full := append([]string{"--engine-socket", e.Endpoint}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "podbot"), full...)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "PODBOT_CONFIG_PATH="+cfg)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("podbot %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{Code: code, Stdout: out.String(), Stderr: errOut.String()}
}

// decodeJSON decodes s into v or fails the test.
func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("stdout is not the JSON expected: %v\n%s", err, s)
	}
}
