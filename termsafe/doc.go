// Package termsafe neutralises text that came from an untrusted source
// (a sandbox's file names, file content, commit messages) before it reaches
// a terminal: control characters, escape sequences, C1 controls, invalid
// UTF-8 and bidirectional overrides are rendered as visible escapes, so
// nothing the source wrote can move the cursor, change the title, write to
// the clipboard or reorder what the reader sees.
package termsafe
