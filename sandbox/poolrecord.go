package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// MemberRecordName is the file in an unclaimed tools member's directory
// (MemberDir) that names its container: the container id, written by the
// member's maker once the container runs and removed by the claim that
// takes it. It lets a claimer find a pool's members by reading podbot's
// own directories instead of listing the engine's containers; the claim
// itself is still the engine's unpause, which only one caller wins.
const MemberRecordName = "member"

// maxScanEntries bounds how many entries of a workspace root a scan reads.
const maxScanEntries = 16384

// maxScanMembers bounds how many members a scan returns.
const maxScanMembers = 256

// containerIDPattern is a full engine container id.
var containerIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// memberIDOnly is the id part of a member directory's name.
var memberIDOnly = regexp.MustCompile(`^[0-9a-f]{12}$`)

// RecordMember writes the member record (MemberRecordName) of the tools
// member whose directory is dir: containerID, replaced atomically (a
// temporary file renamed over it), mode 0600. dir must pass MemberDir's
// checks.
func RecordMember(dir, containerID string) error {
	if !containerIDPattern.MatchString(containerID) {
		return &errdefs.FilesystemError{Op: "record pool member", Path: dir, Reason: errdefs.ErrInvalidValue,
			Msg: "a member record holds a full 64-digit container id"}
	}
	f, err := os.CreateTemp(dir, "."+MemberRecordName+"-*")
	if err != nil {
		return &errdefs.FilesystemError{Op: "record pool member", Path: dir, Err: err}
	}
	tmp := f.Name()
	_, werr := f.WriteString(containerID + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, MemberRecordName))
	}
	if werr != nil {
		os.Remove(tmp)
		return &errdefs.FilesystemError{Op: "record pool member", Path: dir, Err: werr}
	}
	return nil
}

// ForgetMember removes dir's member record: the member was taken (or its
// container is gone), so scans no longer name it. A missing record is not
// an error.
func ForgetMember(dir string) error {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, MemberRecordName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &errdefs.FilesystemError{Op: "forget pool member", Path: dir, Err: err}
	}
	return nil
}

// ScannedMember is a tools member a scan found: its container id, member
// id and checked directory.
type ScannedMember struct {
	ContainerID string
	MemberID    string
	Dir         string
}

// ScanMembers names the tools members of pool under root that still carry
// a member record: each directory pool-<pool>-<12 hex> that passes
// MemberDir's checks and holds a valid record (a regular file of this
// user, not a link, one container id). It asks no engine: a member it names
// may have been claimed or removed meanwhile, and a member made without a
// record is missed. A missing root names none.
func ScanMembers(root, pool string) ([]ScannedMember, error) {
	if root == "" {
		var err error
		if root, err = DefaultWorkspaceRoot(); err != nil {
			return nil, err
		}
	}
	if err := checkMemberNames(pool, "x"); err != nil {
		return nil, err
	}
	f, err := os.Open(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &errdefs.FilesystemError{Op: "scan pool members", Path: root, Err: err}
	}
	names, err := f.Readdirnames(maxScanEntries)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &errdefs.FilesystemError{Op: "scan pool members", Path: root, Err: err}
	}
	prefix := MemberDirPrefix + pool + "-"
	var out []ScannedMember
	for _, n := range names {
		id, ok := strings.CutPrefix(n, prefix)
		if !ok || !memberIDOnly.MatchString(id) {
			continue
		}
		dir := filepath.Join(root, n)
		cid, err := readMemberRecord(dir)
		if err != nil {
			continue
		}
		if _, err := MemberDir(root, pool, id); err != nil {
			continue
		}
		out = append(out, ScannedMember{ContainerID: cid, MemberID: id, Dir: dir})
		if len(out) == maxScanMembers {
			break
		}
	}
	return out, nil
}

// readMemberRecord reads dir's member record without following a link.
func readMemberRecord(dir string) (string, error) {
	f, err := os.OpenFile(filepath.Join(dir, MemberRecordName), os.O_RDONLY|noFollow|openNoWait, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || !ownedByMe(fi) || fi.Size() > 128 {
		return "", errdefs.ErrRefused
	}
	var buf [129]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	id := strings.TrimSpace(string(buf[:n]))
	if !containerIDPattern.MatchString(id) {
		return "", errdefs.ErrInvalidValue
	}
	return id, nil
}
