package podbot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/podbot/podbot/engine"
	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/tokendaemon"
)

// scopeSuffix ends a token scope file's name (tokenScopePath).
const scopeSuffix = ".scope"

// pruneTokenScopes removes the token directory and scope file of claimed
// pool members that are gone: a member removed through the engine
// directly (docker rm, podman rm) rather than by podbot, or by a podbot
// that died before its clean-up. Only scope files recording this engine
// (tokenScope.Engine), older than createdGrace, whose member no container
// names in its LabelTokenDir label any more are taken.
func pruneTokenScopes(ctx context.Context, conn *engine.Conn, opts PruneOptions, res *PruneResult) error {
	if opts.RuntimeDir == "" || !filepath.IsAbs(opts.RuntimeDir) {
		return nil // tokens need an absolute runtime directory: none made
	}
	endpoint := conn.Endpoint().String()
	gone := func(dirName string) bool {
		rows, err := conn.List(ctx, map[string]string{LabelTokenDir: dirName}, true, false)
		return err == nil && len(rows) == 0
	}
	names, err := staleTokenScopes(opts.RuntimeDir, endpoint, time.Now().Add(-createdGrace), gone)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if !opts.DryRun {
			if err := removeMemberToken(opts.RuntimeDir, map[string]string{LabelTokenDir: name}); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		res.TokenDirs = append(res.TokenDirs, name)
	}
	return errors.Join(errs...)
}

// staleTokenScopes lists, by directory name, the scope files under the
// runtime directory's podbot directory that record engine endpoint, are
// older than before, and whose member gone reports gone. Entries that are
// not podbot's (other names, symbolic links, unreadable or foreign
// files) are skipped; at most maxEgressScan entries are looked at.
func staleTokenScopes(runtimeDir, endpoint string, before time.Time, gone func(dirName string) bool) ([]string, error) {
	probe, err := tokendaemon.TokenDir(runtimeDir, "x")
	if err != nil {
		return nil, err
	}
	root := filepath.Dir(probe)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "list token directories", Path: root, Err: err}
	}
	var out []string
	for i, e := range ents {
		if i == maxEgressScan {
			break
		}
		name, ok := strings.CutSuffix(e.Name(), scopeSuffix)
		if !ok || !e.Type().IsRegular() || !strings.HasPrefix(name, MemberPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue
		}
		s, err := readTokenScope(runtimeDir, name)
		if err != nil || s.Engine == "" || s.Engine != endpoint {
			continue
		}
		if !gone(name) {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
