package tokendaemon

import _ "embed"

// AskpassScript is the git askpass helper for the sandbox image (POSIX sh).
// Install it executable and point GIT_ASKPASS at it: it answers nothing by
// itself but hands git's Username and Password prompts to podbot-sidecar at
// its mount point (or at $PODBOT_SIDECAR when set), which gives the token
// only to the clone origin; without a sidecar it refuses.
//
//go:embed askpass.sh
var AskpassScript []byte
