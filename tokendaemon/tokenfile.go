package tokendaemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/podbot/podbot/errdefs"
)

// maxTokenLen bounds a token value; GitHub's are about 40 bytes.
const maxTokenLen = 4096

// writeTokenFile replaces dir/ghapp_token with value atomically: a 0600
// temporary file in dir is written and synced, renamed over the old file,
// and the directory is synced so the rename survives a crash.
func writeTokenFile(dir, value string) (err error) {
	if value == "" || len(value) > maxTokenLen || strings.ContainsFunc(value, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) {
		return &errdefs.GitHubError{Op: "installation token", Reason: errdefs.ErrInvalidValue,
			Msg: "GitHub returned a token that is empty, too long or holds whitespace; refusing to write it"}
	}
	final := filepath.Join(dir, TokenFileName)
	tmp, err := os.CreateTemp(dir, "."+TokenFileName+"-*")
	if err != nil {
		return &errdefs.FilesystemError{Op: "create", Path: dir, Msg: "cannot create a temporary token file", Err: err}
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	fail := func(op string, e error) error {
		return &errdefs.FilesystemError{Op: op, Path: tmp.Name(), Msg: "cannot write the token file", Err: e}
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fail("chmod", err)
	}
	if _, err := tmp.WriteString(value); err != nil {
		return fail("write", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fail("rename", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return &errdefs.FilesystemError{Op: "open", Path: dir, Msg: "cannot sync the token directory", Err: err}
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return &errdefs.FilesystemError{Op: "fsync", Path: dir, Msg: "cannot sync the token directory", Err: err}
	}
	return nil
}
