package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/podbot/podbot/errdefs"
)

// DefaultMaxScanEntries bounds the walk that looks for unix sockets in a
// host-mount tree when HostMountPolicy.MaxScanEntries is zero.
const DefaultMaxScanEntries = 200_000

// CredentialDirs are the directories under a home directory that hold the
// user's credentials. A host mount may neither contain nor lie inside one.
var credentialDirs = [...]string{
	".ssh", ".gnupg", ".aws", ".kube", ".docker", ".config/gh", ".claude", ".codex",
	".config/podbot", ".cache/podbot", ".netrc", ".git-credentials", ".config/git/credentials",
}

// Protected is a host path that must never enter a sandbox through a host
// mount: the mount may neither contain it nor lie inside it.
type Protected struct {
	// Path is an absolute host path; paths that do not exist are skipped.
	Path string
	// What names it in the refusal, for example "podbot's config file".
	What string
}

// HostMountPolicy is what a host-mount path is checked against.
type HostMountPolicy struct {
	// AllowedRoots are the directories the mount must resolve inside
	// (workspace.allowed_roots).
	AllowedRoots []string
	// Home is the user's home directory. It may not be mounted itself, and
	// its credential directories (~/.ssh, ~/.aws, ~/.claude, ...) are
	// protected. Empty skips both checks.
	Home string
	// Protected are further paths the mount must not expose (podbot's config
	// and state, the GitHub App private key, the engine socket).
	Protected []Protected
	// MaxScanEntries bounds the walk that looks for unix sockets inside the
	// tree; 0 selects DefaultMaxScanEntries. A tree with more entries is
	// refused, since podbot cannot vouch for what it did not see.
	MaxScanEntries int
}

// protectedPaths lists the policy's protected paths with the home
// directory's credential directories added.
func (p HostMountPolicy) protectedPaths() []Protected {
	out := append([]Protected(nil), p.Protected...)
	if p.Home != "" && filepath.IsAbs(p.Home) {
		for _, d := range credentialDirs {
			out = append(out, Protected{Path: filepath.Join(p.Home, d), What: "your credentials (~/" + d + ")"})
		}
	}
	return out
}

// guardTree refuses a canonical mount source that is the home directory,
// contains or lies inside a protected path, or holds a unix socket.
func guardTree(hostPath, resolved string, p HostMountPolicy) error {
	if p.Home != "" {
		if home, err := filepath.EvalSymlinks(p.Home); err == nil && home == resolved {
			return refuseExposure(hostPath, "is your home directory, which holds your credentials and podbot's own configuration")
		}
	}
	for _, pr := range p.protectedPaths() {
		if pr.Path == "" || !filepath.IsAbs(pr.Path) {
			continue
		}
		canon, err := filepath.EvalSymlinks(pr.Path)
		if err != nil {
			continue // nothing there to expose
		}
		switch {
		case within(canon, resolved):
			return refuseExposure(hostPath, "contains "+pr.What+" at "+quote(canon))
		case within(resolved, canon):
			return refuseExposure(hostPath, "lies inside "+pr.What+" at "+quote(canon))
		}
	}
	return scanSockets(hostPath, resolved, p.MaxScanEntries)
}

// errScanLimit stops the socket walk at its bound.
var errScanLimit = errors.New("scan limit reached")

// scanSockets walks the tree (never following symlinks) and refuses it when
// it holds a unix socket: a socket in a bind mount is reachable from the
// container, and an engine's or agent's socket there is a way out.
func scanSockets(hostPath, root string, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxScanEntries
	}
	seen := 0
	var socket string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		seen++
		if seen > limit {
			return errScanLimit
		}
		if d.Type()&fs.ModeSocket != 0 {
			socket = p
			return fs.SkipAll
		}
		return nil
	})
	switch {
	case socket != "":
		return refuseExposure(hostPath, "holds the unix socket "+quote(socket)+
			" (a socket inside a mounted tree is reachable from the sandbox); stop what serves it or mount a directory without it")
	case errors.Is(err, errScanLimit):
		return &errdefs.ConfigError{Key: "workspace.max_scan_entries", Reason: errdefs.ErrRefused,
			Msg: "host path " + quote(hostPath) + " holds more than " + strconv.Itoa(limit) +
				" entries, so podbot could not check all of it for unix sockets; mount a smaller directory or raise workspace.max_scan_entries"}
	case err != nil:
		return fsError("scan", root, err)
	}
	return nil
}

func refuseExposure(hostPath, why string) error {
	return &errdefs.ConfigError{Key: "workspace.host_path", Reason: errdefs.ErrRefused,
		Msg: "host path " + quote(hostPath) + " " + why + "; a host mount must not expose what lets a sandbox out"}
}

// gitDir returns dir/.git when it is a real directory holding a regular
// config file, and "" when dir has no repository of its own (no .git, or a
// worktree's .git file, whose git directory lies elsewhere and is not
// mounted). A .git that is a symlink is refused: it may lead to a git
// directory inside the mount that podbot could not keep read-only.
func gitDir(hostPath, dir string) (string, error) {
	g := filepath.Join(dir, ".git")
	info, err := os.Lstat(g)
	switch {
	case err != nil:
		return "", nil
	case info.Mode()&fs.ModeSymlink != 0:
		return "", refuseExposure(hostPath, "has a .git that is a symlink, so podbot cannot keep its hooks and config read-only; "+
			"replace it with the directory itself or mount a directory without it")
	case !info.IsDir():
		return "", nil
	}
	cfg, err := os.Lstat(filepath.Join(g, "config"))
	if err != nil || !cfg.Mode().IsRegular() {
		return "", nil
	}
	return g, nil
}

// EnsureHooksDir creates m's .git/hooks when it is missing (git init always
// makes it, but it may have been removed), owned like the repository, so
// it can be mounted read-only over the agent's view.
func EnsureHooksDir(m Mount) error {
	if m.GitDir == "" {
		return nil
	}
	hooks := filepath.Join(m.GitDir, "hooks")
	info, err := os.Lstat(hooks)
	switch {
	case err == nil && info.IsDir():
		return nil
	case err == nil:
		return refuseExposure(m.Source, "has a .git/hooks that is not a directory; remove it so podbot can keep the hooks read-only")
	case !errors.Is(err, fs.ErrNotExist):
		return fsError("stat", hooks, err)
	}
	if err := os.Mkdir(hooks, 0o755); err != nil {
		return fsError("mkdir", hooks, err)
	}
	if m.OwnerKnown && os.Geteuid() == 0 {
		if err := os.Lchown(hooks, m.UID, m.GID); err != nil {
			return fsError("chown", hooks, err)
		}
	}
	return nil
}
