package podbot

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
	"github.com/podbot/podbot/tokendaemon"
	"github.com/podbot/podbot/workspace"
)

// LabelTokenDir, on an agent pool member made with a GitHub token mount,
// names its token directory ($XDG_RUNTIME_DIR/podbot/<member>): the
// member's own name, which the directory keeps when a claim renames the
// container. A member's labels cannot say which repository its tokens are
// for (that is the claimer's), so the claim records that in the token
// scope file next to the directory (tokenScopePath).
const LabelTokenDir = "podbot.github.token_dir"

// maxTokenScope bounds a token scope file.
const maxTokenScope = 4 << 10

// tokenScope is what a claimed member's tokens are for: the repository
// (owner/name) and the one origin git may send them to; the labels
// launchplan.LabelGitHubRepo and LabelGitHubOrigin say it for a sandbox
// launched cold.
type tokenScope struct {
	Repo   string `json:"repo"`
	Origin string `json:"origin"`
	// Engine is the endpoint of the engine the member runs on, so that
	// podbot prune on one engine never takes another engine's scope file
	// (the runtime directory is shared); empty in files written before
	// it was recorded, which prune leaves alone.
	Engine string `json:"engine,omitempty"`
}

// tokenScopePath is the host-only scope file of token directory dirName:
// $XDG_RUNTIME_DIR/podbot/<dirName>.scope, beside the directory (never in
// it: the sandbox mounts the directory).
func tokenScopePath(runtimeDir, dirName string) (string, error) {
	dir, err := tokendaemon.TokenDir(runtimeDir, dirName)
	if err != nil {
		return "", err
	}
	return dir + ".scope", nil
}

// writeTokenScope records s for token directory dirName, mode 0600,
// atomically.
func writeTokenScope(runtimeDir, dirName string, s tokenScope) error {
	path, err := tokenScopePath(runtimeDir, dirName)
	if err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	fail := func(op string, err error) error {
		return &errdefs.FilesystemError{Op: op, Path: path, Msg: "cannot record the GitHub token's scope", Err: err}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fail("create", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename: nothing there
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fail("write", err)
	}
	if err := f.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail("rename", err)
	}
	return nil
}

// readTokenScope reads and checks the scope file of token directory
// dirName.
func readTokenScope(runtimeDir, dirName string) (tokenScope, error) {
	path, err := tokenScopePath(runtimeDir, dirName)
	if err != nil {
		return tokenScope{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return tokenScope{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenScope+1))
	if err != nil {
		return tokenScope{}, err
	}
	return parseTokenScope(data)
}

// parseTokenScope parses and checks a scope file's content: at most
// maxTokenScope bytes of JSON naming a repository (owner/name) and a
// clone origin (scheme://host[:port]).
func parseTokenScope(data []byte) (tokenScope, error) {
	if len(data) > maxTokenScope {
		return tokenScope{}, errors.New("the scope file is too large")
	}
	var s tokenScope
	if err := json.Unmarshal(data, &s); err != nil {
		return tokenScope{}, err
	}
	if _, err := workspace.ParseRepo(s.Repo); err != nil {
		return tokenScope{}, err
	}
	if _, err := gitcred.ReadOriginString(s.Origin); err != nil {
		return tokenScope{}, err
	}
	return s, nil
}

// removeMemberToken removes a claimed or unclaimed member's token directory
// and scope file (labels' LabelTokenDir); without the label, or without a
// runtime directory, it does nothing. Missing is fine.
func removeMemberToken(runtimeDir string, labels map[string]string) error {
	name := labels[LabelTokenDir]
	if name == "" || runtimeDir == "" {
		return nil
	}
	dir, err := tokendaemon.TokenDir(runtimeDir, name)
	if err != nil {
		return nil // not a name podbot gives: nothing of podbot's there
	}
	var errs []error
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, &errdefs.FilesystemError{Op: "remove", Path: dir, Msg: "cannot remove the token directory", Err: err})
	}
	if err := os.Remove(dir + ".scope"); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, &errdefs.FilesystemError{Op: "remove", Path: dir + ".scope", Msg: "cannot remove the token scope file", Err: err})
	}
	return errors.Join(errs...)
}

// memberTokenUnclaimed reports whether a container is a pool member made
// with a token directory and not claimed yet (it still has its member
// name): it needs no token until a claim says for which repository.
func memberTokenUnclaimed(name string, labels map[string]string) bool {
	return labels[LabelTokenDir] != "" && labels[LabelTokenDir] == name && strings.HasPrefix(name, MemberPrefix)
}
