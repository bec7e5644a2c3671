// Package egress owns a sandbox's network egress policy and the proxy that
// enforces it: which hosts and ports a sandbox may reach (allow rules, live
// denies, pinned names), the refusal of private and metadata addresses that
// no rule names exactly, and the decision log. It is a library: it never
// prints, and it knows nothing about engines or configuration files.
//
// The Proxy serves two kinds of request. A CONNECT opens a tunnel, and
// every tunnel, on any port, must start with a TLS ClientHello whose
// server name (SNI) is the CONNECT host (a tunnel to an IP address must
// carry no SNI): a tunnel of clear bytes would let a client send any Host
// header to an allowed address. An absolute-form http:// request is
// forwarded, its Host taken from the request line. Either way the name is
// decided first (Policy.Decide), then every address it is reached at
// (pinned, literal or resolved) is checked (Policy.CheckAddress), and the
// proxy dials the checked address itself, never the name again.
//
// What SNI matching cannot see: the Host inside an encrypted tunnel (a CDN
// that routes by that Host still allows fronting behind an allowed name),
// and the inner name of an Encrypted ClientHello (the outer, public name
// is the one checked).
//
// The credential vault: a Secret has a name, the hosts it belongs to, where
// it goes (a header template or a Basic credential's password), a
// placeholder (what the sandbox holds) and its real value (read by the
// proxy from a 0600 secrets file, never marshalled or logged). A CONNECT to
// a host that a secret belongs to is not spliced but intercepted: the
// proxy ends TLS with a leaf from the sandbox's own CA (NewCA, short-lived,
// name-constrained to the secrets' hosts), reads HTTP/1.1 requests, puts
// the value in place of the placeholder, and forwards over TLS it verifies
// itself. A placeholder seen in any header of a request to a host its
// secret does not belong to, intercepted or forwarded, refuses the request.
// Inside a plain tunnel the proxy sees nothing; a placeholder sent there
// goes out as it is, and is useless.
package egress
