#!/bin/sh
# A stand-in for Goose in podbot's e2e tests, packed into a release-like
# archive the tests install with `podbot image build --goose-artifact`.
# `goose acp` answers initialize, session/new and session/prompt; during a
# prompt it asks the client for a file and a terminal (which podbot must
# refuse), then streams one text chunk and ends the turn.
[ "$1" = acp ] || { echo "fake goose: only 'goose acp' is implemented" >&2; exit 2; }
while IFS= read -r line; do
	id=$(printf '%s\n' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9][0-9]*\),.*/\1/p')
	case "$line" in
	*'"method":"initialize"'*)
		printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[],"agentInfo":{"name":"fake-goose","version":"0.0.0-podbot-e2e"}}}\n' "$id" ;;
	*'"method":"session/new"'*)
		printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"fake-goose-1"}}\n' "$id" ;;
	*'"method":"session/prompt"'*)
		printf '{"jsonrpc":"2.0","id":9001,"method":"fs/read_text_file","params":{"sessionId":"fake-goose-1","path":"/etc/hostname"}}\n'
		printf '{"jsonrpc":"2.0","id":9002,"method":"terminal/create","params":{"sessionId":"fake-goose-1","command":"id"}}\n'
		printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"fake-goose-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"podbot-e2e-goose-reply"}}}}\n'
		printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id" ;;
	esac
done
