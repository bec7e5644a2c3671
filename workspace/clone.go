package workspace

import (
	"net/url"
	"path"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// DefaultCloneBaseURL is where repositories are cloned from unless
// github.clone_base_url overrides it (GitHub Enterprise Server, tests).
const DefaultCloneBaseURL = "https://github.com/"

// DefaultAskpassPath is where the sandbox image installs the GIT_ASKPASS
// helper that answers x-access-token and the content of
// /run/secrets/ghapp_token.
const DefaultAskpassPath = "/usr/local/bin/podbot-askpass"

// CloneDir is the directory a repository is cloned into: baseDir/<name>.
func CloneDir(repo Repo, baseDir string) string { return path.Join(baseDir, repo.Name) }

// CloneEnv returns the environment for the clone execs: git asks the askpass
// helper for credentials and never prompts on a terminal. The token itself is
// never in argv, env or the URL; the helper reads it from the mounted file.
func CloneEnv(askpassPath string) []string {
	if askpassPath == "" {
		askpassPath = DefaultAskpassPath
	}
	return []string{"GIT_ASKPASS=" + askpassPath, "GIT_TERMINAL_PROMPT=0"}
}

// CloneURL returns the HTTPS clone URL of repo under cloneBaseURL (empty for
// DefaultCloneBaseURL). The base must be http or https with a host and no
// credentials, query or fragment: a token never goes into a URL.
func CloneURL(repo Repo, cloneBaseURL string) (string, error) {
	if _, err := ParseRepo(repo.String()); err != nil {
		return "", err
	}
	if cloneBaseURL == "" {
		cloneBaseURL = DefaultCloneBaseURL
	}
	u, err := url.Parse(cloneBaseURL)
	bad := func(msg string) error {
		return &errdefs.ConfigError{Key: "github.clone_base_url", Reason: errdefs.ErrInvalidValue,
			Msg: "clone base URL " + quote(redactURL(cloneBaseURL)) + " " + msg}
	}
	switch {
	case err != nil:
		return "", bad("is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return "", bad("must use https (or http for a local test server)")
	case u.Host == "":
		return "", bad("has no host")
	case u.User != nil:
		return "", bad("must not carry credentials; podbot passes the token through GIT_ASKPASS")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", bad("must not have a query or fragment")
	}
	return strings.TrimSuffix(u.String(), "/") + "/" + repo.Owner + "/" + repo.Name + ".git", nil
}

// redactURL replaces anything before '@' in the authority so a mistaken
// user:token in the configured URL never reaches an error message.
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			return "REDACTED@" + s[i+1:]
		}
		return s
	}
	authority, tail, hasTail := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = "REDACTED@" + authority[i+1:]
	}
	if hasTail {
		return scheme + "://" + authority + "/" + tail
	}
	return scheme + "://" + authority
}

// CloneCommands returns the argv of the execs that clone repo at branch into
// CloneDir(repo, baseDir) inside the container, in order: the clone, then
// the verification whose output CheckHEAD compares with branch. Run them
// with CloneEnv. Credential helpers are reset so only GIT_ASKPASS answers,
// and -- separates options from the URL and directory.
func CloneCommands(repo Repo, branch, baseDir, cloneBaseURL string) ([][]string, error) {
	if err := ValidateBranch(branch); err != nil {
		return nil, err
	}
	if baseDir == "" || !path.IsAbs(baseDir) || path.Clean(baseDir) != baseDir || baseDir == "/" {
		return nil, &errdefs.ConfigError{Key: "workspace.base_dir", Reason: errdefs.ErrInvalidValue,
			Msg: "clone base directory " + quote(baseDir) + " must be a clean absolute container path other than /, for example /work"}
	}
	u, err := CloneURL(repo, cloneBaseURL)
	if err != nil {
		return nil, err
	}
	dir := CloneDir(repo, baseDir)
	return [][]string{
		{"git", "-c", "credential.helper=", "clone", "--branch", branch, "--", u, dir},
		{"git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD"},
	}, nil
}

// CheckHEAD compares the output of the verification command with the branch
// that was asked for.
func CheckHEAD(output, branch string) error {
	got := strings.TrimSpace(output)
	if got == branch {
		return nil
	}
	return &errdefs.ContainerError{Op: "verify clone", Reason: errdefs.ErrExecFailed,
		Msg:  "the clone checked out " + quote(got) + " instead of branch " + quote(branch),
		Hint: "check that the branch exists in the repository"}
}
