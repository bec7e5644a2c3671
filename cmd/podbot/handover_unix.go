//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/podbot/podbot/errdefs"
)

// defaultHandOver is the hand-over of the running process: its own
// executable, replaced in place by execve.
func defaultHandOver() handOver {
	argv0 := "podbot"
	if len(os.Args) > 0 {
		argv0 = os.Args[0]
	}
	return handOver{argv0: argv0, executable: os.Executable, exec: syscall.Exec}
}

// checkCompanion refuses a companion that someone other than root or the
// user could have replaced: the file and its directory must be owned by
// root or the effective user and writable by neither group nor others, and
// the file must be an executable regular file. path is already resolved.
func checkCompanion(path string) error {
	uid := uint32(os.Geteuid())
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			return &errdefs.FilesystemError{Op: "check", Path: p, Err: err}
		}
		refuse := func(msg string) error {
			return &errdefs.FilesystemError{Op: "check", Path: p, Reason: errdefs.ErrRefused, Msg: msg + "; podbot runs " + companionName + " only from a place no one else can write"}
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || (st.Uid != 0 && st.Uid != uid) {
			owner := "unknown"
			if ok {
				owner = fmt.Sprint(st.Uid)
			}
			return refuse(fmt.Sprintf("owned by uid %s, neither root nor you (uid %d)", owner, uid))
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return refuse(fmt.Sprintf("mode %04o is group- or world-writable (fix: chmod go-w %s)", fi.Mode().Perm(), p))
		}
		if p == path && (!fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0) {
			return refuse("not an executable regular file")
		}
	}
	return nil
}
