package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/go-units"
)

// maxLibpodList bounds the libpod list answer (about 2 KiB a container).
const maxLibpodList = 64 << 20

// libpodContainer is the part of one row of Podman's native list
// (GET /libpod/containers/json) that ContainerSummary needs.
type libpodContainer struct {
	ID        string            `json:"Id"`
	Names     []string          `json:"Names"`
	Image     string            `json:"Image"`
	State     string            `json:"State"`
	Created   time.Time         `json:"Created"`
	StartedAt int64             `json:"StartedAt"`
	ExitedAt  int64             `json:"ExitedAt"`
	ExitCode  int32             `json:"ExitCode"`
	Labels    map[string]string `json:"Labels"`
	Size      *struct {
		RootFsSize int64 `json:"rootFsSize"`
		RwSize     int64 `json:"rwSize"`
	} `json:"Size"`
}

// listLibpod is List through Podman's native endpoint, which answers
// from its database without the compatible API's per-container network
// and image lookups.
func (c *Conn) listLibpod(ctx context.Context, args filters.Args, all, size bool) ([]ContainerSummary, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if size {
		q.Set("size", "true")
	}
	if args.Len() > 0 {
		f, err := filters.ToJSON(args)
		if err != nil {
			return nil, err
		}
		q.Set("filters", f)
	}
	resp, err := c.rawGet(ctx, "/libpod/containers/json", q)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLibpodList+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxLibpodList {
		return nil, fmt.Errorf("the container list is larger than %d bytes", maxLibpodList)
	}
	return parseLibpodList(body, time.Now())
}

// parseLibpodList maps Podman's native list to ContainerSummary rows,
// with the human status the compatible API would give (now is the
// reference for "Up 5 minutes").
func parseLibpodList(body []byte, now time.Time) ([]ContainerSummary, error) {
	var rows []libpodContainer
	if err := json.Unmarshal(body, &rows); err != nil {
		return nil, fmt.Errorf("the engine's container list is not the expected JSON: %w", err)
	}
	out := make([]ContainerSummary, 0, len(rows))
	for _, r := range rows {
		s := ContainerSummary{ID: r.ID, Image: r.Image, State: compatState(r.State), Created: r.Created, Labels: r.Labels,
			Status: libpodStatus(r, now)}
		if len(r.Names) > 0 {
			s.Name = strings.TrimPrefix(r.Names[0], "/")
		}
		if r.Size != nil {
			s.SizeRw, s.SizeRootFs = r.Size.RwSize, r.Size.RootFsSize
		}
		out = append(out, s)
	}
	return out, nil
}

// compatState is the compatible API's word for a native state: Podman's
// configured and initialized are created, stopped is exited.
func compatState(s string) string {
	switch s {
	case "configured", "initialized":
		return "created"
	case "stopped":
		return "exited"
	}
	return s
}

// libpodStatus is the compatible API's status text for a native row:
// "Up 5 minutes", "Up 5 minutes (Paused)", "Exited (1) 2 hours ago",
// "Created", or the state itself.
func libpodStatus(r libpodContainer, now time.Time) string {
	since := func(unix int64) string {
		t := time.Unix(unix, 0)
		if unix <= 0 || t.After(now) {
			return units.HumanDuration(0)
		}
		return units.HumanDuration(now.Sub(t))
	}
	switch r.State {
	case "running":
		return "Up " + since(r.StartedAt)
	case "paused":
		return "Up " + since(r.StartedAt) + " (Paused)"
	case "exited", "stopped":
		return "Exited (" + strconv.Itoa(int(r.ExitCode)) + ") " + since(r.ExitedAt) + " ago"
	case "created", "configured", "initialized":
		return "Created"
	case "":
		return "Unknown"
	default:
		first, n := utf8.DecodeRuneInString(r.State)
		return string(unicode.ToUpper(first)) + r.State[n:]
	}
}
