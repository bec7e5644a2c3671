//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/podbot/podbot"
)

// TestPsMatchesTheCompatibleList: `podbot ps -a --json` (Podman's native
// list on Podman, the compatible one on Docker) gives the same names, ids,
// images, states, creation times and labels as the engine's
// Docker-compatible list, and a status of the same kind (Up ..., Exited
// (3) ..., Created).
func TestPsMatchesTheCompatibleList(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineUnderTest) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		session := suite.runID + "-ps-" + e.Name
		labels := map[string]string{"podbot.managed": "true", "podbot.session": session}
		for i, cmd := range [][]string{{"sleep", "300"}, {"sh", "-c", "exit 3"}, nil} {
			name := fmt.Sprintf("%s-%d", testName(e, "ps"), i)
			removeOnCleanup(t, e, name)
			cfg := &container.Config{Image: sandboxImage, Cmd: cmd, Labels: labels}
			if cmd == nil {
				cfg.Cmd = []string{"true"}
			}
			if _, err := e.API.ContainerCreate(ctx, cfg, nil, nil, nil, name); err != nil {
				t.Fatal(err)
			}
			if cmd != nil {
				if err := e.API.ContainerStart(ctx, name, container.StartOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The exited one has exited.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			in, err := e.API.ContainerInspect(ctx, testName(e, "ps")+"-1")
			if err == nil && !in.State.Running {
				break
			}
		}
		want, err := e.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "podbot.session="+session))})
		if err != nil {
			t.Fatal(err)
		}
		res := runPodbot(t, ctx, e, "ps", "-a", "--json")
		var rows []podbot.Container
		decodeJSON(t, res.Stdout, &rows)
		got := map[string]podbot.Container{}
		for _, r := range rows {
			if r.Labels["podbot.session"] == session {
				got[r.ID] = r
			}
		}
		if len(got) != 3 || len(want) != 3 {
			t.Fatalf("podbot ps lists %d of this test's containers, the engine %d:\n%s", len(got), len(want), res.Stdout)
		}
		// Podman's compatible list says stopped for an exited container
		// until its cleanup ran; podbot says exited, as Docker does.
		compat := map[string]string{"stopped": "exited", "configured": "created"}
		for _, w := range want {
			if s, ok := compat[string(w.State)]; ok {
				w.State = container.ContainerState(s)
			}
			g, ok := got[w.ID]
			switch {
			case !ok:
				t.Errorf("podbot ps misses %s", w.Names)
				continue
			case "/"+g.Name != w.Names[0] || g.Image != w.Image || g.State != string(w.State) || g.Created.Unix() != w.Created:
				t.Errorf("podbot ps row %+v, engine row %+v", g, w)
			case g.Labels["podbot.session"] != session:
				t.Errorf("labels %v", g.Labels)
			}
			kind := func(s string) string { return strings.SplitN(s, " ", 2)[0] }
			if kind(g.Status) != kind(w.Status) || (w.State == "exited" && !strings.HasPrefix(g.Status, "Exited (3)")) {
				t.Errorf("%s: status %q, engine says %q", g.Name, g.Status, w.Status)
			}
		}
	})
}
