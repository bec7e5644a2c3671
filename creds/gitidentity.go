package creds

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"unicode"
)

// maxIdentityLen bounds user.name and user.email values.
const maxIdentityLen = 256

// GitIdentity reads user.name and user.email through gitConfigGet (see
// HostGitConfig) and returns them trimmed. A key that is unset, fails to
// read, is too long or holds control characters (such as a newline) comes
// back empty, so the container simply has no value for it.
func GitIdentity(ctx context.Context, gitConfigGet func(key string) (string, error)) (name, email string) {
	read := func(key string) string {
		if ctx.Err() != nil {
			return ""
		}
		v, err := gitConfigGet(key)
		if err != nil {
			return ""
		}
		v = strings.TrimSpace(v)
		if !validIdentity(v) {
			return ""
		}
		return v
	}
	return read("user.name"), read("user.email")
}

func validIdentity(v string) bool {
	if v == "" || len(v) > maxIdentityLen {
		return false
	}
	return !strings.ContainsFunc(v, unicode.IsControl)
}

// GitConfigFileName is the file, below the agent's home, that holds its git
// identity (git's global configuration).
const GitConfigFileName = ".gitconfig"

// GitConfigFile returns the contents of a git configuration file that sets
// user.name and user.email, each only when valid and non-empty; nil when
// neither is. Values are quoted, with backslashes and double quotes escaped,
// so no value can end the section or start another key (newlines and
// other control characters were refused by GitIdentity and are here too).
func GitConfigFile(name, email string) []byte {
	var b strings.Builder
	for _, kv := range [][2]string{{"name", name}, {"email", email}} {
		if validIdentity(kv[1]) {
			b.WriteString("\t" + kv[0] + " = " + quoteConfigValue(kv[1]) + "\n")
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return []byte("# written by podbot from the host's git identity\n[user]\n" + b.String())
}

// GitConfigEnv returns environment entries that give git the identity
// without any file (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n,
// read by git 2.31 and later as command-line configuration): for a
// sandbox whose root filesystem is read-only, where no file can be put.
// Nil when neither value is valid.
func GitConfigEnv(name, email string) []string {
	var env []string
	n := 0
	for _, kv := range [][2]string{{"user.name", name}, {"user.email", email}} {
		if validIdentity(kv[1]) {
			i := strconv.Itoa(n)
			env = append(env, "GIT_CONFIG_KEY_"+i+"="+kv[0], "GIT_CONFIG_VALUE_"+i+"="+kv[1])
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return append([]string{"GIT_CONFIG_COUNT=" + strconv.Itoa(n)}, env...)
}

// quoteConfigValue quotes v for a git configuration file.
func quoteConfigValue(v string) string {
	r := strings.NewReplacer("\\", "\\\\", "\"", "\\\"")
	return "\"" + r.Replace(v) + "\""
}

// HostGitConfig returns a getter that runs `git config --get KEY` on the
// host. An unset key reads as "" without error; output is bounded.
func HostGitConfig(ctx context.Context) func(key string) (string, error) {
	return func(key string) (string, error) {
		if !validConfigKey(key) {
			return "", errors.New("invalid git config key")
		}
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "git", "config", "--get", "--", key)
		cmd.Stdout = &limitedWriter{w: &out, n: maxIdentityLen * 4}
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return "", nil // key not set
		}
		if err != nil {
			return "", err
		}
		return strings.TrimRight(out.String(), "\r\n"), nil
	}
}

// validConfigKey accepts "section.name" keys made of letters and digits.
func validConfigKey(key string) bool {
	section, name, ok := strings.Cut(key, ".")
	isWord := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		})
	}
	return ok && isWord(section) && isWord(name)
}

// limitedWriter keeps the first n bytes and discards the rest.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
