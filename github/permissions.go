package github

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	gh "github.com/google/go-github/v60/github"

	"github.com/podbot/podbot/errdefs"
)

// DefaultTokenPermissions returns the permissions installation tokens get
// when none are configured: enough to clone, push a branch and open a pull
// request.
func DefaultTokenPermissions() map[string]string {
	return map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"}
}

// installationPermissions turns github.token_permissions into the API's
// permissions object. Each name must be one GitHub knows for installation
// tokens and each level "read" or "write"; errors name the key and the
// entry.
func installationPermissions(perms map[string]string) (*gh.InstallationPermissions, error) {
	if perms == nil {
		perms = DefaultTokenPermissions()
	}
	bad := func(reason error, format string, args ...any) error {
		return &errdefs.ConfigError{Key: "github.token_permissions", Reason: reason, Msg: fmt.Sprintf(format, args...)}
	}
	if len(perms) == 0 {
		return nil, bad(errdefs.ErrMissingRequired, "no permissions; installation tokens need at least one, for example contents = \"write\"")
	}
	out := &gh.InstallationPermissions{}
	for _, name := range slices.Sorted(maps.Keys(perms)) {
		level := perms[name]
		if level != "read" && level != "write" {
			return nil, bad(errdefs.ErrInvalidValue, "entry %q: the level must be \"read\" or \"write\", got %q", name+" = "+level, level)
		}
		body, err := json.Marshal(map[string]string{name: level})
		if err != nil {
			return nil, bad(errdefs.ErrInvalidValue, "entry %q cannot be encoded", name)
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			return nil, bad(errdefs.ErrInvalidValue, "entry %q: %q is not a permission GitHub knows for App installation tokens (for example contents, pull_requests, issues, metadata)", name+" = "+level, name)
		}
	}
	return out, nil
}
