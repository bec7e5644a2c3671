package github

import (
	"fmt"
	"log/slog"
	"time"
)

// redacted stands in for a token value wherever a Token is printed.
const redacted = "[REDACTED]"

// Token is a GitHub App installation access token.
//
// Printing a Token with fmt (%v, %+v, %s, %#v) or logging it with slog shows
// its expiry but never its value; only the Value field holds the secret.
type Token struct {
	// Value is the token itself. Never log it or put it in argv, env or URLs.
	Value string
	// ExpiresAt is the expiry GitHub reported when it issued the token.
	ExpiresAt time.Time
}

// String describes the token without its value.
func (t Token) String() string {
	if t.Value == "" {
		return "Token(empty)"
	}
	return fmt.Sprintf("Token(%s, expires %s)", redacted, t.ExpiresAt.UTC().Format(time.RFC3339))
}

// GoString describes the token for %#v without its value.
func (t Token) GoString() string { return t.String() }

// Format keeps every fmt verb from printing the value.
func (t Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(t.String())) }

// LogValue logs the expiry and whether a value is present, never the value.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("present", t.Value != ""),
		slog.Time("expires_at", t.ExpiresAt),
	)
}

// MarshalText keeps encoders that use encoding.TextMarshaler (JSON, slog's
// JSON handler for nested values) from writing the value.
func (t Token) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// Valid reports whether the token has a value and has not expired at now.
func (t Token) Valid(now time.Time) bool {
	return t.Value != "" && now.Before(t.ExpiresAt)
}
