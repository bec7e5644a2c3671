//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/podbot/podbot/egress"
)

// gitHTTPBackend is git's smart HTTP server program (Debian's git package).
const gitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// gitServer serves bare repositories over git's smart HTTP protocol on all
// host addresses, so containers reach it through their bridge gateway. It
// accepts a request only with Basic auth user x-access-token and a password
// that valid says is the currently valid installation token.
type gitServer struct {
	// BaseURL is the clone base as a container on the engine sees it.
	BaseURL string
	// HostURL is the same server as the host sees it.
	HostURL string

	root  string
	valid func(token string) bool

	backend *cgi.Handler

	mu       sync.Mutex
	accepted map[string]int // token -> requests served
	rejected int
	byHost   map[string][]string // Host header -> passwords sent, in order
}

// startGitServer serves the bare repositories under root for engine e.
func startGitServer(t *testing.T, ctx context.Context, e engineUnderTest, root string, valid func(string) bool) *gitServer {
	t.Helper()
	gw := bridgeGateway(t, ctx, e)
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	s := newGitServer(t, root, valid)
	s.BaseURL = "http://" + net.JoinHostPort(gw, port) + "/"
	s.HostURL = "http://" + net.JoinHostPort("127.0.0.1", port) + "/"
	srv := &http.Server{Handler: s}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// startGitServerTLS is startGitServer over HTTPS, with a certificate for
// name issued by ca; BaseURL is https://name:port/ (the test pins name to
// the bridge gateway with network.resolve) and HostURL is unset.
func startGitServerTLS(t *testing.T, root, name string, ca *egress.CA, valid func(string) bool) (*gitServer, int) {
	t.Helper()
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	s := newGitServer(t, root, valid)
	s.BaseURL = "https://" + net.JoinHostPort(name, strconv.Itoa(port)) + "/"
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.Leaf(h.ServerName) }}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return s, port
}

// newGitServer is the server's handler state, without a listener.
func newGitServer(t *testing.T, root string, valid func(string) bool) *gitServer {
	t.Helper()
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		t.Fatalf("git http-backend missing (%v): install the git package", err)
	}
	return &gitServer{root: root, valid: valid, accepted: map[string]int{}, byHost: map[string][]string{},
		backend: &cgi.Handler{
			Path: gitHTTPBackend,
			Root: "/",
			Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
		}}
}

// ServeHTTP serves git's smart HTTP protocol to requests with Basic auth
// user x-access-token and a valid token, and 401 to any other.
func (s *gitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	if len(s.byHost[r.Host]) < 1000 {
		s.byHost[r.Host] = append(s.byHost[r.Host], pass)
	}
	s.mu.Unlock()
	if !ok || user != "x-access-token" || !s.valid(pass) {
		s.mu.Lock()
		s.rejected++
		s.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="podbot e2e git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	s.accepted[pass]++
	s.mu.Unlock()
	s.backend.ServeHTTP(w, r)
}

// passwords returns the Basic auth passwords sent to host, in order.
func (s *gitServer) passwords(host string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.byHost[host]...)
}

// servedWith reports how many requests the server served with token.
func (s *gitServer) servedWith(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted[token]
}

// status asks the server for a repository's refs with token, as git's
// first request does, and returns the HTTP status.
func (s *gitServer) status(t *testing.T, ctx context.Context, repo, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.HostURL+repo+".git/info/refs?service=git-upload-pack", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("x-access-token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("request to the git server: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// bridgeGateway is the host's address on the engine's default bridge
// network (10.88.0.1 for Podman, 172.17.0.1 for dockerd by default).
func bridgeGateway(t *testing.T, ctx context.Context, e engineUnderTest) string {
	t.Helper()
	n, err := e.API.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		t.Fatalf("inspect the %s bridge network: %v", e.Name, err)
	}
	for _, c := range n.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
			return c.Gateway
		}
	}
	// dockerd leaves the gateway out of the network's IPAM config when it
	// adopted an existing bridge; the host's address on that bridge
	// interface, inside the network's subnet, is the gateway.
	if name := n.Options["com.docker.network.bridge.name"]; name != "" {
		if gw := interfaceAddrIn(name, n.IPAM.Config); gw != "" {
			return gw
		}
	}
	t.Fatalf("the %s bridge network has no IPv4 gateway: %+v", e.Name, n.IPAM.Config)
	return ""
}

// interfaceAddrIn returns the IPv4 address of the host interface name that
// lies in one of the subnets, or "".
func interfaceAddrIn(name string, subnets []network.IPAMConfig) string {
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return ""
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil {
			continue
		}
		for _, c := range subnets {
			if _, sn, err := net.ParseCIDR(c.Subnet); err == nil && sn.Contains(ipn.IP) {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

// hostRepo is a bare repository on the host with a work tree to commit from.
type hostRepo struct {
	bare, work string
}

// newHostRepo creates root/<owner>/<name>.git with branches main and
// branch, one commit each.
func newHostRepo(t *testing.T, root, ownerName, branch string) *hostRepo {
	t.Helper()
	r := &hostRepo{bare: filepath.Join(root, ownerName+".git"), work: filepath.Join(t.TempDir(), "work")}
	if err := os.MkdirAll(filepath.Dir(r.bare), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, "", "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	git(t, "", "init", "--quiet", "--initial-branch=main", r.work)
	git(t, r.work, "remote", "add", "origin", r.bare)
	r.commit(t, "main", "README.md", "first\n")
	git(t, r.work, "checkout", "--quiet", "-b", branch)
	r.commit(t, branch, "feature.txt", "feature\n")
	return r
}

// commit writes file on branch (checked out in the work tree), commits,
// pushes and returns the commit id.
func (r *hostRepo) commit(t *testing.T, branch, file, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.work, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, r.work, "add", file)
	git(t, r.work, "commit", "--quiet", "-m", "change "+file)
	git(t, r.work, "push", "--quiet", "origin", branch)
	return strings.TrimSpace(git(t, r.work, "rev-parse", "HEAD"))
}

// git runs git on the host with a fixed identity and no user configuration.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=podbot e2e", "GIT_AUTHOR_EMAIL=e2e@podbot.invalid",
		"GIT_COMMITTER_NAME=podbot e2e", "GIT_COMMITTER_EMAIL=e2e@podbot.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
