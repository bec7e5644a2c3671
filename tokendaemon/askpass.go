package tokendaemon

import _ "embed"

// AskpassScript is the git askpass helper for the sandbox image (POSIX sh).
// Install it executable and point GIT_ASKPASS at it: it answers git's
// Username prompt with "x-access-token" and its Password prompt with the
// first line of ContainerTokenPath (or of $PODBOT_TOKEN_FILE when set), read
// afresh at every prompt.
//
//go:embed askpass.sh
var AskpassScript []byte
