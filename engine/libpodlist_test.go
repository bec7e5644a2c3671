package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
)

// libpodRows is Podman 4.3's native list answer for two containers (one
// running, one exited), trimmed of fields podbot does not read.
const libpodRows = `[
{"AutoRemove":false,"Command":["sleep","300"],"Created":"2026-11-25T15:20:26.787082902Z","CreatedAt":"","Exited":false,
 "ExitedAt":-62135596800,"ExitCode":0,"Id":"ea68","Image":"localhost/podbot-sandbox:latest","ImageID":"0624",
 "IsInfra":false,"Labels":{"podbot.managed":"true","podbot.intent":"interactive"},"Mounts":[],"Names":["podbot-a"],
 "Namespaces":{},"Networks":["podman"],"Pid":12797,"Pod":"","PodName":"","Ports":null,"Size":null,
 "StartedAt":1795620027,"State":"running","Status":""},
{"Created":"2026-11-25T16:00:00Z","ExitedAt":1795623600,"ExitCode":3,"Id":"ff01","Image":"img","Labels":{"podbot.managed":"true"},
 "Names":["podbot-b"],"StartedAt":1795620000,"State":"exited","Status":"","Size":{"rootFsSize":1048576,"rwSize":4096}}
]`

func TestListUsesPodmansNativeListOnPodman(t *testing.T) {
	f := newFakeEngine(t)
	f.podman = true
	var query map[string][]string
	f.handle("GET /libpod/containers/json", func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query()
		_, _ = w.Write([]byte(libpodRows))
	})
	conn := f.connect()
	if err := conn.Ping(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if !conn.IsPodman() {
		t.Fatal("a ping with Libpod-Api-Version did not mark the engine as Podman")
	}
	rows, err := conn.List(context.Background(), map[string]string{"podbot.managed": "true"}, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.callCount("GET /containers/json"); n != 0 {
		t.Errorf("the compatible list was called %d times on Podman", n)
	}
	if n := f.callCount("GET /containers/{id}/json"); n != 0 {
		t.Errorf("%d containers were inspected; want one list call", n)
	}
	args, err := filters.FromJSON(first(query["filters"]))
	if err != nil || !args.ExactMatch("label", "podbot.managed=true") || first(query["all"]) != "true" || first(query["size"]) != "true" {
		t.Errorf("query = %v, want the label filter, all and size", query)
	}
	if len(rows) != 2 {
		t.Fatalf("rows = %+v", rows)
	}
	// Newest first: podbot-b was created later.
	b, a := rows[0], rows[1]
	if b.Name != "podbot-b" || b.ID != "ff01" || b.State != "exited" || b.SizeRw != 4096 || b.SizeRootFs != 1<<20 ||
		b.Created != time.Date(2026, 11, 25, 16, 0, 0, 0, time.UTC) {
		t.Errorf("exited row = %+v", b)
	}
	if a.Name != "podbot-a" || a.Image != "localhost/podbot-sandbox:latest" || a.Labels["podbot.intent"] != "interactive" ||
		len(a.Status) < 3 || a.Status[:3] != "Up " {
		t.Errorf("running row = %+v", a)
	}
}

func TestListUsesTheCompatibleListOnDocker(t *testing.T) {
	f := newFakeEngine(t)
	conn := f.connect()
	if err := conn.Ping(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if conn.IsPodman() {
		t.Fatal("Docker taken for Podman")
	}
	if _, err := conn.List(context.Background(), nil, true, false); err != nil {
		t.Fatal(err)
	}
	if f.callCount("GET /containers/json") != 1 || f.callCount("GET /libpod/containers/json") != 0 {
		t.Errorf("calls = %v, want one compatible list", f.calls)
	}
}

func TestListReportsALibpodAnswerItCannotRead(t *testing.T) {
	for name, body := range map[string]string{"not JSON": "<html>", "wrong shape": `{"Id":"x"}`, "bad time": `[{"Created":"yesterday"}]`} {
		t.Run(name, func(t *testing.T) {
			f := newFakeEngine(t)
			f.podman = true
			f.handle("GET /libpod/containers/json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
			conn := f.connect()
			if err := conn.Ping(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.List(context.Background(), nil, true, false); err == nil {
				t.Fatal("List accepted an answer that is not a container list")
			}
		})
	}
}

func TestCompatState(t *testing.T) {
	for in, want := range map[string]string{"configured": "created", "initialized": "created", "stopped": "exited",
		"running": "running", "exited": "exited", "paused": "paused", "created": "created"} {
		if got := compatState(in); got != want {
			t.Errorf("compatState(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLibpodStatus(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cases := []struct {
		row  libpodContainer
		want string
	}{
		{libpodContainer{State: "running", StartedAt: now.Add(-5 * time.Minute).Unix()}, "Up 5 minutes"},
		{libpodContainer{State: "paused", StartedAt: now.Add(-2 * time.Hour).Unix()}, "Up 2 hours (Paused)"},
		{libpodContainer{State: "exited", ExitCode: 137, ExitedAt: now.Add(-3 * time.Second).Unix()}, "Exited (137) 3 seconds ago"},
		{libpodContainer{State: "stopped", ExitedAt: -62135596800}, "Exited (0) Less than a second ago"},
		{libpodContainer{State: "running", StartedAt: now.Add(time.Hour).Unix()}, "Up Less than a second"},
		{libpodContainer{State: "configured"}, "Created"},
		{libpodContainer{State: "removing"}, "Removing"},
		{libpodContainer{}, "Unknown"},
	}
	for _, tc := range cases {
		if got := libpodStatus(tc.row, now); got != tc.want {
			t.Errorf("libpodStatus(%+v) = %q, want %q", tc.row, got, tc.want)
		}
	}
}

func FuzzParseLibpodList(f *testing.F) {
	f.Add([]byte(libpodRows))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"State":"\u00e9x","Names":[]}]`))
	f.Add([]byte(`[{"State":"running","StartedAt":-9223372036854775808}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		rows, err := parseLibpodList(body, time.Unix(1_800_000_000, 0))
		if err != nil {
			return
		}
		var raw []json.RawMessage
		if json.Unmarshal(body, &raw) == nil && len(rows) != len(raw) {
			t.Fatalf("%d rows from %d entries", len(rows), len(raw))
		}
		for _, r := range rows {
			if r.Status == "" {
				t.Fatalf("empty status for %+v", r)
			}
		}
	})
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
