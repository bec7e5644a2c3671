package gitcred

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/podbot/podbot/errdefs"
)

// Username is the user name GitHub expects with an installation token.
const Username = "x-access-token"

// Paths inside the sandbox: podbot mounts its token directory read-only at
// SecretsDir, holding the token and the origin it may be sent to.
const (
	// SecretsDir is where the token directory appears in the sandbox.
	SecretsDir = "/run/secrets"
	// OriginFileName is the name of the file holding the allowed origin.
	OriginFileName = "git_origin"
	// TokenPath is the installation token file in the sandbox.
	TokenPath = SecretsDir + "/ghapp_token"
	// OriginPath is the allowed-origin file in the sandbox.
	OriginPath = SecretsDir + "/" + OriginFileName
)

// maxOriginLen bounds an origin: scheme, a DNS name of at most 253 bytes
// and a port.
const maxOriginLen = 300

// Origin is the one place git may send the token: a scheme (http or https),
// a lowercased host and a port, which is empty when it is the scheme's
// default. The zero Origin allows nothing.
type Origin struct {
	// Scheme is "https" or "http".
	Scheme string
	// Host is a lowercased DNS name or IPv4 address, or an IPv6 address in
	// brackets.
	Host string
	// Port is the port in decimal, empty for the scheme's default port.
	Port string
}

// ParseOrigin reads the origin of a clone base URL such as
// "https://github.com/" or "http://10.88.0.1:8080/git/". The path is
// ignored. A URL with credentials, a query or a fragment, a scheme other
// than http or https, a host that is not a plain DNS name or IP address, a
// host with a trailing dot, or a port outside 1-65535 is refused with an
// errdefs.ConfigError for key github.clone_base_url.
func ParseOrigin(raw string) (Origin, error) {
	bad := func(msg string) error {
		return &errdefs.ConfigError{Key: "github.clone_base_url", Reason: errdefs.ErrInvalidValue,
			Msg: "the clone base URL " + msg}
	}
	if len(raw) > maxOriginLen+1024 {
		return Origin{}, bad("is too long")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return Origin{}, bad("is not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return Origin{}, bad("must use https (or http for a local test server)")
	case u.User != nil:
		return Origin{}, bad("must not carry credentials")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return Origin{}, bad("must not have a query or fragment")
	case u.Opaque != "":
		return Origin{}, bad("must be of the form scheme://host[:port]/")
	}
	o, ok := canonical(u.Scheme, u.Host)
	if !ok {
		return Origin{}, bad("must name a host as a DNS name or IP address (no trailing dot) and, optionally, a port between 1 and 65535")
	}
	return o, nil
}

// String renders the origin as "scheme://host[:port]"; ParseOrigin reads it
// back unchanged.
func (o Origin) String() string {
	if o.Scheme == "" {
		return ""
	}
	return o.Scheme + "://" + o.hostPort()
}

func (o Origin) hostPort() string {
	if o.Port == "" {
		return o.Host
	}
	return o.Host + ":" + o.Port
}

// canonical checks a URL authority without user info ("host", "host:port",
// "[v6]" or "[v6]:port") and returns it as an Origin: host lowercased,
// default port dropped. It accepts only hosts made of ASCII letters, digits,
// '.' and '-' that do not end in a dot, IPv4 addresses, and bracketed IPv6
// addresses without a zone.
func canonical(scheme, authority string) (Origin, bool) {
	if authority == "" || len(authority) > maxOriginLen {
		return Origin{}, false
	}
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return Origin{}, false
		}
		host, port = authority[:end+1], authority[end+1:]
		if port != "" {
			if port[0] != ':' {
				return Origin{}, false
			}
			port = port[1:]
			if port == "" {
				return Origin{}, false
			}
		}
		ip := net.ParseIP(host[1 : len(host)-1])
		if ip == nil || ip.To4() != nil && !strings.Contains(host, ":") {
			return Origin{}, false
		}
		host = "[" + ip.String() + "]"
	} else {
		if i := strings.IndexByte(authority, ':'); i >= 0 {
			host, port = authority[:i], authority[i+1:]
			if port == "" {
				return Origin{}, false
			}
		}
		if !dnsName(host) {
			return Origin{}, false
		}
		host = strings.ToLower(host)
	}
	if port != "" {
		if port[0] == '0' || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return Origin{}, false
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Origin{}, false
		}
		if port == defaultPort(scheme) {
			port = ""
		}
	}
	return Origin{Scheme: scheme, Host: host, Port: port}, true
}

// dnsName accepts non-empty ASCII names of letters, digits, '-' and '.'
// labels, without empty labels (so no leading or trailing dot).
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			default:
				return false
			}
		}
	}
	return true
}

func defaultPort(scheme string) string {
	switch scheme {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
