package kube

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podbot/podbot/errdefs"
)

func TestParseConfigzPidsLimit(t *testing.T) {
	for _, tc := range []struct {
		body    string
		want    int64
		wantErr bool
	}{
		{`{"kubeletconfig":{"podPidsLimit":2048,"maxPods":50}}`, 2048, false},
		{`{"kubeletconfig":{"podPidsLimit":-1}}`, -1, false},
		{`{"kubeletconfig":{"maxPods":50}}`, -1, false},
		{`{"other":{}}`, 0, true},
		{`{"kubeletconfig":{"podPidsLimit":"2048"}}`, 0, true},
		{`not json`, 0, true},
		{``, 0, true},
	} {
		got, err := ParseConfigzPidsLimit([]byte(tc.body))
		if (err != nil) != tc.wantErr || err == nil && got != tc.want {
			t.Errorf("%s: %d, %v; want %d (error %v)", tc.body, got, err, tc.want, tc.wantErr)
		}
	}
}

// FuzzConfigzPidsLimit: any answer parses or is an error; never a panic,
// and a limit is reported only from a kubeletconfig object (a JSON object
// key encoding/json matches without regard to case).
func FuzzConfigzPidsLimit(f *testing.F) {
	for _, s := range []string{`{"kubeletconfig":{"podPidsLimit":2048}}`, `{"kubeletconfig":null}`, `{}`, `[]`, `{"kubeletconfig":{"podPidsLimit":1e99}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := ParseConfigzPidsLimit([]byte(in))
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &top) != nil {
			t.Fatalf("%q gave %d but is no JSON object", in, n)
		}
		for k, v := range top {
			if strings.EqualFold(k, "kubeletconfig") && string(v) != "null" {
				return
			}
		}
		t.Fatalf("%q gave %d without a kubeletconfig object", in, n)
	})
}

// fakeAPIServer serves the node list and each node's /configz from
// configz (a status code answers instead when it is set), and returns a
// client connected to it through a kubeconfig.
func fakeAPIServer(t *testing.T, nodes []string, configz map[string]string, status map[string]int) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := status[r.URL.Path]; code != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
			return
		}
		if r.URL.Path == "/api/v1/nodes" {
			items := make([]string, 0, len(nodes))
			for _, n := range nodes {
				items = append(items, `{"metadata":{"name":"`+n+`"}}`)
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","items":[` + strings.Join(items, ",") + `]}`))
			return
		}
		for n, body := range configz {
			if r.URL.Path == "/api/v1/nodes/"+n+"/proxy/configz" {
				_, _ = w.Write([]byte(body))
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + srv.URL +
		"\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
	if err := os.WriteFile(kubeconfig, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(Options{Kubeconfig: kubeconfig, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPodPidsLimits(t *testing.T) {
	c := fakeAPIServer(t, []string{"a", "b", "c"}, map[string]string{
		"a": `{"kubeletconfig":{"podPidsLimit":2048}}`,
		"b": `{"kubeletconfig":{}}`,
	}, map[string]int{"/api/v1/nodes/c/proxy/configz": http.StatusForbidden})
	got, err := c.PodPidsLimits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %+v", got)
	}
	if got[0].Node != "a" || !got[0].Limited() || got[0].Limit != 2048 {
		t.Errorf("node a: %+v", got[0])
	}
	if got[1].Node != "b" || got[1].Limited() || got[1].Err != nil || got[1].Limit != -1 {
		t.Errorf("node b: %+v", got[1])
	}
	var ce *errdefs.ContainerError
	if got[2].Limited() || !errors.Is(got[2].Err, errdefs.ErrPermissionDenied) || !errors.As(got[2].Err, &ce) || !strings.Contains(ce.Hint, "nodes/proxy") {
		t.Errorf("node c: %+v", got[2])
	}
}

func TestPodPidsLimitsListRefused(t *testing.T) {
	c := fakeAPIServer(t, nil, nil, map[string]int{"/api/v1/nodes": http.StatusForbidden})
	_, err := c.PodPidsLimits(context.Background())
	var ce *errdefs.ContainerError
	if !errors.Is(err, errdefs.ErrPermissionDenied) || !errors.As(err, &ce) || !strings.Contains(ce.Hint, "list on nodes") {
		t.Errorf("refused list: %v", err)
	}
}

func TestPodPidsLimitsFakeClientset(t *testing.T) {
	if _, err := NewForClientset(nil, "ns", Options{}).PodPidsLimits(context.Background()); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("fake clientset: %v", err)
	}
}
