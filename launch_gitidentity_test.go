package podbot

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/podbot/podbot/config"
	"github.com/podbot/podbot/launchplan"
)

// launchRecorder is an engine that accepts a launch: image inspect,
// create, start, inspect, archive uploads (their entries and contents
// recorded), remove; every exec is recorded and refused.
type launchRecorder struct {
	mu       sync.Mutex
	calls    []string
	execs    []string
	archives map[string]string // "dir/name" -> contents
	env      []string
	readOnly bool
}

func (f *launchRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := apiPrefix.ReplaceAllString(r.URL.Path, "")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+p)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case p == "/_ping":
		w.Header().Set("Api-Version", "1.41")
		_, _ = io.WriteString(w, "OK")
	case strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		_, _ = io.WriteString(w, `{"Id":"sha256:0123","Config":{"User":""}}`)
	case p == "/containers/create":
		var body struct {
			container.Config
			HostConfig container.HostConfig
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.env, f.readOnly = body.Env, body.HostConfig.ReadonlyRootfs
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"Id":"c0ffee00","Warnings":[]}`)
	case strings.HasSuffix(p, "/start"):
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(p, "/archive") && r.Method == http.MethodPut:
		dir := r.URL.Query().Get("path")
		tr := tar.NewReader(r.Body)
		for {
			hdr, err := tr.Next()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(tr)
			f.archives[dir+"/"+hdr.Name] = string(b)
		}
		w.WriteHeader(http.StatusOK)
	case strings.HasSuffix(p, "/exec"):
		b, _ := io.ReadAll(r.Body)
		f.execs = append(f.execs, string(b))
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"no exec expected"}`)
	case strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/json"):
		_ = json.NewEncoder(w).Encode(container.InspectResponse{
			ContainerJSONBase: &container.ContainerJSONBase{ID: "c0ffee00", Name: "/podbot-id", State: &container.State{Status: "running", Running: true}},
			Config:            &container.Config{},
		})
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"unexpected route `+p+`"}`)
	}
}

// TestLaunchWritesGitIdentityWithoutExec: the git identity reaches the
// agent's home in the credentials upload (or, on a read-only root
// filesystem, its environment); no step runs an exec for it.
func TestLaunchWritesGitIdentityWithoutExec(t *testing.T) {
	identity := map[string]string{"user.name": `Ada "the first" Lovelace`, "user.email": "ada@example.invalid"}
	for _, readOnly := range []bool{false, true} {
		f := &launchRecorder{archives: map[string]string{}}
		conn := serveFakeEngine(t, f)
		cfg := config.Default()
		cfg.Image = "localhost/podbot-sandbox:latest"
		cfg.Network.Mode = config.NetworkNone
		cfg.Creds.CopyClaude, cfg.Creds.CopyCodex = false, false
		cfg.Sandbox.ReadOnlyRootfs = readOnly
		var steps []string
		sb, err := Launch(context.Background(), conn, LaunchOptions{
			Config: cfg, Intent: launchplan.IntentInteractive, Name: "podbot-id",
			GitConfig: func(key string) (string, error) { return identity[key], nil },
			Progress:  func(step, detail string) { steps = append(steps, step+": "+detail) },
		})
		if err != nil {
			t.Fatalf("readOnly=%v: Launch: %v\ncalls: %v", readOnly, err, f.calls)
		}
		_ = sb
		f.mu.Lock()
		if len(f.execs) != 0 {
			t.Errorf("readOnly=%v: the launch ran %d execs: %v", readOnly, len(f.execs), f.execs)
		}
		gitconfig, uploaded := f.archives["/root/.gitconfig"]
		if !readOnly {
			if !uploaded || !strings.Contains(gitconfig, `name = "Ada \"the first\" Lovelace"`) || !strings.Contains(gitconfig, `email = "ada@example.invalid"`) {
				t.Errorf("uploaded archives %v; want /root/.gitconfig with the identity", f.archives)
			}
			if slices.ContainsFunc(f.env, func(e string) bool { return strings.HasPrefix(e, "GIT_CONFIG_") }) {
				t.Errorf("identity in the environment too: %v", f.env)
			}
		} else {
			if uploaded {
				t.Error("a .gitconfig was uploaded to a read-only root filesystem")
			}
			for _, want := range []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", `GIT_CONFIG_VALUE_0=Ada "the first" Lovelace`,
				"GIT_CONFIG_KEY_1=user.email", "GIT_CONFIG_VALUE_1=ada@example.invalid"} {
				if !slices.Contains(f.env, want) {
					t.Errorf("container env %v lacks %q", f.env, want)
				}
			}
			if !f.readOnly {
				t.Error("the container was not created with a read-only root filesystem")
			}
		}
		f.mu.Unlock()
		if !slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, StepGitIdentity+": user.name and user.email in ") }) {
			t.Errorf("readOnly=%v: steps %q; want the git identity step saying where the identity went", readOnly, steps)
		}
	}
}
