#!/usr/bin/env bash
# peers.sh install|env|bundle|codex-config|selftest: the third-party protocol
# peers podbot's end-to-end tests drive (e2e/peers).
#
#   install       `npm ci` in e2e/peers from the committed package-lock.json
#                 (exact versions, no install scripts). Does nothing when
#                 node_modules already matches the lock file.
#   env           print the environment the e2e tests read, one export a line:
#                   eval "$(scripts/peers.sh env)"
#   bundle        write build/acp-agent.bundle.mjs: the ACP test agent and the
#                 SDK in one file, runnable by a bare `node` without
#                 node_modules (to copy into a sandbox). Implies install.
#   codex-config BASE_URL
#                 print a Codex config.toml that sends every model request to
#                 BASE_URL (an OpenAI-compatible mock, e.g.
#                 http://127.0.0.1:4010/v1) with a dummy key read from
#                 AIMOCK_API_KEY, and no other host contacted (checked with
#                 strace: connections to BASE_URL only). Write it to
#                 $CODEX_HOME/config.toml.
#   selftest      run every peer against another real peer on this host, with
#                 no podbot in between: the ACP client against the ACP agent,
#                 the MCP inspector CLI against the echo server, and Codex
#                 (exec and app-server) against aimock. Non-zero on failure.
#
# Environment:
#   PODBOT_PEERS_NODE   node binary to use (default: node on PATH; >= 20)
#   PODBOT_PEERS_DIR    peers directory (default: <checkout>/e2e/peers)
set -euo pipefail

checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly checkout
readonly peers_dir="${PODBOT_PEERS_DIR:-$checkout/e2e/peers}"
readonly codex_triple=x86_64-unknown-linux-musl

die() {
	echo "peers.sh: $*" >&2
	exit 1
}

log() {
	echo "peers.sh: $*" >&2
}

node_bin() {
	local node="${PODBOT_PEERS_NODE:-}"
	if [[ -z "$node" ]]; then
		node="$(command -v node || true)"
	fi
	[[ -n "$node" && -x "$node" ]] || die "node not found; install Node.js >= 20 or set PODBOT_PEERS_NODE"
	node="$(readlink -f "$node")"
	local major
	major="$("$node" -p 'process.versions.node.split(".")[0]')"
	((major >= 20)) || die "$node is Node.js $major; the peers need >= 20"
	echo "$node"
}

codex_bin() {
	case "$(uname -m)" in
	x86_64) echo "$peers_dir/node_modules/@openai/codex-linux-x64/vendor/$codex_triple/bin/codex" ;;
	*) die "the Codex peer is wired for x86_64 only (this host is $(uname -m))" ;;
	esac
}

# installed is true when node_modules was installed from the current lock file.
installed() {
	[[ -f "$peers_dir/node_modules/.package-lock.json" ]] || return 1
	[[ -x "$(codex_bin)" ]] || return 1
	local want have
	want="$("$(node_bin)" -e '
		const l = require(process.argv[1]);
		const p = Object.entries(l.packages).filter(([k, v]) => k && !v.optional).map(([k, v]) => k + "@" + v.version).sort();
		console.log(p.join("\n"));' "$peers_dir/package-lock.json")"
	have="$("$(node_bin)" -e '
		const l = require(process.argv[1]);
		const p = Object.entries(l.packages).filter(([k, v]) => k && !v.optional).map(([k, v]) => k + "@" + v.version).sort();
		console.log(p.join("\n"));' "$peers_dir/node_modules/.package-lock.json")"
	[[ "$want" == "$have" ]]
}

cmd_install() {
	local node npm
	node="$(node_bin)"
	npm="$(dirname "$node")/npm"
	[[ -x "$npm" ]] || npm="$(command -v npm || true)"
	[[ -n "$npm" ]] || die "npm not found next to $node nor on PATH"
	if installed; then
		log "peers already installed in $peers_dir/node_modules"
		return 0
	fi
	log "installing peers in $peers_dir (npm ci)"
	# No install scripts: no peer needs one (Codex ships its binary in an
	# optional dependency), and the inspector's postinstall is a no-op here.
	(cd "$peers_dir" && "$npm" ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 ||
		die "npm ci failed in $peers_dir"
	installed || die "npm ci finished but $peers_dir/node_modules does not match package-lock.json"
}

cmd_env() {
	installed || die "peers not installed; run: scripts/peers.sh install"
	local node m="$peers_dir/node_modules" codex
	node="$(node_bin)"
	codex="$(codex_bin)"
	cat <<EOF
export PODBOT_E2E_NODE=$node
export PODBOT_E2E_PEERS_DIR=$peers_dir
export PODBOT_E2E_ACP_AGENT=$peers_dir/acp-agent.mjs
export PODBOT_E2E_ACP_AGENT_BUNDLE=$peers_dir/build/acp-agent.bundle.mjs
export PODBOT_E2E_ACP_CLIENT=$peers_dir/acp-client.mjs
export PODBOT_E2E_CODEX_CLIENT=$peers_dir/codex-app-server-client.mjs
export PODBOT_E2E_MCP_ECHO_SERVER=$peers_dir/mcp-echo-server.mjs
export PODBOT_E2E_INSPECTOR=$m/@modelcontextprotocol/inspector/clients/launcher/build/index.js
export PODBOT_E2E_CODEX_BIN=$codex
export PODBOT_E2E_CODEX_PATH_DIR=$(dirname "$(dirname "$codex")")/codex-path
export PODBOT_E2E_AIMOCK=$m/@copilotkit/aimock/dist/cli.js
export PODBOT_E2E_AIMOCK_FIXTURE=$peers_dir/aimock-fixture.json
EOF
}

cmd_bundle() {
	cmd_install
	local node
	node="$(node_bin)"
	mkdir -p "$peers_dir/build"
	(cd "$peers_dir" && "$node" node_modules/rolldown/bin/cli.mjs acp-agent.mjs \
		--platform node --format esm --file build/acp-agent.bundle.mjs >/dev/null) ||
		die "bundling acp-agent.mjs failed"
	log "wrote $peers_dir/build/acp-agent.bundle.mjs"
}

cmd_codex_config() {
	local base_url="${1:-}"
	[[ "$base_url" =~ ^https?://[^[:space:]\"]+$ ]] ||
		die "codex-config needs the mock's base URL, e.g. http://127.0.0.1:4010/v1"
	cat <<EOF
# Codex against a mock OpenAI-compatible provider (podbot e2e).
# The model must be in Codex's bundled catalog (else every turn starts with a
# "model metadata not found" warning item); the mock answers any name.
model = "gpt-5.6-sol"
model_provider = "aimock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.aimock]
name = "aimock"
base_url = "$base_url"
wire_api = "responses"
env_key = "AIMOCK_API_KEY"

[analytics]
enabled = false

# Plugins make Codex resolve api.github.com and chatgpt.com at startup.
[features]
plugins = false
EOF
}

# start_aimock starts aimock on 127.0.0.1 with a free port; sets aimock_pid
# and aimock_url.
start_aimock() {
	local log_file="$1" node="$2" tries
	"$node" "$peers_dir/node_modules/@copilotkit/aimock/dist/cli.js" --host 127.0.0.1 --port 0 \
		--fixtures "$peers_dir/aimock-fixture.json" --strict >"$log_file" 2>&1 &
	aimock_pid=$!
	for ((tries = 0; tries < 100; tries++)); do
		aimock_url="$(sed -n 's#.*listening on \(http://[0-9.:]*\).*#\1#p' "$log_file" | head -n1)"
		[[ -n "$aimock_url" ]] && return 0
		kill -0 "$aimock_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log_file" >&2
	die "aimock did not start"
}

cleanup_selftest() {
	if [[ -n "${aimock_pid:-}" ]]; then
		kill "$aimock_pid" 2>/dev/null || true
		wait "$aimock_pid" 2>/dev/null || true
	fi
	[[ -n "${selftest_tmp:-}" ]] && rm -rf "$selftest_tmp"
	return 0
}

cmd_selftest() {
	cmd_install
	local node codex out
	node="$(node_bin)"
	codex="$(codex_bin)"
	selftest_tmp="$(mktemp -d)"
	aimock_pid=""
	trap cleanup_selftest EXIT
	local tmp="$selftest_tmp"

	log "ACP: acp-client -> acp-agent (baseline, no podbot: the client must receive fs/terminal)"
	out="$("$node" "$peers_dir/acp-client.mjs" "$node" "$peers_dir/acp-agent.mjs")" || die "acp-client failed: $out"
	"$node" -e '
		const s = JSON.parse(process.argv[1]);
		const methods = s.clientReceivedRequests.map((r) => r.method).join(",");
		if (!s.agentReport || !s.agentReport.capabilitiesSeen.fs || methods !== "fs/read_text_file,terminal/create" || s.stopReason !== "end_turn" || !s.stdoutClean)
			{ console.error("unexpected summary: " + process.argv[1]); process.exit(1); }' "$out" ||
		die "ACP baseline check failed"

	log "MCP: inspector --cli -> mcp-echo-server (array tool argument)"
	out="$("$node" "$peers_dir/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" --cli \
		--method tools/call --tool-name echo_args --tool-arg 'command=["echo","hi"]' \
		-- "$node" "$peers_dir/mcp-echo-server.mjs")" || die "inspector failed: $out"
	"$node" -e '
		const r = JSON.parse(process.argv[1]);
		const c = r.structuredContent.arguments.command;
		if (!Array.isArray(c) || c.join(" ") !== "echo hi") { console.error("unexpected result: " + process.argv[1]); process.exit(1); }' "$out" ||
		die "inspector check failed"

	log "Codex: exec and app-server -> aimock (one tool call)"
	start_aimock "$tmp/aimock.log" "$node"
	mkdir -p "$tmp/codex-home" "$tmp/work"
	cmd_codex_config "$aimock_url/v1" >"$tmp/codex-home/config.toml"
	out="$(cd "$tmp/work" && CODEX_HOME="$tmp/codex-home" AIMOCK_API_KEY=dummy \
		"$codex" exec --skip-git-repo-check --json podbot-e2e-tool-call </dev/null 2>"$tmp/exec.err")" ||
		{ cat "$tmp/exec.err" >&2; die "codex exec failed"; }
	grep -q '"text":"podbot-e2e-done' <<<"$out" || { echo "$out" >&2; die "codex exec did not finish with the mock's final message"; }
	out="$(cd "$tmp/work" && CODEX_HOME="$tmp/codex-home" AIMOCK_API_KEY=dummy \
		"$node" "$peers_dir/codex-app-server-client.mjs" --prompt podbot-e2e-tool-call \
		-- "$codex" app-server --listen stdio:// 2>"$tmp/app-server.err")" ||
		{ cat "$tmp/app-server.err" >&2; die "codex app-server client failed: $out"; }
	"$node" -e '
		const s = JSON.parse(process.argv[1]);
		if (!s.toolCalled || !s.agentMessages.some((m) => m.startsWith("podbot-e2e-done"))) { console.error("unexpected summary: " + process.argv[1]); process.exit(1); }' "$out" ||
		die "codex app-server check failed"
	log "selftest passed"
}

case "${1:-}" in
install) cmd_install ;;
env) cmd_env ;;
bundle) cmd_bundle ;;
codex-config) cmd_codex_config "${2:-}" ;;
selftest) cmd_selftest ;;
*)
	echo "usage: scripts/peers.sh install|env|bundle|codex-config BASE_URL|selftest" >&2
	exit 2
	;;
esac
