// Package sandboximage holds the definition of podbot's default sandbox
// image: the Containerfile, embedded so the podbot binary can build the
// image through the engine's build API without a source checkout, and the
// names that tie a build to that file (image name, build arguments, label,
// files expected in the build context).
//
// The build context must hold the Containerfile under ContainerfileName and
// the git credential helper under AskpassContextName. BaseArg selects the
// base image: the registry's Debian bookworm-slim by default, or an image
// imported from a rootfs made by bootstrap.sh when no registry is reachable.
package sandboximage

import _ "embed"

// Containerfile is the sandbox image's Containerfile. It uses only syntax the
// classic (non-BuildKit) builder understands.
//
//go:embed Containerfile
var Containerfile []byte

const (
	// DefaultImageName is the repository of the default sandbox image,
	// tagged with podbot's version and with LatestTag.
	DefaultImageName = "localhost/podbot-sandbox"
	// LatestTag is the tag the newest build also carries.
	LatestTag = "latest"
	// DefaultBase is the base image used when BaseArg is not given.
	DefaultBase = "docker.io/library/debian:bookworm-slim"

	// ContainerfileName is the name of the Containerfile in the build context.
	ContainerfileName = "Containerfile"
	// AskpassContextName is the name of the git askpass helper in the build context.
	AskpassContextName = "podbot-askpass"
	// AskpassPath is where the askpass helper lives in the image; GIT_ASKPASS points at it.
	AskpassPath = "/usr/local/bin/podbot-askpass"

	// BaseArg is the build argument naming the base image.
	BaseArg = "BASE"
	// VersionArg is the build argument carrying podbot's version into VersionLabel.
	VersionArg = "PODBOT_VERSION"
	// VersionLabel is the image label holding the podbot version that built it.
	VersionLabel = "podbot.version"
)
