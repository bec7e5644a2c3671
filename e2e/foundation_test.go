//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/podbot/podbot"
)

func TestDoctorReportsEngineKind(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res := runPodbot(t, ctx, e, "doctor", "--json")
		var report podbot.DoctorReport
		decodeJSON(t, res.Stdout, &report)
		if report.Engine == nil {
			t.Fatalf("doctor reported no engine (exit %d):\n%s\n%s", res.Code, res.Stdout, res.Stderr)
		}
		if report.Engine.Kind != e.Name {
			t.Errorf("doctor says engine kind %q, want %q", report.Engine.Kind, e.Name)
		}
		if report.Engine.APIVersion == "" || report.Engine.Version == "" {
			t.Errorf("doctor left versions empty: %+v", report.Engine)
		}
		if report.Failed() || res.Code != 0 {
			t.Errorf("doctor failed (exit %d): %+v", res.Code, report.Checks)
		}
		// The egress proxy check started a real proxy and left nothing.
		var proxy *podbot.Check
		for i, c := range report.Checks {
			if c.Name == podbot.ProxyCheckName {
				proxy = &report.Checks[i]
			}
		}
		if proxy == nil || proxy.Status != podbot.CheckOK {
			t.Errorf("doctor's egress proxy check: %+v", proxy)
		} else {
			t.Logf("%s: %s", e.Name, proxy.Detail)
		}
		left, err := e.API.ContainerList(ctx, container.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range left {
			for _, n := range c.Names {
				if strings.Contains(n, "podbot-doctor-") {
					t.Errorf("doctor left container %s", n)
				}
			}
		}
		nets, err := e.API.NetworkList(ctx, network.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nets {
			if strings.Contains(n.Name, "podbot-doctor-") {
				t.Errorf("doctor left network %s", n.Name)
			}
		}
	})
}

func TestImageBuildBootstrapRunsOnEngine(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		res := runPodbot(t, ctx, e, "image", "build", "--bootstrap", "--json")
		if res.Code != 0 {
			t.Fatalf("image build --bootstrap exit %d:\n%s", res.Code, res.Stderr)
		}
		var built podbot.ImageBuildResult
		decodeJSON(t, res.Stdout, &built)
		if built.Image != podbot.DefaultImage() {
			t.Fatalf("built %q, want %q", built.Image, podbot.DefaultImage())
		}
		// A second build is skipped: the image is current.
		again := runPodbot(t, ctx, e, "image", "build", "--bootstrap", "--json")
		var second podbot.ImageBuildResult
		decodeJSON(t, again.Stdout, &second)
		if !second.Skipped {
			t.Errorf("second build was not skipped: %+v", second)
		}
		out := runInImage(t, ctx, e, built.Image, "sh", "-c", "git --version && python3 --version && test -x /usr/local/bin/podbot-askpass && echo askpass-ok")
		for _, want := range []string{"git version", "Python 3", "askpass-ok"} {
			if !strings.Contains(out, want) {
				t.Errorf("image %s on %s: output lacks %q:\n%s", built.Image, e.Name, want, out)
			}
		}
	})
}

// runInImage runs cmd in a throwaway container of ref and returns its output.
func runInImage(t *testing.T, ctx context.Context, e engineUnderTest, ref string, cmd ...string) string {
	t.Helper()
	name := suite.runID + "-" + e.Name + "-run"
	created, err := e.API.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: cmd, Labels: map[string]string{"podbot.e2e": suite.runID}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, name)
	if err != nil {
		t.Fatalf("create %s: %v", ref, err)
	}
	defer e.API.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	waitC, errC := e.API.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := e.API.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	select {
	case w := <-waitC:
		if w.StatusCode != 0 {
			t.Errorf("%v exited %d", cmd, w.StatusCode)
		}
	case err := <-errC:
		t.Fatalf("wait: %v", err)
	}
	logs, err := e.API.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		t.Fatalf("logs: %v", err)
	}
	return out.String()
}
