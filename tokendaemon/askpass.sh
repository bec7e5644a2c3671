#!/bin/sh
# podbot git askpass helper baked into the sandbox image.
#
# It gives nothing away itself. git runs it with its prompt as the only
# argument; it hands the prompt to podbot-sidecar, which podbot mounts
# read-only into every sandbox that gets a GitHub token and which answers
# only for the clone origin in /run/secrets/git_origin (scheme, host and
# port), so a prompt-injected clone of another host gets no token.
# Without the sidecar there is no token to give: the helper refuses.
# PODBOT_SIDECAR overrides the sidecar's path (tests).
sidecar="${PODBOT_SIDECAR:-/usr/local/libexec/podbot/podbot-sidecar}"

case "$1" in
[Uu]sername* | [Pp]assword*)
	if [ -x "$sidecar" ]; then
		exec "$sidecar" "$1"
	fi
	echo "podbot-askpass: no podbot-sidecar at $sidecar: podbot gives git a token only through it (it answers only for the clone origin)" >&2
	exit 1
	;;
*)
	echo "podbot-askpass: unexpected prompt; expected a Username or Password prompt from git" >&2
	exit 1
	;;
esac
