package creds

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/podbot/podbot/errdefs"
)

// Credential families, in the fixed order of Archive.Paths.
const (
	// ClaudeDir is Claude Code's directory below a home directory.
	ClaudeDir = ".claude"
	// CodexDir is Codex's directory below a home directory.
	CodexDir = ".codex"
)

// DefaultTargetHome is the agent user's home directory in the container.
const DefaultTargetHome = "/root"

// DefaultMaxBytes bounds the archive size when BuildOptions.MaxBytes is zero.
const DefaultMaxBytes int64 = 256 << 20

// tarBlock is the size of a tar header, counted against the bound.
const tarBlock = 512

// BuildOptions select what goes into the credentials archive.
type BuildOptions struct {
	// HostHome is the host directory holding .claude and .codex (usually
	// the user's home). Required.
	HostHome string
	// CopyClaude selects HostHome/.claude (creds.copy_claude).
	CopyClaude bool
	// CopyCodex selects HostHome/.codex (creds.copy_codex).
	CopyCodex bool
	// TargetHome is the absolute in-container home the archive is
	// extracted into; empty means DefaultTargetHome.
	TargetHome string
	// Exclude lists creds.exclude patterns (see DefaultExcludes for the
	// syntax). Nil means DefaultExcludes(); an empty, non-nil slice
	// excludes nothing.
	Exclude []string
	// UID and GID own every entry in the container.
	UID, GID int
	// MaxBytes bounds the archive size; zero means DefaultMaxBytes.
	MaxBytes int64
	// Overrides maps archive names (e.g. CodexAuthName) to the contents
	// archived instead of the host file's; the host file keeps its mode and
	// is never modified. Such an entry must be a regular file on the host.
	Overrides map[string][]byte
	// GitConfig, when set, is written to TargetHome/.gitconfig (mode
	// 0644, owned by UID and GID): the agent's git identity (see
	// GitConfigFile), put with the credentials so no exec is needed.
	GitConfig []byte
	// Forbidden lists real secret values that must not enter the sandbox:
	// an archive that holds one (in any file) is refused, naming the file.
	Forbidden []string
}

// Archive is a built credentials tar ready for upload.
type Archive struct {
	// Tar is the archive. Entry names are relative ("./"-free) to
	// TargetHome, e.g. ".claude/settings.json".
	Tar []byte
	// TargetHome is the in-container directory to extract Tar into.
	TargetHome string
	// Paths lists the in-container credential directories, .claude before
	// .codex, for the families that were selected and present.
	Paths []string
	// GitConfig is the in-container path of the git identity file, when
	// BuildOptions.GitConfig was set.
	GitConfig string
	// Skipped lists host paths left out because they are neither regular
	// files, directories nor symlinks (sockets, FIFOs, devices).
	Skipped []string
}

// Reader returns a reader over the archive bytes.
func (a *Archive) Reader() io.Reader { return bytes.NewReader(a.Tar) }

// Build reads the selected credential directories and returns them as one
// tar archive. It returns (nil, nil) when nothing is selected or no selected
// directory exists: there is nothing to upload.
//
// File modes are kept as they are on the host; symlinks are stored as links
// with their target unchanged and never followed (only the selected
// directory itself is resolved when it is a symlink). A selected path that
// exists but is not a directory is an *errdefs.FilesystemError naming it, as
// is any host read failure.
func Build(ctx context.Context, opts BuildOptions) (*Archive, error) {
	return build(ctx, opts, os.Open)
}

func build(ctx context.Context, opts BuildOptions, open func(string) (*os.File, error)) (*Archive, error) {
	target, err := targetHome(opts.TargetHome)
	if err != nil {
		return nil, err
	}
	patterns := opts.Exclude
	if patterns == nil {
		patterns = DefaultExcludes()
	}
	ex, err := newExcluder(patterns)
	if err != nil {
		return nil, err
	}
	var families []string
	if opts.CopyClaude {
		families = append(families, ClaudeDir)
	}
	if opts.CopyCodex {
		families = append(families, CodexDir)
	}
	if len(families) == 0 && opts.GitConfig == nil {
		return nil, nil
	}
	if len(families) > 0 && opts.HostHome == "" {
		return nil, &errdefs.ConfigError{Key: "creds", Reason: errdefs.ErrMissingRequired,
			Msg: "the host home directory is unknown; set HOME"}
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	b := &builder{ctx: ctx, open: open, ex: ex, uid: opts.UID, gid: opts.GID, limit: limit, overrides: opts.Overrides}
	b.tw = tar.NewWriter(&b.buf)
	arch := &Archive{TargetHome: target}
	for _, fam := range families {
		src := filepath.Join(opts.HostHome, fam)
		root, ok, err := resolveFamily(src)
		if err != nil {
			return nil, err
		}
		if !ok || ex.excluded(fam) {
			continue
		}
		if err := b.addTree(fam, root); err != nil {
			return nil, err
		}
		arch.Paths = append(arch.Paths, path.Join(target, fam))
	}
	if opts.GitConfig != nil {
		if err := b.addGitConfig(opts.GitConfig); err != nil {
			return nil, err
		}
		arch.GitConfig = path.Join(target, GitConfigFileName)
	}
	if len(arch.Paths) == 0 && arch.GitConfig == "" {
		return nil, nil
	}
	if err := b.tw.Close(); err != nil {
		return nil, &errdefs.FilesystemError{Op: "archive", Path: opts.HostHome, Msg: "cannot finish the credentials archive", Err: err}
	}
	arch.Tar = b.buf.Bytes()
	if err := checkForbidden(arch.Tar, opts.HostHome, opts.Forbidden); err != nil {
		return nil, err
	}
	arch.Skipped = b.skipped
	return arch, nil
}

// targetHome validates the in-container home directory.
func targetHome(raw string) (string, error) {
	if raw == "" {
		return DefaultTargetHome, nil
	}
	clean := path.Clean(raw)
	if !path.IsAbs(raw) || clean != strings.TrimSuffix(raw, "/") || clean == "/" {
		return "", &errdefs.ConfigError{Key: "agent.home", Reason: errdefs.ErrInvalidValue,
			Msg: fmt.Sprintf("the agent home %q must be a clean absolute path other than /", raw)}
	}
	return clean, nil
}

// resolveFamily stats a selected directory. ok is false when it does not
// exist; a symlinked directory is resolved once so its contents are copied.
func resolveFamily(src string) (root string, ok bool, err error) {
	info, err := os.Stat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, &errdefs.FilesystemError{Op: "stat", Path: src, Msg: "cannot read the credentials directory", Err: err}
	case !info.IsDir():
		return "", false, &errdefs.FilesystemError{Op: "stat", Path: src,
			Msg: "exists but is not a directory; remove it or turn off the matching creds.copy_* setting"}
	}
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return "", false, &errdefs.FilesystemError{Op: "resolve", Path: src, Msg: "cannot resolve the credentials directory", Err: err}
	}
	return real, true, nil
}

// builder writes one archive within a size bound.
type builder struct {
	ctx      context.Context
	open     func(string) (*os.File, error)
	ex       *excluder
	uid, gid int
	limit    int64
	used     int64
	buf      bytes.Buffer
	tw       *tar.Writer
	skipped  []string
	// overrides are BuildOptions.Overrides.
	overrides map[string][]byte
}

// addTree adds root (a host directory) under the archive name fam.
func (b *builder) addTree(fam, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return &errdefs.FilesystemError{Op: "read", Path: p, Msg: "cannot read credentials", Err: walkErr}
		}
		if err := b.ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return &errdefs.FilesystemError{Op: "read", Path: p, Err: err}
		}
		name := path.Join(fam, filepath.ToSlash(rel))
		if p != root && b.ex.excluded(name) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return &errdefs.FilesystemError{Op: "stat", Path: p, Msg: "cannot read credentials", Err: err}
		}
		return b.addEntry(name, p, info)
	})
}

func (b *builder) addEntry(name, hostPath string, info fs.FileInfo) error {
	hdr := &tar.Header{
		Name:    name,
		Mode:    tarMode(info.Mode()),
		Uid:     b.uid,
		Gid:     b.gid,
		ModTime: info.ModTime(),
	}
	if data, ok := b.override(name); ok {
		if !info.Mode().IsRegular() {
			return &errdefs.FilesystemError{Op: "archive", Path: hostPath, Msg: "is not a regular file; podbot cannot replace its contents"}
		}
		hdr.Typeflag = tar.TypeReg
		return b.writeOverride(hdr, hostPath, data)
	}
	switch {
	case info.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
		return b.writeHeader(hdr, hostPath)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(hostPath)
		if err != nil {
			return &errdefs.FilesystemError{Op: "readlink", Path: hostPath, Msg: "cannot read the symlink", Err: err}
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		return b.writeHeader(hdr, hostPath)
	case info.Mode().IsRegular():
		hdr.Typeflag = tar.TypeReg
		hdr.Size = info.Size()
		return b.writeFile(hdr, hostPath, info)
	default:
		b.skipped = append(b.skipped, hostPath)
		return nil
	}
}

// addGitConfig adds the git identity file at the archive's root.
func (b *builder) addGitConfig(data []byte) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: GitConfigFileName, Mode: 0o644, Uid: b.uid, Gid: b.gid,
		Size: int64(len(data)), ModTime: time.Now()}
	if err := b.reserve(hdr.Size, GitConfigFileName); err != nil {
		return err
	}
	if err := b.writeHeader(hdr, GitConfigFileName); err != nil {
		return err
	}
	if _, err := b.tw.Write(data); err != nil {
		return &errdefs.FilesystemError{Op: "archive", Path: GitConfigFileName, Msg: "cannot add the git identity to the credentials archive", Err: err}
	}
	return nil
}

func (b *builder) reserve(n int64, hostPath string) error {
	b.used += n
	if b.used > b.limit {
		return &errdefs.FilesystemError{Op: "archive", Path: hostPath,
			Msg: fmt.Sprintf("credentials exceed the %d-byte limit; add creds.exclude patterns for large files such as session history", b.limit)}
	}
	return nil
}

func (b *builder) writeHeader(hdr *tar.Header, hostPath string) error {
	if err := b.reserve(tarBlock+int64(len(hdr.Name))+int64(len(hdr.Linkname)), hostPath); err != nil {
		return err
	}
	if err := b.tw.WriteHeader(hdr); err != nil {
		return &errdefs.FilesystemError{Op: "archive", Path: hostPath, Msg: "cannot add to the credentials archive", Err: err}
	}
	return nil
}

func (b *builder) writeFile(hdr *tar.Header, hostPath string, info fs.FileInfo) error {
	if err := b.reserve(hdr.Size, hostPath); err != nil {
		return err
	}
	f, err := b.open(hostPath)
	if err != nil {
		return &errdefs.FilesystemError{Op: "open", Path: hostPath, Msg: "cannot read credentials", Err: err}
	}
	defer f.Close()
	// The file must still be the one the walk saw: not swapped for a
	// symlink, FIFO or other file since.
	opened, err := f.Stat()
	if err != nil || !opened.Mode().IsRegular() || !os.SameFile(opened, info) {
		return &errdefs.FilesystemError{Op: "open", Path: hostPath, Msg: "file changed while the credentials archive was being built; try again", Err: err}
	}
	if err := b.writeHeader(hdr, hostPath); err != nil {
		return err
	}
	if _, err := io.CopyN(b.tw, f, hdr.Size); err != nil {
		msg := "cannot read credentials"
		if errors.Is(err, io.EOF) {
			msg = "file shrank while the credentials archive was being built; try again"
		}
		return &errdefs.FilesystemError{Op: "read", Path: hostPath, Msg: msg, Err: err}
	}
	return nil
}

// tarMode maps Go file mode bits to tar's: permissions plus setuid, setgid
// and sticky.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
