// Package githubtest provides a fake GitHub REST API for tests of code that
// authenticates as a GitHub App.
//
// The fake verifies every App JWT (RS256 signature with the App's public key,
// issuer, issue and expiry times) the way GitHub does, answers GET /app,
// GET /app/installations/{id} and POST /app/installations/{id}/access_tokens,
// issues installation tokens with a configurable, short lifetime, and reports
// which token is currently valid so that a test's git server can accept only
// that one.
package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Routes that failures can be injected into with Server.Fail.
const (
	RouteApp          = "GET /app"
	RouteInstallation = "GET /app/installations/{id}"
	RouteAccessTokens = "POST /app/installations/{id}/access_tokens"
)

// Options configure a fake server. Zero fields take the defaults shown.
type Options struct {
	// AppID is the App id the JWT issuer must name (default 1).
	AppID int64
	// InstallationID is the one installation the App has (default 2).
	InstallationID int64
	// TokenTTL is the lifetime of issued tokens (default one hour).
	TokenTTL time.Duration
	// Now is the clock for token expiry (default time.Now). JWT times are
	// always checked against the wall clock, as the signer uses it.
	Now func() time.Time
	// PathPrefix serves the API below a prefix, as GitHub Enterprise Server
	// does with "/api/v3" (default none).
	PathPrefix string
	// KeepOldTokensValid keeps earlier tokens valid until they expire, as
	// GitHub does. By default only the latest token is valid, so tests can
	// prove a refreshed token is in use.
	KeepOldTokensValid bool
}

// Failure is a canned error answer for one route.
type Failure struct {
	// Status is the HTTP status to answer with.
	Status int
	// Header is added to the answer (for example X-RateLimit-Remaining).
	Header http.Header
	// Message is the "message" field of the JSON body.
	Message string
	// DocumentationURL is the "documentation_url" field of the JSON body.
	DocumentationURL string
	// Times is how many requests fail; zero means until ClearFailures.
	Times int
}

type issued struct {
	value     string
	expiresAt time.Time
}

// TokenRequest is the body of one token request: the repository names and
// permissions the token was asked to be limited to (both empty when the
// request asked for the installation's full grant).
type TokenRequest struct {
	Repositories []string          `json:"repositories"`
	Permissions  map[string]string `json:"permissions"`
}

// Server is a running fake GitHub API.
type Server struct {
	// URL is the API root with a trailing slash; use it as the App's API URL.
	URL string

	srv  *httptest.Server
	opts Options
	pub  *rsa.PublicKey

	mu         sync.Mutex
	tokens     []issued
	failures   map[string]*Failure
	badJWTs    int
	requests   map[string]int
	lastJWTErr string
	scopes     []TokenRequest
}

// NewServer starts a fake GitHub API that trusts JWTs signed by the private
// half of pub. The server is closed when the test ends.
func NewServer(t testing.TB, pub *rsa.PublicKey, opts Options) *Server {
	t.Helper()
	if pub == nil {
		t.Fatal("githubtest: NewServer needs the App's public key")
	}
	if opts.AppID == 0 {
		opts.AppID = 1
	}
	if opts.InstallationID == 0 {
		opts.InstallationID = 2
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.PathPrefix = strings.TrimRight(opts.PathPrefix, "/")
	s := &Server{opts: opts, pub: pub, failures: map[string]*Failure{}, requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc(RouteApp, s.guard(RouteApp, s.handleApp))
	mux.HandleFunc(RouteInstallation, s.guard(RouteInstallation, s.handleInstallation))
	mux.HandleFunc(RouteAccessTokens, s.guard(RouteAccessTokens, s.handleAccessTokens))
	var h http.Handler = mux
	if opts.PathPrefix != "" {
		h = http.StripPrefix(opts.PathPrefix, mux)
	}
	s.srv = httptest.NewServer(h)
	s.URL = s.srv.URL + opts.PathPrefix + "/"
	t.Cleanup(s.srv.Close)
	return s
}

// Client returns an HTTP client that talks to the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close stops the server early (it also stops when the test ends).
func (s *Server) Close() { s.srv.Close() }

// AppID is the App id the server expects.
func (s *Server) AppID() int64 { return s.opts.AppID }

// InstallationID is the App's one installation.
func (s *Server) InstallationID() int64 { return s.opts.InstallationID }

// Fail makes route answer with f until f.Times requests have failed (or
// until ClearFailures when Times is zero). JWTs are still verified first.
func (s *Server) Fail(route string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := f
	s.failures[route] = &cp
}

// ClearFailures removes every injected failure.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.failures)
}

// Issued reports how many installation tokens the server has issued.
func (s *Server) Issued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// Requests reports how many requests reached route (including failed ones,
// excluding those refused for a bad JWT).
func (s *Server) Requests(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[route]
}

// TokenRequests returns the bodies of the token requests answered so far,
// oldest first.
func (s *Server) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.scopes)
}

// RejectedJWTs reports how many requests carried a JWT that failed
// verification, and the reason for the last one.
func (s *Server) RejectedJWTs() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.badJWTs, s.lastJWTErr
}

// CurrentToken returns the latest issued token and its expiry; ok is false
// when no token was issued or the latest one has expired.
func (s *Server) CurrentToken() (value string, expiresAt time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tokens) == 0 {
		return "", time.Time{}, false
	}
	last := s.tokens[len(s.tokens)-1]
	return last.value, last.expiresAt, s.opts.Now().Before(last.expiresAt)
}

// Valid reports whether token is currently accepted: the latest issued token
// before its expiry or, with KeepOldTokensValid, any unexpired issued token.
func (s *Server) Valid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token == "" || len(s.tokens) == 0 {
		return false
	}
	now := s.opts.Now()
	candidates := s.tokens[len(s.tokens)-1:]
	if s.opts.KeepOldTokensValid {
		candidates = s.tokens
	}
	for _, t := range candidates {
		if t.value == token && now.Before(t.expiresAt) {
			return true
		}
	}
	return false
}

// guard verifies the App JWT, counts the request and applies injected
// failures before calling next.
func (s *Server) guard(route string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := verifyJWT(r.Header.Get("Authorization"), s.pub, s.opts.AppID, time.Now()); err != nil {
			s.mu.Lock()
			s.badJWTs++
			s.lastJWTErr = err.Error()
			s.mu.Unlock()
			writeJSON(w, http.StatusUnauthorized, map[string]string{
				"message": "A JSON web token could not be decoded", "documentation_url": "https://docs.github.com/rest",
			})
			return
		}
		s.mu.Lock()
		s.requests[route]++
		f := s.failures[route]
		var answer *Failure
		if f != nil {
			cp := *f
			answer = &cp
			if f.Times > 0 {
				f.Times--
				if f.Times == 0 {
					delete(s.failures, route)
				}
			}
		}
		s.mu.Unlock()
		if answer != nil {
			for k, vs := range answer.Header {
				for _, v := range vs {
					w.Header().Add(k, v)
				}
			}
			body := map[string]string{"message": answer.Message}
			if answer.DocumentationURL != "" {
				body["documentation_url"] = answer.DocumentationURL
			}
			writeJSON(w, answer.Status, body)
			return
		}
		next(w, r)
	}
}

func (s *Server) handleApp(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.opts.AppID, "slug": "podbot-test-app", "name": "podbot test app",
		"owner": map[string]any{"login": "octo-org"},
	})
}

func (s *Server) installationOK(w http.ResponseWriter, r *http.Request) bool {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id != s.opts.InstallationID {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return false
	}
	return true
}

func (s *Server) handleInstallation(w http.ResponseWriter, r *http.Request) {
	if !s.installationOK(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.opts.InstallationID, "app_id": s.opts.AppID,
		"account": map[string]any{"login": "octo-org"}, "repository_selection": "all",
	})
}

func (s *Server) handleAccessTokens(w http.ResponseWriter, r *http.Request) {
	if !s.installationOK(w, r) {
		return
	}
	var req TokenRequest
	if r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
			return
		}
	}
	for name, level := range req.Permissions {
		if level != "read" && level != "write" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{
				"message": "The permission " + name + " must be read or write"})
			return
		}
	}
	s.mu.Lock()
	s.scopes = append(s.scopes, req)
	s.mu.Unlock()
	var raw [20]byte
	if _, err := rand.Read(raw[:]); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"message": "entropy unavailable"})
		return
	}
	tok := issued{value: "ghs_" + hex.EncodeToString(raw[:]), expiresAt: s.opts.Now().Add(s.opts.TokenTTL)}
	s.mu.Lock()
	s.tokens = append(s.tokens, tok)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":                tok.value,
		"expires_at":           tok.expiresAt.UTC().Format(time.RFC3339Nano),
		"permissions":          map[string]string{"contents": "write", "metadata": "read"},
		"repository_selection": selection(req),
	})
}

func selection(req TokenRequest) string {
	if len(req.Repositories) > 0 {
		return "selected"
	}
	return "all"
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
