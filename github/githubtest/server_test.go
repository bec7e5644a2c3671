package githubtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for token expiry.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func appJWT(t *testing.T, appID int64) string {
	now := time.Now()
	return "Bearer " + sign(t, testKey(), map[string]string{"alg": "RS256"},
		map[string]any{"iss": strconv.FormatInt(appID, 10), "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Minute).Unix()})
}

func do(t *testing.T, s *Server, method, path string, auth string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp, body
}

func TestServerTokensAndValidity(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := NewServer(t, &testKey().PublicKey, Options{AppID: 5, InstallationID: 6, TokenTTL: 10 * time.Second, Now: clock.Now})
	auth := appJWT(t, 5)

	if resp, _ := do(t, s, "GET", "app", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /app without a JWT = %d, want 401", resp.StatusCode)
	}
	if n, _ := s.RejectedJWTs(); n != 1 {
		t.Errorf("RejectedJWTs = %d, want 1", n)
	}
	if resp, body := do(t, s, "GET", "app", auth); resp.StatusCode != 200 || body["id"] != float64(5) {
		t.Fatalf("GET /app = %d %v", resp.StatusCode, body)
	}
	if resp, _ := do(t, s, "GET", "app/installations/7", auth); resp.StatusCode != 404 {
		t.Fatalf("unknown installation = %d, want 404", resp.StatusCode)
	}
	resp, first := do(t, s, "POST", "app/installations/6/access_tokens", auth)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("access_tokens = %d", resp.StatusCode)
	}
	tok1, _ := first["token"].(string)
	if exp, _ := first["expires_at"].(string); exp != "2030-01-01T00:00:10Z" {
		t.Errorf("expires_at = %q", exp)
	}
	if !s.Valid(tok1) {
		t.Fatal("fresh token not valid")
	}
	_, second := do(t, s, "POST", "app/installations/6/access_tokens", auth)
	tok2, _ := second["token"].(string)
	if s.Valid(tok1) || !s.Valid(tok2) || s.Issued() != 2 {
		t.Errorf("after reissue: old valid=%v new valid=%v issued=%d", s.Valid(tok1), s.Valid(tok2), s.Issued())
	}
	if cur, _, ok := s.CurrentToken(); !ok || cur != tok2 {
		t.Error("CurrentToken is not the newest token")
	}
	clock.Add(10 * time.Second)
	if s.Valid(tok2) {
		t.Error("token valid at its expiry")
	}
	if _, _, ok := s.CurrentToken(); ok {
		t.Error("CurrentToken reports an expired token as current")
	}
	if s.Valid("") {
		t.Error("empty token valid")
	}
}

func TestServerKeepOldTokensValid(t *testing.T) {
	s := NewServer(t, &testKey().PublicKey, Options{KeepOldTokensValid: true})
	auth := appJWT(t, 1)
	_, a := do(t, s, "POST", "app/installations/2/access_tokens", auth)
	_, b := do(t, s, "POST", "app/installations/2/access_tokens", auth)
	if !s.Valid(a["token"].(string)) || !s.Valid(b["token"].(string)) {
		t.Error("both tokens should stay valid")
	}
}

func TestServerFailures(t *testing.T) {
	s := NewServer(t, &testKey().PublicKey, Options{PathPrefix: "/api/v3/"})
	if s.URL[len(s.URL)-8:] != "/api/v3/" {
		t.Fatalf("URL %q lacks the prefix", s.URL)
	}
	auth := appJWT(t, 1)
	s.Fail(RouteApp, Failure{Status: 503, Times: 2, Header: http.Header{"Retry-After": {"1"}}})
	for i := range 2 {
		if resp, _ := do(t, s, "GET", "app", auth); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("request %d = %d, want injected 503", i, resp.StatusCode)
		}
	}
	if resp, _ := do(t, s, "GET", "app", auth); resp.StatusCode != 200 {
		t.Fatalf("after the failures ran out = %d", resp.StatusCode)
	}
	s.Fail(RouteAccessTokens, Failure{Status: 500})
	for range 3 {
		if resp, _ := do(t, s, "POST", "app/installations/2/access_tokens", auth); resp.StatusCode != 500 {
			t.Fatal("a Times=0 failure must persist")
		}
	}
	s.ClearFailures()
	if resp, _ := do(t, s, "POST", "app/installations/2/access_tokens", auth); resp.StatusCode != 201 {
		t.Fatal("ClearFailures did not clear")
	}
	if got := s.Requests(RouteApp); got != 3 {
		t.Errorf("Requests(RouteApp) = %d, want 3", got)
	}
}
