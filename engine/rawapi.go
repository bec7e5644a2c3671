package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/containerd/errdefs/pkg/errhttp"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
)

// maxRawBody bounds a JSON answer read by getJSON.
const maxRawBody = 1 << 20

// execState is the engine's exec inspect answer, read raw so that a missing
// exit code (null) can be told from exit code 0.
type execState struct {
	Running       bool
	ExitCode      *int64
	ProcessConfig *execProcessConfig
}

type execProcessConfig struct {
	Entrypoint string   `json:"entrypoint"`
	Arguments  []string `json:"arguments"`
}

func (c *Conn) execInspect(ctx context.Context, execID string) (execState, error) {
	var st execState
	err := c.getJSON(ctx, "/exec/"+url.PathEscape(execID)+"/json", &st)
	return st, err
}

// getJSON GETs a versioned API path and decodes the bounded answer. Error
// answers carry the errdefs class of their HTTP status, as the client's own
// calls do, so Classify treats both alike.
func (c *Conn) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.rawGet(ctx, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRawBody+1))
	if err != nil {
		return err
	}
	if len(body) > maxRawBody {
		return fmt.Errorf("GET %s: answer larger than %d bytes", path, maxRawBody)
	}
	return json.Unmarshal(body, v)
}

// rawGet GETs a versioned API path with the query and returns the answer
// when its status is below 400; the caller closes its body. An error
// answer is turned into an error carrying the errdefs class of its status.
func (c *Conn) rawGet(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	return c.rawGetURL(ctx, c.baseURL()+"/v"+c.api.ClientVersion()+path, query)
}

// baseURL is the scheme and host the engine's API is reached at.
func (c *Conn) baseURL() string {
	switch {
	case useTLS(c.ep, c.opts):
		return "https://" + c.ep.Address
	case c.ep.Scheme == SchemeHTTP:
		return "http://" + c.ep.Address
	}
	return "http://" + client.DummyHost
}

// rawPing is GET /_ping, read as the client's Ping reads it, and also
// reports whether the answer came from Podman.
func (c *Conn) rawPing(ctx context.Context) (types.Ping, bool, error) {
	resp, err := c.rawGetURL(ctx, c.baseURL()+"/_ping", nil)
	if err != nil {
		return types.Ping{}, false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorText))
	h := resp.Header
	ping := types.Ping{APIVersion: h.Get("Api-Version"), OSType: h.Get("Ostype"), Experimental: h.Get("Docker-Experimental") == "true"}
	if bv := h.Get("Builder-Version"); bv != "" {
		ping.BuilderVersion = build.BuilderVersion(bv)
	}
	return ping, h.Get("Libpod-Api-Version") != "", nil
}

// rawGetURL is rawGet for a full URL.
func (c *Conn) rawGetURL(ctx context.Context, u string, query url.Values) (*http.Response, error) {
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if c.opts.userAgent != "" {
		req.Header.Set("User-Agent", c.opts.userAgent)
	}
	resp, err := c.api.HTTPClient().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorText+1))
	if err != nil {
		return nil, err
	}
	var e struct{ Message string }
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	return nil, fmt.Errorf("Error response from daemon: %s: %w", truncate(msg, maxErrorText), errhttp.ToNative(resp.StatusCode))
}
