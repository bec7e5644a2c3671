package creds

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
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

// GitConfigCommands returns the argv of the git commands that set name and
// email globally in the container, one command per non-empty, valid value.
// Values travel as single arguments after "--"; no shell is involved.
func GitConfigCommands(name, email string) [][]string {
	var cmds [][]string
	for _, kv := range [][2]string{{"user.name", name}, {"user.email", email}} {
		if validIdentity(kv[1]) {
			cmds = append(cmds, []string{"git", "config", "--global", "--", kv[0], kv[1]})
		}
	}
	return cmds
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
