#!/usr/bin/env bash
# k8s.sh build|up|down|env|status|kubectl: a real single-node Kubernetes cluster
# on this machine, built from source, for podbot's Kubernetes tests.
#
#   build   build kube-apiserver, kube-controller-manager, kube-scheduler,
#           kubelet and kubectl (into <state>/bin/<kubernetes version>/),
#           etcd (into <state>/bin/etcd-<etcd version>/) and kube-router (into
#           <state>/bin/kube-router-<version>/) from their Go modules.
#           Cached: a binary already built is kept.
#   up      build (if needed), install containerd, runc, the CNI plugins,
#           iptables and ipset if missing, write certificates, kubeconfigs and
#           configuration, start containerd, etcd, the control plane and the
#           kubelet, wait until the node is Ready, start the NetworkPolicy
#           enforcer (kube-router, firewall only) and import the podbot
#           sandbox image into containerd. Reuses components that already run.
#           Everything listens on 127.0.0.1 only.
#   down    stop kwok and delete its nodes (kwok down), delete every Pod
#           (through the API, so the kubelet stops them and
#           releases their network), stop everything `up` started, remove
#           every iptables chain and ipset the enforcer added, unmount
#           what the kubelet and containerd mounted and remove the Pod bridge.
#           Certificates, etcd data, binaries and imported images stay.
#   env     print the environment the e2e tests and kubectl read:
#             export KUBECONFIG=<state>/admin.kubeconfig
#             export PODBOT_E2E_KUBECONFIG=<state>/admin.kubeconfig
#             export PODBOT_E2E_K8S_IMAGE=<sandbox image reference>
#             export PATH=<state>/bin/<version>:$PATH
#           Use it as: source <(scripts/k8s.sh env)
#   status  report each component (pid, health); non-zero when one is down.
#   kubectl ARGS...  run the built kubectl against the cluster.
#   kwok build|up|down|status
#           kwok (simulated nodes, for scale runs where Pods need not run)
#           against this cluster's API server. build: kwok from its Go module
#           into <state>/bin/kwok-<kwok version>/ (cached). up: build if
#           needed and start the kwok controller (no server, no CRDs; the
#           "fast" node and Pod stages of its release) managing only the
#           nodes annotated kwok.x-k8s.io/node=fake: whoever wants fake nodes
#           creates them (tainted, so real test Pods never land there) and
#           deletes them. down: delete every node labelled podbot.test/kwok
#           and the Pods bound to them, then stop kwok. Never touches the
#           real node. status: non-zero when kwok is not running.
#   help    print this text.
#
# Environment:
#   PODBOT_STATE_DIR       state root (default: <checkout>/.state); cluster state
#                          lives in $PODBOT_STATE_DIR/k8s
#   PODBOT_K8S_DIR         cluster state directory itself (overrides the above)
#   PODBOT_K8S_TIMEOUT     seconds to wait for each component (default 120)
#   PODBOT_K8S_IMAGE       sandbox image to import (default podbot-sandbox:latest),
#                          exported from the engine PODBOT_E2E_DOCKER_SOCKET or
#                          PODBOT_E2E_PODMAN_SOCKET names, else from the engines
#                          scripts/engines.sh runs for the same state root
#   PODBOT_K8S_NO_IMPORT   set to 1 to skip the image import
#
# The state directory holds pki/ (the cluster CA and every key, 0600 in a
# 0700 directory), the kubeconfigs (0600), etcd/, containerd/ (its own config
# and root: it shares nothing with dockerd's containerd), cni/ (a bridge +
# host-local + loopback network, 10.213.0.0/24), kubelet/ and logs/<component>.log.
# Sockets and pid files go in <state>/run, or in /run/podbot-k8s-<hash> when
# the state path is too long for unix sockets.
#
# NetworkPolicy is enforced by kube-router's network policy controller alone
# (--run-firewall; its router, service proxy, CNI and health port are off): it
# programs iptables (filter table: chains KUBE-ROUTER-*, KUBE-POD-FW-*,
# KUBE-NWPLCY-*, jumped to from the top of INPUT, FORWARD and OUTPUT) and
# ipsets (KUBE-SRC-*, KUBE-DST-*), and sees Pod-to-Pod frames on the bridge
# through br_netfilter (net.bridge.bridge-nf-call-iptables=1). The Go module
# proxy warns of security flaws reported against kube-router v2.1.0 (the
# newest release it serves): acceptable only because this is a single-node
# test cluster whose components listen on 127.0.0.1 only. Do not copy this
# set-up to a cluster anyone else can reach.
#
# Needs root (containerd, runc and the kubelet manage namespaces, mounts and
# cgroups). There is no systemd on the machines this targets: every component
# runs as a plain background process in its own session.
set -euo pipefail

# Versions: the one place they are pinned. k8s.io/kubernetes publishes its
# staging modules (k8s.io/api, client-go, apiserver, ...) as v0.<minor>.<patch>.
readonly k8s_version=v1.36.3
readonly k8s_staging_version=v0.36.3
readonly etcd_version=v3.6.16
readonly kwok_version=v0.8.0
readonly kube_router_version=v2.1.0

readonly packages=(containerd runc containernetworking-plugins iptables ipset openssl curl jq)
readonly k8s_components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

# Ports, all on 127.0.0.1, away from the usual Kubernetes ports so a cluster
# set up another way on the same machine does not collide with this one.
readonly apiserver_port=16443
readonly etcd_client_port=12379
readonly etcd_peer_port=12380
readonly kubelet_port=20250
readonly kubelet_healthz_port=20248
readonly controller_manager_port=20257
readonly scheduler_port=20259
# The node registers under its IP: a hostname override that is an IP is
# taken as the node's address as is. The kubelet refuses a loopback --node-ip,
# and a hostname that resolves to 127.0.0.1 gets the default route's interface
# address instead, where a kubelet listening on 127.0.0.1 cannot be reached.
readonly node_name=127.0.0.1
readonly service_cidr=10.214.0.0/16
# Away from Podman's (10.88/16) and Docker's (172.17/16) defaults.
readonly node_pod_cidr=10.213.0.0/24
readonly bridge=podbot-k8s0
# Stand-ins for places outside the cluster, extra host addresses on the Pod
# bridge that Pods have a host route to: a public address (TEST-NET-3,
# RFC 5737, never routed on the internet) and a link-local one like the
# cloud metadata service (169.254.169.254 itself is left alone: the host
# may need it). With the bridge address (private, 10.213.0.1) they let the
# e2e tests show what a NetworkPolicy lets a Pod reach and what it does not.
readonly outside_public=203.0.113.1
readonly outside_linklocal=169.254.213.1
readonly pause_image=podbot.test/k8s/pause:1

die() {
	echo "k8s.sh: $*" >&2
	exit 1
}

log() {
	echo "k8s.sh: $*" >&2
}

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
state=${PODBOT_K8S_DIR:-${PODBOT_STATE_DIR:-$repo/.state}/k8s}
timeout=${PODBOT_K8S_TIMEOUT:-120}
[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "PODBOT_K8S_TIMEOUT must be a positive number of seconds, got '$timeout'"
image=${PODBOT_K8S_IMAGE:-podbot-sandbox:latest}

export PATH=/usr/local/go/bin:$PATH
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

# resolve_dirs makes the state path absolute and picks the runtime directory.
# Unix socket paths are limited to 107 bytes; the longest socket is
# containerd's ttrpc socket under run/, so keep a margin.
resolve_dirs() {
	state=$(realpath -m -- "$state")
	if ((${#state} + 50 <= 107)); then
		run=$state/run
	else
		run=/run/podbot-k8s-$(printf '%s' "$state" | sha256sum | cut -c1-12)
	fi
	bin=$state/bin/$k8s_version
	etcd_bin=$state/bin/etcd-$etcd_version
	pki=$state/pki
	logs=$state/logs
	containerd_sock=$run/containerd.sock
	cni_bin=/usr/lib/cni
	admin_kubeconfig=$state/admin.kubeconfig
	kwok_bin=$state/bin/kwok-$kwok_version
	netpol_bin=$state/bin/kube-router-$kube_router_version
}

# ---------------------------------------------------------------------------
# build

# build_module DIR MODULE VERSION REPLACES OUT LDFLAGS PACKAGES... builds PACKAGES
# of MODULE@VERSION through a throwaway module in DIR (go.mod with MODULE
# required and REPLACES as its replace block) into the directory OUT.
build_module() {
	local dir=$1 module=$2 version=$3 replaces=$4 out=$5 ldflags=$6
	shift 6
	local pkgs=("$@") tmp
	mkdir -p -- "$dir" "$out"
	if [[ ! -s $dir/go.mod ]]; then
		{
			echo "// Throwaway module: builds $module $version for podbot's test cluster."
			echo "module podbot.test/k8sbuild"
			echo
			echo "go 1.26"
			echo
			echo "require $module $version"
			if [[ -n $replaces ]]; then
				echo
				echo "replace ("
				printf '%s\n' "$replaces"
				echo ")"
			fi
		} >"$dir/go.mod.tmp"
		mv -f -- "$dir/go.mod.tmp" "$dir/go.mod"
		: >"$dir/go.sum"
		local getpkgs=() p
		for p in "${pkgs[@]}"; do getpkgs+=("$p@$version"); done
		log "resolving $module $version and its dependencies (Go module proxy)"
		(cd -- "$dir" && go get "${getpkgs[@]}") >"$dir/get.log" 2>&1 || {
			tail -n 30 -- "$dir/get.log" >&2
			rm -f -- "$dir/go.mod"
			die "resolving $module $version failed (log: $dir/get.log)"
		}
	fi
	tmp=$(mktemp -d "$out/.build.XXXXXX")
	# An interrupted build leaves nothing half-written behind.
	# shellcheck disable=SC2064 # $tmp is fixed now
	trap "rm -rf -- '$tmp'" EXIT
	local names=() p
	for p in "${pkgs[@]}"; do
		p=${p%/v[0-9]*}
		names+=("${p##*/}")
	done
	log "building $module $version: ${names[*]} (nice -n 19; minutes on a cold cache)"
	if ! (cd -- "$dir" && nice -n 19 go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp/" "${pkgs[@]}"); then
		rm -rf -- "$tmp"
		die "building $module $version failed (see above)"
	fi
	local f
	for f in "$tmp"/*; do mv -f -- "$f" "$out/"; done
	rmdir -- "$tmp"
	trap - EXIT
}

# staging_replaces prints a replace line for every staging module
# k8s.io/kubernetes maps to ./staging/src/..., pointing it at the published
# release of the same version.
staging_replaces() {
	local gomod
	gomod=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[[ -s $gomod ]] || die "could not download k8s.io/kubernetes@$k8s_version from the Go module proxy"
	awk -v v="$k8s_staging_version" '$2 == "=>" && $3 ~ /^\.\/staging\// { printf "\t%s => %s %s\n", $1, $1, v }' "$gomod"
}

build() {
	local missing=() c started=$SECONDS
	for c in "${k8s_components[@]}"; do
		[[ -x $bin/$c ]] || missing+=("k8s.io/kubernetes/cmd/$c")
	done
	if ((${#missing[@]})); then
		local minor=${k8s_version#v1.}
		minor=${minor%%.*}
		local ld="" key val
		for kv in "gitVersion=$k8s_version" gitMajor=1 "gitMinor=$minor" gitTreeState=clean; do
			key=${kv%%=*} val=${kv#*=}
			ld+=" -X k8s.io/component-base/version.$key=$val -X k8s.io/client-go/pkg/version.$key=$val"
		done
		build_module "$state/build/kubernetes-$k8s_version" k8s.io/kubernetes "$k8s_version" \
			"$(staging_replaces)" "$bin" "$ld" "${missing[@]}"
	fi
	if [[ ! -x $etcd_bin/etcd ]]; then
		build_module "$state/build/etcd-$etcd_version" go.etcd.io/etcd/server/v3 "$etcd_version" "" \
			"$etcd_bin" "" go.etcd.io/etcd/server/v3
		# go names the binary of a module path ending in /v3 after the element before it.
		local f
		for f in server v3; do
			if [[ -e $etcd_bin/$f ]]; then mv -f -- "$etcd_bin/$f" "$etcd_bin/etcd"; fi
		done
		[[ -x $etcd_bin/etcd ]] || die "etcd build produced no binary in $etcd_bin"
	fi
	if [[ ! -x $netpol_bin/kube-router ]]; then
		build_module "$state/build/kube-router-$kube_router_version" github.com/cloudnativelabs/kube-router/v2 \
			"$kube_router_version" "" "$netpol_bin" \
			"-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$kube_router_version" \
			github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
		[[ -x $netpol_bin/kube-router ]] || die "kube-router build produced no binary in $netpol_bin"
	fi
	if ((SECONDS > started)); then
		log "built in $((SECONDS - started))s into $bin, $etcd_bin and $netpol_bin"
	fi
}

# ---------------------------------------------------------------------------
# packages and configuration

# install_missing installs the Debian packages unless all are installed already.
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
	# Keep package scripts from starting services: containerd runs on our own socket.
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

# write_file PATH MODE writes stdin to PATH atomically with MODE.
write_file() {
	local path=$1 mode=$2 tmp
	tmp=$(mktemp "$path.XXXXXX")
	cat >"$tmp"
	chmod "$mode" "$tmp"
	mv -f -- "$tmp" "$path"
}

# cert NAME CN ORG EKU [SAN] signs a key pair NAME.{key,crt} with the cluster CA
# unless it exists. EKU is clientAuth, serverAuth or both separated by a comma.
cert() {
	local name=$1 cn=$2 org=$3 eku=$4 san=${5:-} subj ext
	[[ -s $pki/$name.crt && -s $pki/$name.key ]] && return 0
	subj="/CN=$cn"
	[[ -n $org ]] && subj="/O=$org$subj"
	ext=$'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n'
	ext+="extendedKeyUsage=$eku"$'\n'
	[[ -n $san ]] && ext+="subjectAltName=$san"$'\n'
	(
		umask 077
		openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key.tmp" 2>/dev/null
		openssl req -new -key "$pki/$name.key.tmp" -subj "$subj" -out "$pki/$name.csr.tmp"
		openssl x509 -req -in "$pki/$name.csr.tmp" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
			-CAcreateserial -days 3650 -sha256 -extfile <(printf '%s' "$ext") \
			-out "$pki/$name.crt.tmp" 2>/dev/null
		rm -f -- "$pki/$name.csr.tmp"
		chmod 0644 "$pki/$name.crt.tmp"
		mv -f -- "$pki/$name.key.tmp" "$pki/$name.key"
		mv -f -- "$pki/$name.crt.tmp" "$pki/$name.crt"
	) || die "openssl failed signing $name"
}

# write_pki creates the cluster CA, the service-account key and every leaf
# certificate the components need. Existing files are kept; a new CA
# replaces every leaf signed by the old one.
write_pki() {
	mkdir -p -- "$pki"
	chmod 0700 "$pki"
	if [[ ! -s $pki/ca.crt || ! -s $pki/ca.key ]]; then
		log "creating the cluster CA in $pki"
		find "$pki" -mindepth 1 -delete
		(
			umask 077
			openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key"
			openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=podbot-test-cluster-ca" -days 3650 -sha256 \
				-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
				-out "$pki/ca.crt"
			chmod 0644 "$pki/ca.crt"
		) || die "openssl failed creating the CA"
	fi
	if [[ ! -s $pki/sa.key ]]; then
		(
			umask 077
			openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key.tmp" &&
				openssl ec -in "$pki/sa.key.tmp" -pubout -out "$pki/sa.pub" 2>/dev/null &&
				chmod 0644 "$pki/sa.pub" && mv -f -- "$pki/sa.key.tmp" "$pki/sa.key"
		) || die "openssl failed creating the service-account key"
	fi
	local svc_ip=${service_cidr%.0/*}.1
	cert etcd-server etcd "" serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
	cert apiserver-etcd-client kube-apiserver-etcd-client "" clientAuth
	cert apiserver kube-apiserver "" serverAuth \
		"IP:127.0.0.1,IP:$svc_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	# The API server calls the kubelet (exec, logs) as a cluster admin.
	cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
	cert admin podbot-admin system:masters clientAuth
	cert controller-manager system:kube-controller-manager "" clientAuth
	cert scheduler system:kube-scheduler "" clientAuth
	cert kubelet-client "system:node:$node_name" system:nodes clientAuth
	cert kubelet-server "system:node:$node_name" system:nodes serverAuth "IP:$node_name"
}

# kubeconfig NAME CERT writes <state>/NAME.kubeconfig authenticating with the
# certificate pair CERT.
kubeconfig() {
	local name=$1 crt=$2
	write_file "$state/$name.kubeconfig" 0600 <<EOF
apiVersion: v1
kind: Config
clusters:
- name: podbot-test
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority: $pki/ca.crt
users:
- name: $name
  user:
    client-certificate: $pki/$crt.crt
    client-key: $pki/$crt.key
contexts:
- name: podbot-test
  context:
    cluster: podbot-test
    user: $name
    namespace: default
current-context: podbot-test
EOF
}

write_containerd_config() {
	mkdir -p -- "$state/containerd/root" "$state/cni/net.d" "$state/cni/ipam" "$run/containerd"
	write_file "$state/containerd/config.toml" 0644 <<EOF
# containerd for podbot's test cluster (scripts/k8s.sh). Its own socket, root
# and state: it shares nothing with another containerd on this machine.
version = 2
root = "$state/containerd/root"
state = "$run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$containerd_sock"

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$state/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # No CAP_SYS_RESOURCE here: a negative oom_score_adj fails in runc.
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = "$(command -v runc)"
  # runc's own state beside containerd's, not in the shared /run/containerd/runc.
  Root = "$run/runc"
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "$cni_bin"
  conf_dir = "$state/cni/net.d"
  max_conf_num = 1
EOF
	# Pods talk to each other and the host on a private bridge, and to nothing
	# else: no default route, no masquerade; two host routes lead to the
	# outside stand-ins on the host. (The bridge plugin enforces no
	# NetworkPolicy: kube-router does.)
	write_file "$state/cni/net.d/10-podbot-test.conflist" 0644 <<EOF
{
  "cniVersion": "0.4.0",
  "name": "podbot-test",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$state/cni/ipam",
        "ranges": [[{"subnet": "$node_pod_cidr"}]],
        "routes": [{"dst": "$outside_public/32"}, {"dst": "$outside_linklocal/32"}]
      }
    },
    {"type": "loopback"}
  ]
}
EOF
}

write_kubelet_config() {
	mkdir -p -- "$state/kubelet" "$state/pod-logs"
	write_file "$state/kubelet-config.yaml" 0644 <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_healthz_port
tlsCertFile: $pki/kubelet-server.crt
tlsPrivateKeyFile: $pki/kubelet-server.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://$containerd_sock
cgroupDriver: cgroupfs
# This host mounts cgroup v1 (hybrid); the kubelet refuses it unless told.
failCgroupV1: false
failSwapOn: false
# Root here lacks CAP_SYS_RESOURCE: no negative oom_score_adj for the kubelet.
oomScoreAdj: 0
podCIDR: $node_pod_cidr
podLogsDir: $state/pod-logs
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
maxPods: 50
# Kubernetes has no per-Pod process limit in the Pod spec: the kubelet caps
# every Pod's pids cgroup at this, the engine's default for agent sandboxes
# (launchplan.AgentPidsLimit), so a fork bomb in a sandbox stops there.
podPidsLimit: 2048
serializeImagePulls: false
# Images come from an import, never a registry: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
protectKernelDefaults: false
EOF
}

# ---------------------------------------------------------------------------
# processes

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

# launch NAME CMD... starts CMD in its own session, detached from this shell,
# with its pid in <run>/NAME.pid and its output appended to <logs>/NAME.log.
launch() {
	local name=$1
	shift
	printf '\n=== %s: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$logs/$name.log"
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' launch "$run/$name.pid" "$@" \
		</dev/null >>"$logs/$name.log" 2>&1 &
}

# log_tail NAME prints the last lines its log holds since the newest launch marker.
log_tail() {
	awk '/^=== / { n = 0 } { line[++n] = $0 }
		END { for (i = (n > 30 ? n - 29 : 1); i <= n; i++) print line[i] }' "$logs/$1.log" >&2
}

# probe NAME succeeds when the component NAME answers its health check.
probe() {
	case $1 in
	containerd) ctr --address "$containerd_sock" version >/dev/null 2>&1 ;;
	etcd)
		curl -fsS --max-time 3 --cacert "$pki/ca.crt" --cert "$pki/apiserver-etcd-client.crt" \
			--key "$pki/apiserver-etcd-client.key" "https://127.0.0.1:$etcd_client_port/health" 2>/dev/null |
			grep -q '"health":"true"'
		;;
	kube-apiserver) https_ok "$apiserver_port" /readyz ;;
	kube-controller-manager) https_ok "$controller_manager_port" /healthz ;;
	kube-scheduler) https_ok "$scheduler_port" /healthz ;;
	kubelet) [[ $(curl -fsS --max-time 3 "http://127.0.0.1:$kubelet_healthz_port/healthz" 2>/dev/null) == ok ]] ;;
	kube-router) netpol_enforcing ;;
	*) return 1 ;;
	esac
}

# https_ok PORT PATH succeeds when the component on PORT answers PATH with "ok",
# as the cluster admin, verifying its certificate against the cluster CA (the
# controller manager and scheduler serve self-signed certificates: their
# health paths are checked without verification).
https_ok() {
	local port=$1 path=$2 tls=(--cacert "$pki/ca.crt")
	[[ $port == "$apiserver_port" ]] || tls=(--insecure)
	[[ $(curl -fsS --max-time 3 "${tls[@]}" --cert "$pki/admin.crt" --key "$pki/admin.key" \
		"https://127.0.0.1:$port$path" 2>/dev/null) == ok ]]
}

# wait_ready NAME waits until component NAME answers its health check.
wait_ready() {
	local name=$1 pidfile=$run/$1.pid deadline=$((SECONDS + timeout))
	while ((SECONDS < deadline)); do
		probe "$name" && return 0
		if [[ -s $pidfile && ! -e /proc/$(<"$pidfile") ]]; then
			echo "k8s.sh: $name exited before answering; last lines of $logs/$name.log:" >&2
			log_tail "$name"
			exit 1
		fi
		sleep 0.2
	done
	echo "k8s.sh: $name did not answer within ${timeout}s; last lines of $logs/$name.log:" >&2
	log_tail "$name"
	exit 1
}

# start NAME BINARY ARGS... starts component NAME unless it already runs.
start() {
	local name=$1 binary=$2 pid
	shift 2
	if pid=$(alive "$run/$name.pid" "${binary##*/}"); then
		local exe
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || true
		if [[ ${exe% (deleted)} == "$binary" ]]; then
			log "$name already running (pid $pid)"
		else
			# Another version (the pins moved) or a rebuilt binary: restart it.
			log "$name (pid $pid) runs $exe, not $binary: restarting it"
			stop "$name" "${binary##*/}"
			launch "$name" "$binary" "$@"
		fi
	else
		rm -f -- "$run/$name.pid"
		launch "$name" "$binary" "$@"
	fi
	wait_ready "$name"
}

start_containerd() {
	start containerd "$(command -v containerd)" --config "$state/containerd/config.toml"
}

start_etcd() {
	mkdir -p -- "$state/etcd"
	chmod 0700 "$state/etcd"
	start etcd "$etcd_bin/etcd" \
		--name podbot-test \
		--data-dir "$state/etcd" \
		--listen-client-urls "https://127.0.0.1:$etcd_client_port" \
		--advertise-client-urls "https://127.0.0.1:$etcd_client_port" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
		--initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
		--initial-cluster "podbot-test=http://127.0.0.1:$etcd_peer_port" \
		--listen-metrics-urls "" \
		--cert-file "$pki/etcd-server.crt" --key-file "$pki/etcd-server.key" \
		--trusted-ca-file "$pki/ca.crt" --client-cert-auth \
		--quota-backend-bytes $((512 * 1024 * 1024)) \
		--log-level warn
}

start_apiserver() {
	start kube-apiserver "$bin/kube-apiserver" \
		--advertise-address 127.0.0.1 \
		--bind-address 127.0.0.1 \
		--secure-port "$apiserver_port" \
		--etcd-servers "https://127.0.0.1:$etcd_client_port" \
		--etcd-cafile "$pki/ca.crt" \
		--etcd-certfile "$pki/apiserver-etcd-client.crt" \
		--etcd-keyfile "$pki/apiserver-etcd-client.key" \
		--client-ca-file "$pki/ca.crt" \
		--tls-cert-file "$pki/apiserver.crt" \
		--tls-private-key-file "$pki/apiserver.key" \
		--kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
		--kubelet-client-key "$pki/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$pki/ca.crt" \
		--kubelet-preferred-address-types InternalIP \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$pki/sa.pub" \
		--service-account-signing-key-file "$pki/sa.key" \
		--service-cluster-ip-range "$service_cidr" \
		--authorization-mode Node,RBAC \
		--enable-admission-plugins NodeRestriction \
		--anonymous-auth=false \
		--profiling=false \
		--v 1
}

start_controller_manager() {
	start kube-controller-manager "$bin/kube-controller-manager" \
		--kubeconfig "$state/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$state/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$state/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 \
		--secure-port "$controller_manager_port" \
		--service-account-private-key-file "$pki/sa.key" \
		--root-ca-file "$pki/ca.crt" \
		--use-service-account-credentials \
		--service-cluster-ip-range "$service_cidr" \
		--leader-elect=false \
		--profiling=false \
		--v 1
}

start_scheduler() {
	start kube-scheduler "$bin/kube-scheduler" \
		--kubeconfig "$state/scheduler.kubeconfig" \
		--authentication-kubeconfig "$state/scheduler.kubeconfig" \
		--authorization-kubeconfig "$state/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 \
		--secure-port "$scheduler_port" \
		--leader-elect=false \
		--profiling=false \
		--v 1
}

start_kubelet() {
	start kubelet "$bin/kubelet" \
		--config "$state/kubelet-config.yaml" \
		--kubeconfig "$state/kubelet.kubeconfig" \
		--root-dir "$state/kubelet" \
		--cert-dir "$state/kubelet/pki" \
		--hostname-override "$node_name" \
		--v 1
}

# kctl ARGS... runs the built kubectl as the cluster admin.
kctl() {
	"$bin/kubectl" --kubeconfig "$admin_kubeconfig" "$@"
}

# wait_node waits until the node is Ready and the default service account
# exists (Pods cannot be created before it does).
wait_node() {
	local deadline=$((SECONDS + timeout))
	while ((SECONDS < deadline)); do
		if [[ $(kctl get node "$node_name" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]] &&
			kctl -n default get serviceaccount default >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	echo "k8s.sh: node $node_name not Ready within ${timeout}s; last lines of $logs/kubelet.log:" >&2
	log_tail kubelet
	kctl get node -o wide >&2 || true
	exit 1
}

# stop NAME BINARY stops one component and waits for it to exit.
stop() {
	local name=$1 binary=$2 pid i
	if ! pid=$(alive "$run/$name.pid" "$binary"); then
		rm -f -- "$run/$name.pid"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do
		[[ -e /proc/$pid ]] || break
		sleep 0.2
	done
	if [[ -e /proc/$pid ]]; then
		log "$name (pid $pid) ignored SIGTERM for 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f -- "$run/$name.pid"
	log "$name stopped"
}

# ---------------------------------------------------------------------------
# images

# ctr_k8s ARGS... runs ctr against the cluster's containerd, in the namespace
# the CRI uses.
ctr_k8s() {
	ctr --address "$containerd_sock" --namespace k8s.io "$@"
}

# import_pause builds the pause process and imports it into containerd as a
# one-layer OCI image, unless that image is there already.
import_pause() {
	ctr_k8s images ls -q "name==$pause_image" 2>/dev/null | grep -q . && return 0
	local dir
	dir=$(mktemp -d "$state/.pause.XXXXXX")
	mkdir -p -- "$dir/rootfs" "$dir/oci/blobs/sha256"
	(cd -- "$repo" && go build -trimpath -ldflags '-s -w' -o "$dir/rootfs/pause" ./scripts/k8spause) ||
		die "building the pause process failed"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$dir/rootfs" -cf "$dir/layer.tar" pause
	local layer layer_size config config_size manifest manifest_size
	layer=$(sha256sum <"$dir/layer.tar" | cut -d' ' -f1)
	layer_size=$(stat -c %s "$dir/layer.tar")
	mv -- "$dir/layer.tar" "$dir/oci/blobs/sha256/$layer"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$layer" >"$dir/config.json"
	config=$(sha256sum <"$dir/config.json" | cut -d' ' -f1)
	config_size=$(stat -c %s "$dir/config.json")
	mv -- "$dir/config.json" "$dir/oci/blobs/sha256/$config"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
		"$config" "$config_size" "$layer" "$layer_size" >"$dir/manifest.json"
	manifest=$(sha256sum <"$dir/manifest.json" | cut -d' ' -f1)
	manifest_size=$(stat -c %s "$dir/manifest.json")
	mv -- "$dir/manifest.json" "$dir/oci/blobs/sha256/$manifest"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$manifest" "$manifest_size" "$pause_image" "${pause_image##*:}" >"$dir/oci/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$dir/oci/oci-layout"
	tar -C "$dir/oci" -cf "$dir/pause.tar" oci-layout index.json blobs
	ctr_k8s images import --no-unpack=false "$dir/pause.tar" >/dev/null || die "importing the pause image failed"
	rm -rf -- "$dir"
	log "imported $pause_image"
}

# engine_socket prints the first engine socket the environment names (docker
# first), or else the first one scripts/engines.sh runs for this state root.
engine_socket() {
	local s docker=${PODBOT_E2E_DOCKER_SOCKET:-} podman=${PODBOT_E2E_PODMAN_SOCKET:-}
	if [[ -z $docker && -z $podman ]]; then
		eval "$("$repo/scripts/engines.sh" env)"
		docker=${PODBOT_E2E_DOCKER_SOCKET:-} podman=${PODBOT_E2E_PODMAN_SOCKET:-}
	fi
	for s in "$docker" "$podman"; do
		s=${s#unix://}
		if [[ -n $s && -S $s ]]; then
			echo "$s"
			return 0
		fi
	done
	return 1
}

# import_image copies the sandbox image from a container engine into
# containerd (no registry), unless containerd holds that same image already.
import_image() {
	[[ ${PODBOT_K8S_NO_IMPORT:-} == 1 ]] && return 0
	local sock id stamp
	stamp=$state/images/$(printf '%s' "$image" | tr -c 'A-Za-z0-9._-' _).id
	if ! sock=$(engine_socket); then
		die "no engine to export $image from: start them (make image, or scripts/engines.sh up), name one in PODBOT_E2E_DOCKER_SOCKET or PODBOT_E2E_PODMAN_SOCKET (source <(scripts/engines.sh env)), or set PODBOT_K8S_NO_IMPORT=1"
	fi
	local ref=$image
	[[ $ref == */* ]] || ref=localhost/$ref
	id=$(curl -fsS --max-time 10 --unix-socket "$sock" "http://engine/images/$(jq -rn --arg r "$ref" '$r|@uri')/json" | jq -r .Id) ||
		die "image $ref not found on unix://$sock: build it first (make image)"
	mkdir -p -- "$state/images"
	if [[ -s $stamp && $(<"$stamp") == "$id" ]] && ctr_k8s images ls -q "name==$ref" 2>/dev/null | grep -q .; then
		return 0
	fi
	log "importing $ref ($id) from unix://$sock into containerd"
	curl -fsS --max-time 600 --unix-socket "$sock" "http://engine/images/get?names=$(jq -rn --arg r "$ref" '$r|@uri')" |
		ctr_k8s images import - >/dev/null || die "importing $ref into containerd failed"
	ctr_k8s images ls -q "name==$ref" | grep -q . || die "containerd does not list $ref after the import"
	printf '%s\n' "$id" | write_file "$stamp" 0644
}

# ---------------------------------------------------------------------------
# commands

up() {
	[[ $EUID -eq 0 ]] || die "up needs root (containerd, runc and the kubelet)"
	install_missing
	command -v jq >/dev/null || die "jq missing"
	build
	mkdir -p -- "$state" "$run" "$logs"
	write_pki
	kubeconfig admin admin
	kubeconfig controller-manager controller-manager
	kubeconfig scheduler scheduler
	kubeconfig kubelet kubelet-client
	write_containerd_config
	write_kubelet_config
	start_containerd
	import_pause
	start_etcd
	start_apiserver
	start_controller_manager
	start_scheduler
	start_kubelet
	wait_node
	setup_network
	allow_pod_forwarding
	start_netpol
	import_image
	log "cluster up: source <($0 env) && kubectl get nodes"
}

# allow_pod_forwarding lets Pods on the test bridge reach each other (the
# Kubernetes network model; a sandbox reaches its egress proxy Pod that way):
# where dockerd has set the FORWARD policy to DROP and bridged frames pass
# through iptables, Pod-to-Pod traffic would be dropped. Idempotent; only
# traffic that enters and leaves the test bridge is accepted.
#
# The accept must come after kube-router's jump (start_netpol checks it):
# traffic a NetworkPolicy refuses is rejected in kube-router's chains before
# it gets here.
allow_pod_forwarding() {
	iptables -C FORWARD -i "$bridge" -o "$bridge" -m comment --comment podbot-k8s -j ACCEPT 2>/dev/null && return 0
	local pos
	pos=$(iptables -L FORWARD -n --line-numbers | awk '$2 == "KUBE-ROUTER-FORWARD" { print $1; exit }')
	iptables -I FORWARD $((${pos:-0} + 1)) -i "$bridge" -o "$bridge" -m comment --comment podbot-k8s -j ACCEPT ||
		die "could not let Pods on $bridge reach each other (iptables FORWARD)"
}

# setup_network creates the Pod bridge (the CNI plugin would, at the first
# Pod; the e2e tests listen on its address before one ran) and gives it the
# outside stand-ins as well (/32: no route of the host changes).
setup_network() {
	local gw=${node_pod_cidr%.0/*}.1/${node_pod_cidr#*/}
	if [[ ! -e /sys/class/net/$bridge ]]; then
		ip link add "$bridge" type bridge || die "could not create the bridge $bridge"
	fi
	{ ip addr replace "$gw" dev "$bridge" && ip link set "$bridge" up; } ||
		die "could not give $bridge its address $gw"
	{ ip addr replace "$outside_public/32" dev "$bridge" && ip addr replace "$outside_linklocal/32" dev "$bridge"; } ||
		die "could not give $bridge the outside stand-ins $outside_public and $outside_linklocal"
}

# ---------------------------------------------------------------------------
# NetworkPolicy: kube-router's network policy controller

# netpol_rbac lets the enforcer's identity (podbot-netpol, a client
# certificate) read what it needs and nothing else.
netpol_rbac() {
	kctl apply -f - >/dev/null <<EOF || die "could not grant the NetworkPolicy enforcer its read access"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: podbot-netpol
rules:
- apiGroups: [""]
  resources: [pods, namespaces, nodes, services, endpoints]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: podbot-netpol
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: podbot-netpol
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: podbot-netpol
EOF
}

# netpol_enforcing succeeds when kube-router's chains are in place: its
# jump comes before the Pod bridge's accept in FORWARD, and INPUT and
# OUTPUT jump to its chains too.
netpol_enforcing() {
	local first chain
	first=$(iptables -L FORWARD -n 2>/dev/null | awk '$1 == "KUBE-ROUTER-FORWARD" || /podbot-k8s/ { print $1; exit }')
	[[ $first == KUBE-ROUTER-FORWARD ]] || return 1
	for chain in INPUT OUTPUT; do
		iptables -L "$chain" -n 2>/dev/null | awk -v c="KUBE-ROUTER-$chain" '$1 == c { f = 1 } END { exit !f }' || return 1
	done
}

# start_netpol starts kube-router as a NetworkPolicy controller only (no
# router, service proxy, CNI, health or metrics port) and waits until its
# chains are in place.
start_netpol() {
	[[ -x $netpol_bin/kube-router ]] || die "kube-router missing in $netpol_bin: run $0 build"
	command -v ipset >/dev/null || die "ipset missing (Debian package ipset)"
	# Frames between Pods on the bridge must pass through iptables.
	[[ -e /proc/sys/net/bridge ]] || modprobe br_netfilter 2>/dev/null || true
	sysctl -qw net.bridge.bridge-nf-call-iptables=1 ||
		die "could not set net.bridge.bridge-nf-call-iptables=1 (br_netfilter): NetworkPolicy would not apply between Pods"
	cert netpol podbot-netpol "" clientAuth
	kubeconfig netpol netpol
	netpol_rbac
	start kube-router "$netpol_bin/kube-router" \
		--kubeconfig "$state/netpol.kubeconfig" \
		--hostname-override "$node_name" \
		--run-firewall=true \
		--run-router=false \
		--run-service-proxy=false \
		--run-loadbalancer=false \
		--enable-cni=false \
		--enable-pod-egress=false \
		--enable-ipv6=false \
		--service-cluster-ip-range "$service_cidr" \
		--health-port 0 \
		--metrics-port 0 \
		--v 1
}

# netpol_cleanup removes every iptables rule, chain and ipset kube-router
# made (it leaves them behind when it stops).
netpol_cleanup() {
	local chain n chains sets
	for chain in INPUT FORWARD OUTPUT; do
		for n in $(iptables -L "$chain" -n --line-numbers 2>/dev/null | awk '$2 ~ /^KUBE-ROUTER-/ { print $1 }' | sort -rn); do
			iptables -D "$chain" "$n" || log "warning: could not delete rule $n of $chain"
		done
	done
	chains=$(iptables -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-(ROUTER-|POD-FW-|NWPLCY-)/ { print $2 }')
	for chain in $chains; do iptables -F "$chain" 2>/dev/null || true; done
	for chain in $chains; do iptables -X "$chain" 2>/dev/null || log "warning: could not delete the chain $chain"; done
	if command -v ipset >/dev/null; then
		sets=$(ipset list -n 2>/dev/null | grep -E '^(KUBE-SRC-|KUBE-DST-|TMP-[A-Z2-7]{16}$)' || true)
		for n in $sets; do ipset destroy "$n" 2>/dev/null || log "warning: could not destroy the ipset $n"; done
	fi
}

down() {
	local pid
	# kwok first (with its fake nodes), while the API server still answers.
	kwok_down
	# Pods first, while the kubelet still runs: it stops their containers and
	# tears down their network.
	if pid=$(alive "$run/kubelet.pid" kubelet) && probe kube-apiserver; then
		kctl delete pods --all --all-namespaces --grace-period 2 --wait --timeout 60s >/dev/null 2>&1 ||
			log "warning: deleting the Pods failed or timed out"
	fi
	stop kubelet kubelet
	stop kube-router kube-router
	netpol_cleanup
	stop kube-scheduler kube-scheduler
	stop kube-controller-manager kube-controller-manager
	stop kube-apiserver kube-apiserver
	stop etcd etcd
	# Anything the kubelet did not stop dies with containerd's tasks.
	if alive "$run/containerd.pid" containerd >/dev/null; then
		local task
		for task in $(ctr_k8s tasks ls -q 2>/dev/null); do
			ctr_k8s tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
		done
		for task in $(ctr_k8s tasks ls -q 2>/dev/null); do
			ctr_k8s tasks delete -f "$task" >/dev/null 2>&1 || true
		done
	fi
	stop containerd containerd
	# The kubelet bind-mounts its root directory onto itself (and Pod volumes
	# under it); containerd mounts each sandbox's /dev/shm under its state.
	local m
	while read -r m; do
		umount -- "$m" 2>/dev/null || umount -l -- "$m" 2>/dev/null || log "warning: could not unmount $m"
	done < <(awk -v s="$state/" -v r="$run/" 'index($5, s) == 1 || index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	if [[ -e /sys/class/net/$bridge ]]; then
		ip link delete "$bridge" 2>/dev/null || log "warning: could not delete the bridge $bridge"
	fi
	while iptables -D FORWARD -i "$bridge" -o "$bridge" -m comment --comment podbot-k8s -j ACCEPT 2>/dev/null; do :; done
}

print_env() {
	printf 'export KUBECONFIG=%s\n' "$admin_kubeconfig"
	printf 'export PODBOT_E2E_KUBECONFIG=%s\n' "$admin_kubeconfig"
	local ref=$image
	[[ $ref == */* ]] || ref=localhost/$ref
	printf 'export PODBOT_E2E_K8S_IMAGE=%s\n' "$ref"
	# shellcheck disable=SC2016 # $PATH expands where the output is sourced
	printf 'export PATH=%s:$PATH\n' "$bin"
}

status() {
	local rc=0 name binary pid
	for name in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-router; do
		binary=$name
		if ! pid=$(alive "$run/$name.pid" "$binary"); then
			echo "$name: not running"
			rc=1
		elif probe "$name"; then
			if [[ $name == kube-router ]]; then
				echo "$name: running, pid $pid, enforcing NetworkPolicy ($kube_router_version, firewall only)"
			else
				echo "$name: running, pid $pid, healthy"
			fi
		else
			echo "$name: running, pid $pid, NOT healthy"
			rc=1
		fi
	done
	if ((rc == 0)); then
		kctl get nodes -o wide || rc=1
	fi
	return "$rc"
}

# ---------------------------------------------------------------------------
# kwok

# The annotation kwok manages nodes by, and the label podbot's fake nodes
# carry so kwok down finds them.
readonly kwok_annotation=kwok.x-k8s.io/node=fake
readonly kwok_label=podbot.test/kwok

kwok_build() {
	[[ -x $kwok_bin/kwok ]] && return 0
	mkdir -p -- "$kwok_bin"
	local tmp
	tmp=$(mktemp -d "$kwok_bin/.build.XXXXXX")
	log "building sigs.k8s.io/kwok $kwok_version (nice -n 19; a minute or two on a cold cache)"
	if ! GOBIN=$tmp nice -n 19 go install -trimpath -ldflags '-s -w' "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"; then
		rm -rf -- "$tmp"
		die "building kwok $kwok_version failed (see above)"
	fi
	mv -f -- "$tmp/kwok" "$kwok_bin/kwok"
	rmdir -- "$tmp"
}

# kwok_config writes kwok's configuration: options (only annotated nodes,
# no CRDs) and the "fast" node and Pod stages shipped in the kwok module: a
# node is Ready at once and keeps its lease, a Pod on it is Running and
# Ready at once, a deleted one goes at once.
kwok_config() {
	local dir f
	dir=$(go mod download -json "sigs.k8s.io/kwok@$kwok_version" | jq -r .Dir) ||
		die "could not download sigs.k8s.io/kwok@$kwok_version from the Go module proxy"
	mkdir -p -- "$state/kwok"
	{
		printf '%s\n' \
			"apiVersion: config.kwok.x-k8s.io/v1alpha1" \
			"kind: KwokConfiguration" \
			"options:" \
			"  cidr: 10.216.0.0/16" \
			"  nodeIP: 127.0.0.1" \
			"  manageAllNodes: false" \
			"  manageNodesWithAnnotationSelector: '$kwok_annotation'" \
			"  manageNodesWithLabelSelector: ''" \
			"  manageSingleNode: ''" \
			"  nodeLeaseDurationSeconds: 40" \
			"  nodeLeaseParallelism: 4" \
			"  podPlayStageParallelism: 4" \
			"  nodePlayStageParallelism: 4" \
			"  enablePodsOnNodeSyncStreamWatch: true" \
			"  enableCRDs: []"
		for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
			pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
			[[ -s $dir/kustomize/stage/$f.yaml ]] || die "kwok $kwok_version lacks kustomize/stage/$f.yaml"
			echo "---"
			cat -- "$dir/kustomize/stage/$f.yaml"
		done
	} | write_file "$state/kwok/kwok.yaml" 0644
}

kwok_up() {
	probe kube-apiserver || die "the cluster's API server does not answer: start the cluster first ($0 up)"
	kwok_build
	kwok_config
	mkdir -p -- "$run" "$logs"
	local pid i
	if pid=$(alive "$run/kwok.pid" kwok); then
		log "kwok already running (pid $pid)"
		return 0
	fi
	launch kwok "$kwok_bin/kwok" --config "$state/kwok/kwok.yaml" --kubeconfig "$admin_kubeconfig" \
		--server-address "" --manage-all-nodes=false --manage-nodes-with-annotation-selector "$kwok_annotation"
	for ((i = 0; i < 8; i++)); do
		sleep 0.25
		if [[ -s $run/kwok.pid && ! -e /proc/$(<"$run/kwok.pid") ]]; then
			echo "k8s.sh: kwok exited at once; last lines of $logs/kwok.log:" >&2
			log_tail kwok
			exit 1
		fi
	done
	log "kwok $kwok_version up (pid $(<"$run/kwok.pid")): create nodes annotated $kwok_annotation and labelled $kwok_label"
}

kwok_down() {
	if probe kube-apiserver; then
		local node
		for node in $(kctl get nodes -l "$kwok_label" -o name 2>/dev/null); do
			kctl delete pods --all-namespaces --field-selector "spec.nodeName=${node#node/}" --grace-period 0 --force >/dev/null 2>&1 || true
		done
		kctl delete nodes -l "$kwok_label" --wait=false >/dev/null 2>&1 || log "warning: deleting the fake nodes failed"
	fi
	stop kwok kwok
}

kwok_status() {
	local pid
	if pid=$(alive "$run/kwok.pid" kwok); then
		echo "kwok: running, pid $pid"
		kctl get nodes -l "$kwok_label" 2>/dev/null || true
		return 0
	fi
	echo "kwok: not running"
	return 1
}

main() {
	[[ $# -ge 1 ]] || die "usage: $0 build|up|down|env|status|kwok|kubectl ARGS..."
	resolve_dirs
	case $1 in
	help | -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" ;;
	build) build ;;
	up) up ;;
	down) down ;;
	env) print_env ;;
	status) status ;;
	kwok)
		case ${2:-} in
		build) kwok_build ;;
		up) kwok_up ;;
		down) kwok_down ;;
		status) kwok_status ;;
		*) die "usage: $0 kwok build|up|down|status" ;;
		esac
		;;
	kubectl)
		shift
		exec "$bin/kubectl" --kubeconfig "$admin_kubeconfig" "$@"
		;;
	*) die "unknown command '$1'; usage: $0 build|up|down|env|status|kwok|kubectl ARGS..." ;;
	esac
}

main "$@"
