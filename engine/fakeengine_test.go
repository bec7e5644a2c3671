package engine

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/pkg/stdcopy"
)

// fakeEngine is a small in-memory Engine API served on a unix socket. It
// answers the routes podbot's engine package uses, the way Podman and
// dockerd 20.10 answer them at API 1.41.
type fakeEngine struct {
	t      *testing.T
	socket string
	srv    *httptest.Server

	mu         sync.Mutex
	podman     bool
	rootless   bool
	override   map[string]http.HandlerFunc // "METHOD /route" -> handler
	calls      []string                    // "METHOD /route" per request
	images     map[string]bool
	containers map[string]*fakeContainer
	execs      map[string]*fakeExec
	nextID     int

	pullFailures int    // pulls that fail with a 500 before one succeeds
	pullError    string // error message in the pull stream (permanent)
	failStart    string // message of a 500 on container start
	failResize   bool
}

type fakeContainer struct {
	id, name string
	config   *container.Config
	host     *container.HostConfig
	running  bool
	exitCode int
	exited   chan struct{}
	logs     []stdFrame
	copied   []string // "dst:name" per tar entry
}

type stdFrame struct {
	stream stdcopy.StdType
	data   string
}

type fakeExec struct {
	id, container string
	opts          container.ExecOptions
	running       bool
	started       bool
	exitCode      *int
	resizes       []string
}

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	f := &fakeEngine{
		t:          t,
		override:   map[string]http.HandlerFunc{},
		images:     map[string]bool{},
		containers: map[string]*fakeContainer{},
		execs:      map[string]*fakeExec{},
	}
	f.socket = filepath.Join(t.TempDir(), "e.sock")
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatalf("listen on %s: %v", f.socket, err)
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Listener.Close()
	f.srv.Listener = l
	f.srv.Start()
	t.Cleanup(func() {
		f.mu.Lock()
		for _, c := range f.containers {
			if c.running {
				c.running = false
				close(c.exited)
			}
		}
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// endpoint is the fake's endpoint.
func (f *fakeEngine) endpoint() Endpoint {
	return Endpoint{Scheme: SchemeUnix, Address: f.socket, Raw: "unix://" + f.socket}
}

// connect connects to the fake with fast pull retries.
func (f *fakeEngine) connect(opts ...Option) *Conn {
	f.t.Helper()
	opts = append([]Option{WithPullRetry(3, 0)}, opts...)
	c, err := Connect(context.Background(), f.endpoint(), opts...)
	if err != nil {
		f.t.Fatalf("Connect: %v", err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

func (f *fakeEngine) handle(route string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override[route] = h
}

func (f *fakeEngine) callCount(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == route {
			n++
		}
	}
	return n
}

var versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/`)

// route maps a request path to "METHOD /pattern" and the path parameter.
func route(r *http.Request) (string, string) {
	p := versionPrefix.ReplaceAllString(r.URL.Path, "/")
	m := r.Method
	if m == http.MethodHead {
		m = http.MethodGet
	}
	switch {
	case p == "/_ping" || p == "/version" || p == "/info" || p == "/containers/create" ||
		p == "/containers/json" || p == "/images/create":
		return m + " " + p, ""
	case strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		return m + " /images/{name}/json", strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json")
	case strings.HasPrefix(p, "/containers/"):
		rest := strings.TrimPrefix(p, "/containers/")
		id, action, _ := strings.Cut(rest, "/")
		if action == "" {
			return m + " /containers/{id}", id
		}
		return m + " /containers/{id}/" + action, id
	case strings.HasPrefix(p, "/exec/"):
		id, action, _ := strings.Cut(strings.TrimPrefix(p, "/exec/"), "/")
		return m + " /exec/{id}/" + action, id
	}
	return m + " " + p, ""
}

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	key, param := route(r)
	f.mu.Lock()
	f.calls = append(f.calls, key)
	h := f.override[key]
	f.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	switch key {
	case "GET /_ping":
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Ostype", "linux")
		f.mu.Lock()
		if f.podman {
			w.Header().Set("Libpod-Api-Version", "4.3.1")
		}
		f.mu.Unlock()
		_, _ = io.WriteString(w, "OK")
	case "GET /version":
		f.version(w)
	case "GET /info":
		f.info(w)
	case "GET /images/{name}/json":
		f.mu.Lock()
		ok := f.images[param]
		f.mu.Unlock()
		if !ok {
			apiError(w, http.StatusNotFound, "No such image: "+param)
			return
		}
		writeJSON(w, map[string]any{"Id": "sha256:" + param})
	case "POST /images/create":
		f.pull(w, r)
	case "POST /containers/create":
		f.create(w, r)
	case "POST /containers/{id}/start":
		f.start(w, param)
	case "POST /containers/{id}/wait":
		f.wait(w, r, param)
	case "POST /containers/{id}/stop", "POST /containers/{id}/kill":
		f.stop(w, param, strings.HasSuffix(key, "kill"))
	case "DELETE /containers/{id}":
		f.remove(w, r, param)
	case "GET /containers/{id}/json":
		f.inspect(w, r, param)
	case "GET /containers/json":
		f.list(w, r)
	case "GET /containers/{id}/logs":
		f.logs(w, param)
	case "PUT /containers/{id}/archive":
		f.archive(w, r, param)
	case "POST /containers/{id}/exec":
		f.execCreate(w, r, param)
	case "POST /exec/{id}/start":
		f.execStart(w, r, param)
	case "GET /exec/{id}/json":
		f.execInspect(w, param)
	case "POST /exec/{id}/resize":
		f.execResize(w, r, param)
	default:
		apiError(w, http.StatusNotFound, "page not found: "+key)
	}
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeEngine) version(w http.ResponseWriter) {
	f.mu.Lock()
	podman := f.podman
	f.mu.Unlock()
	v := types.Version{Version: "20.10.24", APIVersion: "1.41", MinAPIVersion: "1.12", Os: "linux", Arch: "amd64", KernelVersion: "6.1.0"}
	if podman {
		v.Version = "4.3.1"
		v.Components = []types.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}
	} else {
		v.Components = []types.ComponentVersion{{Name: "Engine", Version: "20.10.24"}}
	}
	writeJSON(w, v)
}

func (f *fakeEngine) info(w http.ResponseWriter) {
	f.mu.Lock()
	rootless := f.rootless
	f.mu.Unlock()
	info := system.Info{Name: "host\x1b[31m", DefaultRuntime: "runc", CgroupVersion: "1", CgroupDriver: "cgroupfs",
		SecurityOptions: []string{"name=seccomp,profile=default"}}
	if rootless {
		info.SecurityOptions = append(info.SecurityOptions, "name=rootless")
	}
	writeJSON(w, info)
}

func (f *fakeEngine) pull(w http.ResponseWriter, r *http.Request) {
	ref := strings.TrimPrefix(strings.TrimPrefix(r.URL.Query().Get("fromImage"), "docker.io/"), "library/")
	if tag := r.URL.Query().Get("tag"); tag != "" {
		ref += ":" + tag
	}
	f.mu.Lock()
	if f.pullFailures > 0 {
		f.pullFailures--
		f.mu.Unlock()
		apiError(w, http.StatusInternalServerError, "Get \"https://registry/v2/\": dial tcp: i/o timeout")
		return
	}
	pullErr := f.pullError
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(map[string]any{"status": "Pulling from library/x", "id": "latest"})
	if pullErr != "" {
		_ = enc.Encode(map[string]any{"errorDetail": map[string]string{"message": pullErr}, "error": pullErr})
		return
	}
	_ = enc.Encode(map[string]any{"status": "Downloading", "id": "abc123", "progressDetail": map[string]int{"current": 50, "total": 100}})
	_ = enc.Encode(map[string]any{"status": "Pull complete", "id": "abc123"})
	f.mu.Lock()
	f.images[ref] = true
	f.mu.Unlock()
}

func (f *fakeEngine) lookup(idOrName string) *fakeContainer {
	if c, ok := f.containers[idOrName]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.name == idOrName {
			return c
		}
	}
	return nil
}

func (f *fakeEngine) addImage(ref string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[ref] = true
}

func (f *fakeEngine) create(w http.ResponseWriter, r *http.Request) {
	var req container.CreateRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Config == nil {
		apiError(w, http.StatusBadRequest, "bad create body")
		return
	}
	name := r.URL.Query().Get("name")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[req.Image] {
		apiError(w, http.StatusNotFound, "No such image: "+req.Image)
		return
	}
	if name != "" && f.lookup(name) != nil {
		apiError(w, http.StatusConflict, fmt.Sprintf("Conflict. The container name %q is already in use", "/"+name))
		return
	}
	f.nextID++
	id := fmt.Sprintf("%064x", f.nextID)
	if name == "" {
		name = "c" + strconv.Itoa(f.nextID)
	}
	f.containers[id] = &fakeContainer{id: id, name: name, config: req.Config, host: req.HostConfig, exited: make(chan struct{})}
	writeJSON(w, container.CreateResponse{ID: id, Warnings: []string{}})
}

func (f *fakeEngine) start(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	switch {
	case c == nil:
		apiError(w, http.StatusNotFound, "No such container: "+id)
	case f.failStart != "":
		apiError(w, http.StatusInternalServerError, f.failStart)
	case c.running:
		w.WriteHeader(http.StatusNotModified)
	default:
		c.running = true
		select {
		case <-c.exited: // restarting: a new exit to wait for
			c.exited = make(chan struct{})
		default:
		}
		if len(c.config.Cmd) == 2 && c.config.Cmd[0] == "exit" {
			c.exitCode, _ = strconv.Atoi(c.config.Cmd[1])
			c.running = false
			close(c.exited)
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeEngine) wait(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	c := f.lookup(id)
	if c == nil {
		f.mu.Unlock()
		apiError(w, http.StatusNotFound, "No such container: "+id)
		return
	}
	exited := c.exited
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-exited:
	case <-r.Context().Done():
		return
	}
	f.mu.Lock()
	code := c.exitCode
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(container.WaitResponse{StatusCode: int64(code)})
}

func (f *fakeEngine) stop(w http.ResponseWriter, id string, kill bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	switch {
	case c == nil:
		apiError(w, http.StatusNotFound, "No such container: "+id)
	case !c.running && kill:
		apiError(w, http.StatusConflict, "Container "+id+" is not running")
	case !c.running:
		w.WriteHeader(http.StatusNotModified)
	default:
		c.running = false
		c.exitCode = 143
		if kill {
			c.exitCode = 137
		}
		close(c.exited)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeEngine) remove(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	switch {
	case c == nil:
		apiError(w, http.StatusNotFound, "No such container: "+id)
	case c.running && r.URL.Query().Get("force") != "1":
		apiError(w, http.StatusConflict, "You cannot remove a running container "+c.id+". Stop the container before attempting removal or force remove")
	default:
		if c.running {
			c.running = false
			close(c.exited)
		}
		delete(f.containers, c.id)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeEngine) inspect(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+id)
		return
	}
	status := container.StateExited
	if c.running {
		status = container.StateRunning
	}
	resp := container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{ID: c.id, Name: "/" + c.name, Image: c.config.Image, HostConfig: c.host,
			State: &container.State{Status: status, Running: c.running, ExitCode: c.exitCode}},
		Config: c.config,
	}
	if r.URL.Query().Get("size") == "1" {
		rw, root := int64(4096), int64(1<<20)
		resp.SizeRw, resp.SizeRootFs = &rw, &root
	}
	writeJSON(w, resp)
}

func (f *fakeEngine) list(w http.ResponseWriter, r *http.Request) {
	args, err := filters.FromJSON(r.URL.Query().Get("filters"))
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	all := r.URL.Query().Get("all") == "1"
	size := r.URL.Query().Get("size") == "1"
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []container.Summary{}
	for _, c := range f.containers {
		if !all && !c.running {
			continue
		}
		if !args.MatchKVList("label", c.config.Labels) {
			continue
		}
		s := container.Summary{ID: c.id, Names: []string{"/" + c.name}, Image: c.config.Image, Labels: c.config.Labels,
			State: container.StateExited, Status: "Exited", Created: 1700000000}
		if c.running {
			s.State, s.Status = container.StateRunning, "Up"
		}
		if size {
			s.SizeRw, s.SizeRootFs = 4096, 1<<20
		}
		out = append(out, s)
	}
	writeJSON(w, out)
}

func (f *fakeEngine) logs(w http.ResponseWriter, id string) {
	f.mu.Lock()
	c := f.lookup(id)
	var frames []stdFrame
	tty := false
	if c != nil {
		frames = append(frames, c.logs...)
		tty = c.config.Tty
	}
	f.mu.Unlock()
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+id)
		return
	}
	w.WriteHeader(http.StatusOK)
	for _, fr := range frames {
		if tty {
			_, _ = io.WriteString(w, fr.data)
			continue
		}
		_, _ = stdcopy.NewStdWriter(w, fr.stream).Write([]byte(fr.data))
	}
}

func (f *fakeEngine) archive(w http.ResponseWriter, r *http.Request, id string) {
	dst := r.URL.Query().Get("path")
	tr := tar.NewReader(r.Body)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			apiError(w, http.StatusBadRequest, "bad tar: "+err.Error())
			return
		}
		names = append(names, dst+":"+h.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+id)
		return
	}
	c.copied = append(c.copied, names...)
	w.WriteHeader(http.StatusOK)
}

func (f *fakeEngine) execCreate(w http.ResponseWriter, r *http.Request, id string) {
	var opts container.ExecOptions
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&opts); err != nil {
		apiError(w, http.StatusBadRequest, "bad exec body")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+id)
		return
	}
	if !c.running {
		apiError(w, http.StatusConflict, "container "+c.id+" is not running")
		return
	}
	f.nextID++
	eid := fmt.Sprintf("e%d", f.nextID)
	f.execs[eid] = &fakeExec{id: eid, container: c.id, opts: opts}
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, container.ExecCreateResponse{ID: eid})
}

func (f *fakeEngine) execStart(w http.ResponseWriter, r *http.Request, id string) {
	var opts container.ExecStartOptions
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&opts)
	f.mu.Lock()
	e := f.execs[id]
	if e != nil {
		e.running, e.started = true, true
	}
	f.mu.Unlock()
	if e == nil {
		apiError(w, http.StatusNotFound, "No such exec instance: "+id)
		return
	}
	if opts.Detach {
		apiError(w, http.StatusBadRequest, "the fake serves attached execs only")
		return
	}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		f.t.Errorf("hijack: %v", err)
		return
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	var stdout, stderr io.Writer = conn, conn
	if !e.opts.Tty {
		stdout = stdcopy.NewStdWriter(conn, stdcopy.Stdout)
		stderr = stdcopy.NewStdWriter(conn, stdcopy.Stderr)
	}
	var stdin io.Reader
	if e.opts.AttachStdin {
		stdin = buf
	}
	f.runExec(e, stdin, stdout, stderr)
}

// runExec runs one of the fake's commands and records its exit code.
func (f *fakeEngine) runExec(e *fakeExec, stdin io.Reader, stdout, stderr io.Writer) {
	code := 0
	noCode := false
	args := e.opts.Cmd
	switch args[0] {
	case "cat":
		if stdin != nil {
			_, _ = io.Copy(stdout, stdin)
		}
	case "both":
		_, _ = io.WriteString(stdout, "to stdout\n")
		_, _ = io.WriteString(stderr, "to stderr\n")
	case "env":
		_, _ = io.WriteString(stdout, strings.Join(e.opts.Env, ",")+"|"+e.opts.WorkingDir+"|"+e.opts.User+"\n")
	case "exit":
		code, _ = strconv.Atoi(args[1])
	case "code":
		// An exit code beyond what a process can return, as some engines report.
		code, _ = strconv.Atoi(args[1])
	case "noexit":
		noCode = true
	case "lines":
		// Echo stdin line by line, then report the last resize seen.
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			_, _ = io.WriteString(stdout, sc.Text()+"\n")
		}
		f.mu.Lock()
		sizes := strings.Join(e.resizes, " ")
		f.mu.Unlock()
		_, _ = io.WriteString(stdout, "sizes="+sizes+"\n")
	case "block":
		// Runs until the client goes away.
		if stdin != nil {
			_, _ = io.Copy(io.Discard, stdin)
		}
	}
	f.mu.Lock()
	e.running = false
	if !noCode {
		e.exitCode = &code
	}
	f.mu.Unlock()
}

func (f *fakeEngine) execInspect(w http.ResponseWriter, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.execs[id]
	if e == nil {
		apiError(w, http.StatusNotFound, "No such exec instance: "+id)
		return
	}
	writeJSON(w, map[string]any{"ID": e.id, "ContainerID": e.container, "Running": e.running, "ExitCode": e.exitCode, "Pid": 42})
}

func (f *fakeEngine) execResize(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.execs[id]
	if e == nil {
		apiError(w, http.StatusNotFound, "No such exec instance: "+id)
		return
	}
	if f.failResize {
		apiError(w, http.StatusInternalServerError, "resize failed")
		return
	}
	e.resizes = append(e.resizes, r.URL.Query().Get("h")+"x"+r.URL.Query().Get("w"))
	w.WriteHeader(http.StatusOK)
}

// socketWithoutListener returns the path of a unix socket file nobody listens on.
func socketWithoutListener(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dead.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("socket file gone: %v", err)
	}
	return path
}
