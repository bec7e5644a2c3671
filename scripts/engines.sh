#!/usr/bin/env bash
# engines.sh up|down|env|status: real Podman and dockerd for podbot's tests and demo.
#
#   up      install the engines if missing, write the configuration this host
#           needs, start `podman system service` and dockerd on their own unix
#           sockets, and wait until both answer a ping. Reuses engines that
#           already run and answer.
#   down    stop both engines started by `up`.
#   env     print the environment the e2e tests read:
#             export PODBOT_E2E_PODMAN_SOCKET=unix://...
#             export PODBOT_E2E_DOCKER_SOCKET=unix://...
#           Use it as: eval "$(scripts/engines.sh env)"
#   status  report each engine (pid, socket, ping); non-zero when one does not answer.
#
# Environment:
#   PODBOT_STATE_DIR        state root (default: <checkout>/.state); engine state
#                           lives in $PODBOT_STATE_DIR/engines
#   PODBOT_ENGINES_DIR      engine state directory itself (overrides the above)
#   PODBOT_ENGINES_TIMEOUT  seconds to wait for each engine to answer (default 60)
#
# The state directory holds logs (podman.log, dockerd.log) and dockerd's
# data-root. Sockets, pid files and dockerd's exec-root go in <state>/run, or in
# /run/podbot-engines-<hash> when the state path is too long for unix sockets.
# Podman keeps its default storage (/var/lib/containers); dockerd never touches it.
#
# Needs root. There is no systemd on the machines this targets: the engines
# run as plain background processes in their own sessions.
set -euo pipefail

readonly packages=(podman runc docker.io mmdebstrap uidmap fuse-overlayfs slirp4netns iptables curl)
readonly containers_conf=/etc/containers/containers.conf

die() {
	echo "engines.sh: $*" >&2
	exit 1
}

log() {
	echo "engines.sh: $*" >&2
}

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
state=${PODBOT_ENGINES_DIR:-${PODBOT_STATE_DIR:-$repo/.state}/engines}
timeout=${PODBOT_ENGINES_TIMEOUT:-60}
[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "PODBOT_ENGINES_TIMEOUT must be a positive number of seconds, got '$timeout'"

# resolve_dirs makes the state path absolute and picks the runtime directory.
# Unix socket paths are limited to 107 bytes; the longest socket lives in
# dockerd's exec-root (containerd/containerd.sock.ttrpc), so keep a margin.
resolve_dirs() {
	state=$(realpath -m -- "$state")
	if ((${#state} + 60 <= 107)); then
		run=$state/run
	else
		run=/run/podbot-engines-$(printf '%s' "$state" | sha256sum | cut -c1-12)
	fi
	podman_sock=$run/podman.sock
	podman_pid=$run/podman.pid
	podman_log=$state/podman.log
	docker_sock=$run/docker.sock
	docker_pid=$run/dockerd.pid
	docker_log=$state/dockerd.log
	docker_exec=$run/docker-exec
	docker_data=$state/docker-data
	docker_conf=$state/daemon.json
}

# install_missing installs the engine packages unless all are installed already.
install_missing() {
	local missing=() pkg status
	local -A installed=()
	while read -r pkg status; do
		if [[ $status == installed ]]; then installed[$pkg]=1; fi
	done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null || true)
	for pkg in "${packages[@]}"; do
		[[ -n ${installed[$pkg]:-} ]] || missing+=("$pkg")
	done
	((${#missing[@]} == 0)) && return 0
	[[ $EUID -eq 0 ]] || die "packages missing (${missing[*]}) and not root: run as root or install them"
	log "installing ${missing[*]}"
	# Keep package scripts from starting services: the engines run on our own sockets.
	local policy=/usr/sbin/policy-rc.d added_policy=0
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		added_policy=1
	fi
	local rc=0
	{
		DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}"
	} </dev/null || rc=$?
	((added_policy)) && rm -f -- "$policy"
	((rc == 0)) || die "apt-get failed (exit $rc) installing ${missing[*]}"
}

# ensure_toml_key FILE SECTION KEY VALUE sets KEY in [SECTION] of a TOML file
# when it is not set there yet. An existing different value is left alone
# with a warning.
ensure_toml_key() {
	local file=$1 section=$2 key=$3 value=$4 current
	touch -- "$file"
	current=$(awk -v sec="[$section]" -v key="$key" '
		/^[[:space:]]*\[/ { sub(/#.*/, ""); gsub(/[[:space:]]/, ""); insec = ($0 == sec); next }
		insec && $0 ~ "^[[:space:]]*" key "[[:space:]]*=" {
			sub(/^[^=]*=[[:space:]]*/, ""); sub(/[[:space:]]*(#.*)?$/, ""); print; found = 1; exit
		}
		END { if (!found) print "<unset>" }' "$file")
	if [[ $current == "<unset>" ]]; then
		local tmp
		tmp=$(mktemp "$file.XXXXXX")
		awk -v sec="[$section]" -v line="$key = $value" '
			{ print }
			!done { h = $0; sub(/#.*/, "", h); gsub(/[[:space:]]/, "", h); if (h == sec) { print line; done = 1 } }
			END { if (!done) { print ""; print sec; print line } }' "$file" >"$tmp"
		chmod 0644 "$tmp"
		mv -f -- "$tmp" "$file"
		log "set $key = $value in [$section] of $file"
	elif [[ ${current//[[:space:]]/} != "${value//[[:space:]]/}" ]]; then
		log "warning: $file sets [$section] $key = $current; this host needs $key = $value"
	fi
}

write_config() {
	mkdir -p -- "$(dirname -- "$containers_conf")"
	# Hybrid cgroup v1 host: crun refuses it, runc works.
	ensure_toml_key "$containers_conf" engine runtime '"runc"'
	# No CAP_SYS_RESOURCE: Podman's default nofile/nproc ulimits fail in setrlimit.
	ensure_toml_key "$containers_conf" containers default_ulimits '[]'
	# dockerd reads only this file, never /etc/docker/daemon.json, so a host
	# configuration cannot add listeners or change storage under us.
	[[ -s $docker_conf ]] || echo '{}' >"$docker_conf"
}

# engine_ping SOCKET succeeds when the engine on SOCKET answers /_ping with OK.
engine_ping() {
	local out
	out=$(curl -fsS --max-time 3 --unix-socket "$1" http://engine/_ping 2>/dev/null) || return 1
	[[ $out == OK ]]
}

# alive PIDFILE NAME prints the pid when PIDFILE names a running NAME process.
alive() {
	local pid exe
	[[ -s $1 ]] || return 1
	pid=$(<"$1")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	exe=${exe% (deleted)}
	[[ ${exe##*/} == "$2" ]] || return 1
	echo "$pid"
}

# launch PIDFILE LOG CMD... starts CMD in its own session, detached from this
# shell, with its pid in PIDFILE and its output appended to LOG.
launch() {
	local pidfile=$1 logfile=$2
	shift 2
	printf '\n=== %s: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$logfile"
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' launch "$pidfile" "$@" \
		</dev/null >>"$logfile" 2>&1 &
}

# log_tail LOG prints the last lines LOG holds since the newest launch marker.
log_tail() {
	awk '/^=== / { n = 0 } { line[++n] = $0 }
		END { for (i = (n > 30 ? n - 29 : 1); i <= n; i++) print line[i] }' "$1" >&2
}

# wait_ready NAME PIDFILE SOCKET LOG waits until the engine answers.
wait_ready() {
	local name=$1 pidfile=$2 sock=$3 logfile=$4 deadline=$((SECONDS + timeout))
	while ((SECONDS < deadline)); do
		engine_ping "$sock" && return 0
		# The pid file appears a moment after launch; only judge it once
		# written. Right after launch the pid is still the shell that execs
		# the engine, so look at the pid only, not at its binary.
		if [[ -s $pidfile && ! -e /proc/$(<"$pidfile") ]]; then
			echo "engines.sh: $name exited before answering on $sock; last lines of $logfile:" >&2
			log_tail "$logfile"
			exit 1
		fi
		sleep 0.2
	done
	echo "engines.sh: $name did not answer on $sock within ${timeout}s; last lines of $logfile:" >&2
	log_tail "$logfile"
	exit 1
}

start_podman() {
	local pid
	if pid=$(alive "$podman_pid" podman); then
		log "podman already running (pid $pid)"
	else
		rm -f -- "$podman_sock" "$podman_pid"
		launch "$podman_pid" "$podman_log" podman system service --time=0 "unix://$podman_sock"
	fi
	wait_ready podman "$podman_pid" "$podman_sock" "$podman_log"
}

start_docker() {
	local pid
	if pid=$(alive "$docker_pid" dockerd); then
		log "dockerd already running (pid $pid)"
	else
		rm -f -- "$docker_sock" "$docker_pid"
		mkdir -p -- "$docker_exec" "$docker_data"
		launch "$docker_pid" "$docker_log" dockerd \
			--config-file "$docker_conf" \
			--host "unix://$docker_sock" \
			--data-root "$docker_data" \
			--exec-root "$docker_exec" \
			--pidfile "$docker_exec/dockerd.pid"
	fi
	wait_ready dockerd "$docker_pid" "$docker_sock" "$docker_log"
}

# stop NAME BINARY PIDFILE SOCKET stops one engine and waits for it to exit.
stop() {
	local name=$1 bin=$2 pidfile=$3 sock=$4 pid i
	if ! pid=$(alive "$pidfile" "$bin"); then
		log "$name not running"
		rm -f -- "$pidfile" "$sock"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	# dockerd gives containers up to 15 s to stop on shutdown.
	for ((i = 0; i < 150; i++)); do
		[[ -e /proc/$pid ]] || break
		sleep 0.2
	done
	if [[ -e /proc/$pid ]]; then
		log "$name (pid $pid) ignored SIGTERM for 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f -- "$pidfile" "$sock"
	log "$name stopped"
}

print_env() {
	printf 'export PODBOT_E2E_PODMAN_SOCKET=unix://%s\n' "$podman_sock"
	printf 'export PODBOT_E2E_DOCKER_SOCKET=unix://%s\n' "$docker_sock"
}

status() {
	local rc=0 name bin pidfile sock pid
	for name in podman dockerd; do
		if [[ $name == podman ]]; then
			bin=podman pidfile=$podman_pid sock=$podman_sock
		else
			bin=dockerd pidfile=$docker_pid sock=$docker_sock
		fi
		if ! pid=$(alive "$pidfile" "$bin"); then
			echo "$name: not running (socket unix://$sock)"
			rc=1
		elif engine_ping "$sock"; then
			echo "$name: running, pid $pid, answering on unix://$sock"
		else
			echo "$name: running, pid $pid, NOT answering on unix://$sock"
			rc=1
		fi
	done
	return "$rc"
}

main() {
	[[ $# -eq 1 ]] || die "usage: $0 up|down|env|status"
	resolve_dirs
	case $1 in
	up)
		[[ $EUID -eq 0 ]] || die "up needs root (rootful Podman and dockerd)"
		install_missing
		mkdir -p -- "$state" "$run"
		write_config
		start_podman
		start_docker
		log "podman answering on unix://$podman_sock"
		log "dockerd answering on unix://$docker_sock"
		;;
	down)
		stop podman podman "$podman_pid" "$podman_sock"
		stop dockerd dockerd "$docker_pid" "$docker_sock"
		;;
	env) print_env ;;
	status) status ;;
	*) die "unknown command '$1'; usage: $0 up|down|env|status" ;;
	esac
}

main "$@"
