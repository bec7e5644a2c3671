#!/usr/bin/env bash
# demo.sh: podbot's main job end to end on this machine.
#
# A sample repository is served by a local git server (git's dumb HTTP
# protocol over python3's http.server, public read, so no GitHub App or
# token is involved), a mock OpenAI-compatible provider (aimock, from the
# e2e peers) stands in for the model, and `podbot run` clones the
# repository into a hardened sandbox through the real clone path
# (--repo with github.clone_base_url) and runs the Codex CLI of the agent
# image in it. The agent makes one tool call in the clone; its output is
# printed.
#
# Needs: bin/podbot (make build), the engines (scripts/engines.sh up), the
# agent image (podbot image build --bootstrap --agents codex) and the peers
# (scripts/peers.sh install). `make demo` does all of that first.
#
# Environment: PODBOT_DEMO_ENGINE=podman|docker (default podman).
set -euo pipefail

checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly checkout
engine="${PODBOT_DEMO_ENGINE:-podman}"

die() {
	echo "demo.sh: $*" >&2
	exit 1
}
say() {
	printf '\n\033[1m== %s\033[0m\n' "$*" >&2
}

source <("$checkout/scripts/engines.sh" env)
source <("$checkout/scripts/peers.sh" env)
case "$engine" in
podman) socket="$PODBOT_E2E_PODMAN_SOCKET" gateway=10.88.0.1 ;;
docker) socket="$PODBOT_E2E_DOCKER_SOCKET" gateway=172.17.0.1 ;;
*) die "PODBOT_DEMO_ENGINE must be podman or docker" ;;
esac
podbot=("$checkout/bin/podbot" --engine-socket "$socket")

work="$(mktemp -d)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

say "a sample repository, served by a local git server"
mkdir -p "$work/src" "$work/srv/demo"
(
	cd "$work/src"
	git init -q -b main
	printf '# hello\n\nA sample repository for the podbot demo.\n' >README.md
	printf 'print("hello from the sample repository")\n' >hello.py
	git add -A
	git -c user.name="podbot demo" -c user.email=demo@podbot.invalid commit -q -m "sample: hello.py"
	git clone -q --bare . "$work/srv/demo/hello.git"
	git -C "$work/srv/demo/hello.git" update-server-info
)
python3 -u -m http.server --bind 0.0.0.0 0 --directory "$work/srv" >"$work/git-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	git_port="$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$work/git-server.log" | head -n1)"
	[[ -n "$git_port" ]] && break
	sleep 0.1
done
[[ -n "${git_port:-}" ]] || die "the git server did not start: $(cat "$work/git-server.log")"
echo "git server: http://$gateway:$git_port/demo/hello.git (branch main)" >&2

say "a mock model provider (aimock) on the host"
"$PODBOT_E2E_NODE" "$PODBOT_E2E_AIMOCK" --host 0.0.0.0 --port 0 \
	--fixtures "$checkout/scripts/demo/aimock-fixture.json" --strict >"$work/aimock.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	mock_port="$(sed -n 's#.*listening on http://[0-9.]*:\([0-9]*\).*#\1#p' "$work/aimock.log" | head -n1)"
	[[ -n "$mock_port" ]] && break
	sleep 0.1
done
[[ -n "${mock_port:-}" ]] || die "aimock did not start: $(cat "$work/aimock.log")"
echo "aimock: http://$gateway:$mock_port/v1" >&2

# The Codex configuration reaches the sandbox the way a user's does:
# podbot copies ~/.codex into the container (creds.copy_codex).
mkdir -p "$work/home/.codex"
"$checkout/scripts/peers.sh" codex-config "http://$gateway:$mock_port/v1" >"$work/home/.codex/config.toml"
cat >"$work/podbot.toml" <<TOML
image = "localhost/podbot-agent:latest"
[github]
clone_base_url = "http://$gateway:$git_port/"
[agent]
env_allowlist = ["AIMOCK_API_KEY"]
[creds]
copy_claude = false
copy_codex = true
[network]
# The default egress policy (allowlist) reaches the clone host through the
# github preset (github.clone_base_url); the mock model on the host needs a
# rule of its own, naming the exact private address and port.
allow = ["$gateway:$mock_port"]
TOML

say "podbot run (engine: $engine)"
cmd=("${podbot[@]}" run --repo demo/hello --branch main --agent codex --rm -- exec --skip-git-repo-check podbot-demo)
echo "\$ AIMOCK_API_KEY=dummy podbot run --repo demo/hello --branch main --agent codex --rm -- exec --skip-git-repo-check podbot-demo" >&2
start=$(date +%s%N)
set +e
HOME="$work/home" PODBOT_CONFIG_PATH="$work/podbot.toml" AIMOCK_API_KEY=dummy \
	"${cmd[@]}" </dev/null >"$work/agent.out" 2>"$work/agent.err"
status=$?
set -e
end=$(date +%s%N)
grep '^podbot: ' "$work/agent.err" >&2 || true

say "what the agent did"
grep -v '^podbot: ' "$work/agent.err" | sed -n '/^exec$/,$p' | head -n 20 >&2 || true
echo "agent's answer: $(tail -n 1 "$work/agent.out")" >&2
echo "podbot run exited $status after $(((end - start) / 1000000)) ms" >&2
[[ $status -eq 0 ]] || { cat "$work/agent.err" >&2; die "podbot run failed"; }
grep -q 'podbot-demo-done' "$work/agent.out" || die "the agent did not finish its tool call"
