// Package egress owns a sandbox's network egress policy and the proxy that
// enforces it: which hosts and ports a sandbox may reach (allow rules, live
// denies, pinned names), the refusal of private and metadata addresses that
// no rule names exactly, and the decision log. It is a library: it never
// prints, and it knows nothing about engines or configuration files.
package egress
