package tokendaemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/podbot/podbot/errdefs"
	"github.com/podbot/podbot/gitcred"
)

// maxTokenLen bounds a token value; GitHub's are about 40 bytes.
const maxTokenLen = 4096

// writeTokenFile replaces dir/ghapp_token with value atomically.
func writeTokenFile(dir, value string) error {
	if err := checkTokenValue(value); err != nil {
		return err
	}
	return writeFileAtomic(dir, TokenFileName, value)
}

// checkTokenValue refuses a token that is empty, too long or holds
// whitespace or control characters.
func checkTokenValue(value string) error {
	if value == "" || len(value) > maxTokenLen || strings.ContainsFunc(value, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) {
		return &errdefs.GitHubError{Op: "installation token", Reason: errdefs.ErrInvalidValue,
			Msg: "GitHub returned a token that is empty, too long or holds whitespace; refusing to write it"}
	}
	return nil
}

// writeOriginFile replaces dir/git_origin with the canonical origin and a
// newline, atomically.
func writeOriginFile(dir string, origin gitcred.Origin) error {
	if origin.String() == "" {
		return &errdefs.ConfigError{Key: "github.clone_base_url", Reason: errdefs.ErrMissingRequired,
			Msg: "no clone origin to write next to the token"}
	}
	return writeFileAtomic(dir, OriginFileName, origin.String()+"\n")
}

// writeFileAtomic replaces dir/name with value atomically: a 0600
// temporary file in dir is written and synced, renamed over the old file,
// and the directory is synced so the rename survives a crash.
func writeFileAtomic(dir, name, value string) (err error) {
	final := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
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
