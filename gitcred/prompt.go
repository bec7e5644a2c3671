package gitcred

import (
	"fmt"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Kind says what git asks for.
type Kind int

// The two questions git puts to its askpass program.
const (
	// AskUsername is "Username for '...': ".
	AskUsername Kind = iota + 1
	// AskPassword is "Password for '...': ".
	AskPassword
)

// maxPromptLen bounds a prompt; git's describe a URL without its path.
const maxPromptLen = 4096

const (
	usernamePrefix = "Username for '"
	passwordPrefix = "Password for '"
	promptSuffix   = "': "
)

// Prompt is git's question, split the way git built it: git prints
// "<Kind> for '<scheme>://[<user>@]<host>[/<path>]': ", with the user and
// host URL-decoded and not encoded again, and its own URL parser ends the
// user at the first '@'. Prompt splits at the first '@' the same way, so a
// host that itself holds '@' never looks like the allowed one.
type Prompt struct {
	// Kind is what git asks for.
	Kind Kind
	// Scheme is the URL scheme as git printed it.
	Scheme string
	// User is the user name git printed; HasUser tells an empty one apart
	// from none.
	User    string
	HasUser bool
	// HostPort is the host and optional port as git printed them.
	HostPort string
	// Path is what followed the host (git prints one only with
	// credential.useHttpPath); HasPath tells an empty one apart from none.
	Path    string
	HasPath bool
}

// LooksLikePrompt reports whether s starts like one of git's credential
// prompts, so a program can tell an askpass call from a command line.
func LooksLikePrompt(s string) bool {
	return strings.HasPrefix(s, usernamePrefix) || strings.HasPrefix(s, passwordPrefix)
}

// ParsePrompt splits one of git's credential prompts. Anything that is not
// exactly "Username for '...': " or "Password for '...': " around a
// "scheme://authority" without control characters is an
// errdefs.ErrRefused error.
func ParsePrompt(s string) (Prompt, error) {
	var p Prompt
	refuse := func(msg string) (Prompt, error) {
		return Prompt{}, &RefusedError{Prompt: s, Msg: msg}
	}
	if len(s) > maxPromptLen {
		return refuse("the prompt is too long")
	}
	var inner string
	switch {
	case strings.HasPrefix(s, usernamePrefix):
		p.Kind, inner = AskUsername, s[len(usernamePrefix):]
	case strings.HasPrefix(s, passwordPrefix):
		p.Kind, inner = AskPassword, s[len(passwordPrefix):]
	default:
		return refuse("expected git's \"Username for '...': \" or \"Password for '...': \" prompt")
	}
	inner, ok := strings.CutSuffix(inner, promptSuffix)
	if !ok {
		return refuse("the prompt does not end in \"': \" as git's do")
	}
	if strings.ContainsFunc(inner, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return refuse("the prompt holds control characters")
	}
	scheme, rest, ok := strings.Cut(inner, "://")
	if !ok || scheme == "" {
		return refuse("the prompt names no scheme://host")
	}
	p.Scheme = scheme
	if user, after, found := strings.Cut(rest, "@"); found {
		p.User, p.HasUser, rest = user, true, after
	}
	p.HostPort, p.Path, p.HasPath = strings.Cut(rest, "/")
	if p.HostPort == "" {
		return refuse("the prompt names no host")
	}
	return p, nil
}

// URL renders the prompt's URL as git printed it, for messages.
func (p Prompt) URL() string {
	var b strings.Builder
	b.WriteString(p.Scheme + "://")
	if p.HasUser {
		b.WriteString(p.User + "@")
	}
	b.WriteString(p.HostPort)
	if p.HasPath {
		b.WriteString("/" + p.Path)
	}
	return b.String()
}

// Allows reports, as a nil error, whether git may get the token for the
// prompt p: the scheme must be exactly o's, the host and port equal to o's
// (the host compared without case, a default port the same as none), the
// user name absent or exactly Username (and absent when git asks for one),
// and no path. Otherwise the error is a *RefusedError naming what git
// asked for and what is allowed.
func (o Origin) Allows(p Prompt) error {
	refuse := func(msg string) error {
		return &RefusedError{Prompt: p.URL(), Allowed: o.String(), Msg: msg}
	}
	if o.Scheme == "" || o.Host == "" {
		return refuse("no clone origin is configured, so git gets no token")
	}
	if p.Scheme != o.Scheme {
		return refuse(fmt.Sprintf("the scheme %q is not the clone origin's", p.Scheme))
	}
	got, ok := canonical(p.Scheme, p.HostPort)
	if !ok || got != o {
		return refuse(fmt.Sprintf("the host %q is not the clone host", p.HostPort))
	}
	switch {
	case p.Kind == AskUsername && p.HasUser:
		return refuse("git asks for a user name but already has one")
	case p.HasUser && p.User != Username:
		return refuse(fmt.Sprintf("the user name %q is not %s", p.User, Username))
	}
	if p.HasPath {
		return refuse("the prompt names a path (credential.useHttpPath); podbot answers for the host only")
	}
	return nil
}

// Answer answers git's askpass prompt: Username for the user name and the
// token (from token, called only then) for the password, when the prompt is
// for origin o; otherwise a *RefusedError.
func Answer(o Origin, prompt string, token func() (string, error)) (string, error) {
	p, err := ParsePrompt(prompt)
	if err != nil {
		if re, ok := err.(*RefusedError); ok {
			re.Allowed = o.String()
		}
		return "", err
	}
	if err := o.Allows(p); err != nil {
		return "", err
	}
	if p.Kind == AskUsername {
		return Username, nil
	}
	return token()
}

// RefusedError is a prompt podbot will not answer. It matches
// errdefs.ErrRefused.
type RefusedError struct {
	// Prompt is the URL git asked about (or the whole prompt when it could
	// not be parsed).
	Prompt string
	// Allowed is the configured clone origin.
	Allowed string
	// Msg says why.
	Msg string
}

func (e *RefusedError) Error() string {
	allowed := e.Allowed
	if allowed == "" {
		allowed = "(none)"
	}
	return fmt.Sprintf("refusing to give the GitHub token to git for %q: %s; only %s (github.clone_base_url) gets it", e.Prompt, e.Msg, allowed)
}

// Is matches errdefs.ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == errdefs.ErrRefused }
