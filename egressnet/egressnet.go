package egressnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/podbot/podbot/egress"
	"github.com/podbot/podbot/errdefs"
)

// Names, labels and in-container paths of the egress plumbing.
const (
	// NetworkPrefix names a sandbox's internal network: podbot-net-<sandbox>.
	NetworkPrefix = "podbot-net-"
	// ProxyPrefix names a sandbox's proxy container: podbot-egress-<sandbox>.
	ProxyPrefix = "podbot-egress-"
	// ProxyAlias is the proxy's name on the internal network.
	ProxyAlias = "podbot-egress"
	// ProxyPort is the port the proxy listens on.
	ProxyPort = 3128
	// LabelSandbox, on a network or proxy container, names the sandbox it
	// belongs to.
	LabelSandbox = "podbot.egress.sandbox"
	// LabelRole says what an egress object is: RoleNetwork or RoleProxy.
	LabelRole = "podbot.egress.role"
	// RoleNetwork and RoleProxy are LabelRole's values.
	RoleNetwork, RoleProxy = "network", "proxy"
	// LabelMode, on a sandbox container, is its egress mode.
	LabelMode = "podbot.egress.mode"
	// LabelProxyAddr, on an allowlist sandbox, is the proxy's address on
	// the internal network (its HTTP_PROXY host).
	LabelProxyAddr = "podbot.egress.proxy"
	// PolicyDirTarget is where the policy directory appears in the proxy.
	PolicyDirTarget = "/etc/podbot-egress"
	// PolicyFile is the policy file's name in the policy directory.
	PolicyFile = "policy.json"
	// LogDirTarget is where the log directory appears in the proxy.
	LogDirTarget = "/var/log/podbot-egress"
	// LogFile is the decision log's name in the log directory.
	LogFile = "decisions.jsonl"
	// LoadedFile, in the log directory, is where the proxy records the
	// digest of the policy in force (egress.PolicyDigest), after each load.
	LoadedFile = "policy.loaded"
	// LabelName, on an allowlist sandbox, is the name its proxy, internal
	// network and egress directory are named after when that is not the
	// container's own name: a pool member keeps its member name's egress
	// plumbing when a claim renames it.
	LabelName = "podbot.egress.name"
	// ProxyUser is the proxy container's user (nobody).
	ProxyUser = 65534
	// VaultDirTarget is where the vault directory appears in the proxy
	// (read-only). The sandbox never mounts it.
	VaultDirTarget = "/etc/podbot-egress-vault"
	// SecretsFile, CACertFile and CAKeyFile are the vault directory's
	// files: the secrets with their real values (0600), the sandbox CA's
	// certificate and its private key (0600).
	SecretsFile, CACertFile, CAKeyFile = "secrets.json", "ca.pem", "ca-key.pem"
	// TrustCAFile and TrustBundleFile are the trust directory's files:
	// the sandbox CA's certificate (never its key) and the CA bundle that
	// adds it to the image's system bundle.
	TrustCAFile, TrustBundleFile = "egress-ca.pem", "ca-bundle.pem"
	// LabelSecrets, on an allowlist sandbox with a vault, lists its
	// secrets' names and hosts (JSON, VaultIndex): never a value or a
	// placeholder.
	LabelSecrets = "podbot.egress.secrets"
)

// NetworkName is the internal network of sandbox name.
func NetworkName(sandbox string) string { return NetworkPrefix + sandbox }

// ProxyName is the proxy container of sandbox name.
func ProxyName(sandbox string) string { return ProxyPrefix + sandbox }

// Dirs are the host directories of one sandbox's egress plumbing.
type Dirs struct {
	// Root holds the directories below: <state>/podbot/egress/<sandbox>.
	Root string
	// Policy holds PolicyFile, mounted read-only into the proxy.
	Policy string
	// Log holds LogFile, mounted read-write into the proxy.
	Log string
	// Vault holds the vault's files (SecretsFile, CACertFile, CAKeyFile),
	// mounted read-only into the proxy alone.
	Vault string
	// Trust holds the sandbox's trust files (TrustCAFile, TrustBundleFile),
	// mode 0755, mounted read-only into the sandbox: public certificates
	// only, never the CA key or a secret value. Being under Root, it goes
	// with the egress directory.
	Trust string
}

// TrustPath is the host path of the trust file name (TrustCAFile or
// TrustBundleFile).
func (d Dirs) TrustPath(name string) string { return filepath.Join(d.Trust, name) }

// VaultPath is the host path of the vault file name (SecretsFile,
// CACertFile or CAKeyFile).
func (d Dirs) VaultPath(name string) string { return filepath.Join(d.Vault, name) }

// PolicyPath is the policy file's host path.
func (d Dirs) PolicyPath() string { return filepath.Join(d.Policy, PolicyFile) }

// LoadedPath is the host path of the proxy's LoadedFile.
func (d Dirs) LoadedPath() string { return filepath.Join(d.Log, LoadedFile) }

// DirsAt returns the directories under an egress directory root (a
// sandbox's LabelEgressDir).
func DirsAt(root string) Dirs {
	return dirsAt(filepath.Dir(root), filepath.Base(root))
}

// LogPath is the decision log's host path.
func (d Dirs) LogPath() string { return filepath.Join(d.Log, LogFile) }

// StateRoot is where the egress directories of every sandbox live:
// $XDG_RUNTIME_DIR/podbot/egress, or, without a runtime directory, the
// user's cache directory's podbot/egress.
func StateRoot(runtimeDir string) (string, error) {
	if runtimeDir != "" {
		return filepath.Join(runtimeDir, "podbot", "egress"), nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", &errdefs.ConfigError{Key: "XDG_RUNTIME_DIR", Reason: errdefs.ErrMissingRequired,
			Msg: "the egress proxy's policy and log live under $XDG_RUNTIME_DIR/podbot/egress or the cache directory; set XDG_RUNTIME_DIR"}
	}
	return filepath.Join(cache, "podbot", "egress"), nil
}

// DirsFor returns the directories of sandbox name (they need not exist).
func DirsFor(runtimeDir, sandbox string) (Dirs, error) {
	if !validSandboxDir(sandbox) {
		return Dirs{}, &errdefs.ConfigError{Key: "name", Reason: errdefs.ErrInvalidValue, Msg: fmt.Sprintf("sandbox name %q cannot name a directory", sandbox)}
	}
	root, err := StateRoot(runtimeDir)
	if err != nil {
		return Dirs{}, err
	}
	return dirsAt(root, sandbox), nil
}

// validSandboxDir reports whether sandbox can name one directory under the
// egress root: one path element, not "." or "..".
func validSandboxDir(sandbox string) bool {
	return sandbox != "" && sandbox == filepath.Base(sandbox) && sandbox != "." && sandbox != ".."
}

// dirsAt returns sandbox's directories under the egress root root.
func dirsAt(root, sandbox string) Dirs {
	r := filepath.Join(root, sandbox)
	return Dirs{Root: r, Policy: filepath.Join(r, "policy"), Log: filepath.Join(r, "log"), Vault: filepath.Join(r, "vault"),
		Trust: filepath.Join(r, "trust")}
}

// Make creates the directories, mode 0700. When this process runs as root
// (a rootful engine), the policy, log and vault directories are given to
// ProxyUser, whom the proxy runs as; otherwise ProxyOwner says whom to
// run it as. The trust directory, which the sandbox mounts, is 0755 and
// stays this process's (root's, on a rootful engine).
func (d Dirs) Make() error {
	dirs := []string{filepath.Dir(d.Root), d.Root, d.Policy, d.Log}
	if d.Vault != "" {
		dirs = append(dirs, d.Vault)
	}
	for _, p := range dirs {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return &errdefs.FilesystemError{Op: "mkdir", Path: p, Msg: "cannot make the egress directory", Err: err}
		}
		if err := os.Chmod(p, 0o700); err != nil {
			return &errdefs.FilesystemError{Op: "chmod", Path: p, Msg: "cannot make the egress directory private", Err: err}
		}
	}
	if os.Geteuid() == 0 {
		for _, p := range dirs[2:] {
			if err := os.Chown(p, ProxyUser, ProxyUser); err != nil {
				return &errdefs.FilesystemError{Op: "chown", Path: p, Msg: "cannot give the egress directory to the proxy's user", Err: err}
			}
		}
	}
	if d.Trust != "" {
		if err := os.MkdirAll(d.Trust, 0o755); err != nil {
			return &errdefs.FilesystemError{Op: "mkdir", Path: d.Trust, Msg: "cannot make the sandbox's trust directory", Err: err}
		}
		if err := os.Chmod(d.Trust, 0o755); err != nil {
			return &errdefs.FilesystemError{Op: "chmod", Path: d.Trust, Msg: "cannot make the sandbox's trust directory readable", Err: err}
		}
	}
	return nil
}

// WriteTrust writes the trust file name (TrustCAFile or TrustBundleFile)
// atomically: a temporary file in the trust directory, mode 0644, renamed
// over name, so the sandbox never reads half a bundle. data must hold
// public certificates only.
func (d Dirs) WriteTrust(name string, data []byte) error {
	if d.Trust == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return &errdefs.FilesystemError{Op: "write", Path: filepath.Join(d.Trust, name), Msg: "not a trust file", Err: os.ErrInvalid}
	}
	p := d.TrustPath(name)
	fail := func(op string, err error) error {
		return &errdefs.FilesystemError{Op: op, Path: p, Msg: "cannot write the sandbox's trust file", Err: err}
	}
	f, err := os.CreateTemp(d.Trust, "."+name+".*")
	if err != nil {
		return fail("create", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename: nothing there
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fail("write", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fail("chmod", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fail("sync", err)
	}
	if err := f.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fail("rename", err)
	}
	return nil
}

// Remove removes the directories and what they hold, then the egress and
// podbot directories above them if that left them empty. Missing is fine.
func (d Dirs) Remove() error {
	if d.Root == "" {
		return nil
	}
	if err := os.RemoveAll(d.Root); err != nil && !errors.Is(err, syscall.ENOTDIR) {
		// ENOTDIR: a file where a parent directory should be, so the
		// directory was never made and there is nothing to remove; the
		// error that stopped its making says so already.
		return &errdefs.FilesystemError{Op: "remove", Path: d.Root, Msg: "cannot remove the egress directory", Err: err}
	}
	// os.Remove fails on a directory that is not empty (another sandbox's,
	// or token directories): that is the point.
	if parent := filepath.Dir(d.Root); filepath.Base(parent) == "egress" {
		if os.Remove(parent) == nil && filepath.Base(filepath.Dir(parent)) == "podbot" {
			_ = os.Remove(filepath.Dir(parent))
		}
	}
	return nil
}

// ProxyOwner is the user the proxy container runs as: ProxyUser when this
// process is root (Make gave it the directories), else this process's uid,
// which owns them.
func ProxyOwner() string {
	if os.Geteuid() == 0 {
		return strconv.Itoa(ProxyUser)
	}
	return strconv.Itoa(os.Geteuid())
}

// WritePolicy writes the policy file atomically, mode 0644 inside the 0700
// directory (the proxy, another user, must read it; it holds no secret), in
// the form the proxy reads (egress.WritePolicyFile).
func WritePolicy(path string, p *egress.Policy) error {
	if err := egress.WritePolicyFile(path, p); err != nil {
		return &errdefs.FilesystemError{Op: "write", Path: path, Msg: "cannot write the egress policy", Err: err}
	}
	return nil
}

// ReadPolicy reads a policy file WritePolicy wrote (egress.ReadPolicyFile).
func ReadPolicy(path string) (*egress.Policy, error) {
	p, err := egress.ReadPolicyFile(path)
	if err == nil {
		return p, nil
	}
	fe := &errdefs.FilesystemError{Op: "read", Path: path, Msg: "cannot read the egress policy", Err: err}
	switch {
	case errors.Is(err, os.ErrNotExist):
		fe.Msg = "the sandbox has no egress policy (it was not launched in allowlist mode, or its egress directory is gone)"
	case errors.Is(err, egress.ErrBadPolicyFile):
		fe.Op = "parse"
		fe.Msg = "the egress policy file is not valid"
	}
	return nil, fe
}
