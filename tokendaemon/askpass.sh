#!/bin/sh
# podbot git askpass helper.
#
# git runs this with its prompt as the only argument. For a user name it
# prints x-access-token; for a password it prints the GitHub App
# installation token that podbot's token daemon keeps fresh in a read-only
# file, so a refreshed token is used without touching the container.
# PODBOT_TOKEN_FILE overrides the file (default /run/secrets/ghapp_token).
token_file="${PODBOT_TOKEN_FILE:-/run/secrets/ghapp_token}"

case "$1" in
[Uu]sername*)
	printf '%s\n' x-access-token
	;;
[Pp]assword*)
	if [ ! -r "$token_file" ]; then
		echo "podbot-askpass: cannot read the GitHub token file $token_file" >&2
		exit 1
	fi
	token=
	IFS= read -r token <"$token_file" || [ -n "$token" ] || {
		echo "podbot-askpass: the GitHub token file $token_file is empty" >&2
		exit 1
	}
	if [ -z "$token" ]; then
		echo "podbot-askpass: the GitHub token file $token_file is empty" >&2
		exit 1
	fi
	printf '%s\n' "$token"
	;;
*)
	echo "podbot-askpass: unexpected prompt; expected a Username or Password prompt from git" >&2
	exit 1
	;;
esac
