package launchplan

import (
	"fmt"

	"github.com/podbot/podbot/errdefs"
)

// configError builds the ConfigError every validation failure returns: it
// names the configuration key and says what to fix.
func configError(key string, reason error, format string, args ...any) *errdefs.ConfigError {
	return &errdefs.ConfigError{Key: key, Reason: reason, Msg: fmt.Sprintf(format, args...)}
}
