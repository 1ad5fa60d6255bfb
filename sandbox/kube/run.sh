#!/usr/bin/env bash
# Starts, stops and reports the test Kubernetes control plane (etcd +
# kube-apiserver via envtest, see cmd/kube-sandbox).
#
#   run.sh up      start it, or reuse the running one when it answers
#   run.sh down    stop it and check no etcd/kube-apiserver of ours is left
#   run.sh status  print endpoint, pids and memory; exit 1 when not running
#
# State: var/sandbox/kube.json (endpoint), kube-sandbox.pid, kube-*.log, kube/ (data).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
# KUBE_SANDBOX_INSTANCE=second runs an independent second control plane
# under var/sandbox/kube-second (tests of several Kubernetes clusters).
instance="${KUBE_SANDBOX_INSTANCE:-}"
if [[ -n "${instance}" && ! "${instance}" =~ ^[a-z0-9]+$ ]]; then
	echo "KUBE_SANDBOX_INSTANCE=${instance}: want lower-case letters and digits" >&2
	exit 2
fi
state="${root}/var/sandbox${instance:+/kube-${instance}}"
assets="${root}/bin/kube"
pidfile="${state}/kube-sandbox.pid"
endpoint="${state}/kube.json"
log="${state}/kube-sandbox.log"
sandbox_bin="${assets}/kube-sandbox"

mkdir -p "${state}"
cd "${root}"

healthy() {
	[[ -x "${sandbox_bin}" && -f "${endpoint}" ]] && "${sandbox_bin}" check --state-dir "${state}" >/dev/null 2>&1
}

# Our etcd/kube-apiserver: started from bin/kube with data under var/sandbox/kube/.
our_control_plane_pids() {
	local p exe
	for p in /proc/[0-9]*; do
		exe="$(readlink "${p}/exe" 2>/dev/null || true)"
		case "${exe}" in
		"${assets}/etcd" | "${assets}/kube-apiserver")
			if grep -qF "${state}/kube/" <<<"$(tr '\0' ' ' <"${p}/cmdline" 2>/dev/null)"; then
				echo "${p#/proc/}"
			fi
			;;
		esac
	done
}

rss_kib() {
	awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0
}

# kill -0 also succeeds for zombies, which an unreaping PID 1 keeps around.
alive() {
	local st
	st="$(sed -E 's/.*\) ([A-Z]).*/\1/' "/proc/$1/stat" 2>/dev/null)" || return 1
	[[ -n "${st}" && "${st}" != Z ]]
}

stop_pid() {
	local pid="$1" name="$2" i
	alive "${pid}" || return 0
	kill -TERM "${pid}" 2>/dev/null || true
	for i in $(seq 1 300); do
		alive "${pid}" || return 0
		sleep 0.2
	done
	echo "${name} (pid ${pid}) ignored SIGTERM for 60s; killing" >&2
	kill -KILL "${pid}" 2>/dev/null || true
}

down() {
	if [[ -f "${pidfile}" ]]; then
		stop_pid "$(cat "${pidfile}")" kube-sandbox
	fi
	# Left over when kube-sandbox itself was killed: envtest children sit in
	# their own process groups and survive their parent.
	local pid
	for pid in $(our_control_plane_pids); do
		stop_pid "${pid}" "$(basename "$(readlink "/proc/${pid}/exe" 2>/dev/null || echo process)")"
	done
	rm -f "${pidfile}" "${endpoint}"
	local left
	left="$(our_control_plane_pids)"
	if [[ -n "${left}" ]]; then
		echo "still running after down: ${left}" >&2
		return 1
	fi
	echo "kube sandbox down; no etcd/kube-apiserver of ours left"
}

up() {
	if healthy; then
		echo "kube sandbox already running: $("${sandbox_bin}" check --state-dir "${state}")"
		return 0
	fi
	"${here}/build.sh"
	# go build relinks every time; skip it when no source changed since.
	if [[ ! -x "${sandbox_bin}" ]] || [[ -n "$(find go.mod go.sum internal/testsupport/sandbox sandbox/kube/cmd -newer "${sandbox_bin}" -name '*.go' -o -newer "${sandbox_bin}" -name 'go.*' 2>/dev/null | head -n 1)" ]]; then
		go build -o "${sandbox_bin}" ./sandbox/kube/cmd/kube-sandbox
	fi
	down >/dev/null

	local start
	start=$(date +%s%N)
	KUBEBUILDER_ASSETS="${assets}" nohup setsid "${sandbox_bin}" serve --state-dir "${state}" >"${log}" 2>&1 </dev/null &
	local pid=$!
	echo "${pid}" >"${pidfile}"
	local i
	for i in $(seq 1 600); do
		if ! alive "${pid}"; then
			echo "kube-sandbox exited during start; last lines of ${log}:" >&2
			tail -n 30 "${log}" >&2
			rm -f "${pidfile}"
			return 1
		fi
		if [[ -f "${endpoint}" ]] && healthy; then
			echo "kube sandbox up in $(( ($(date +%s%N) - start) / 1000000 )) ms: $("${sandbox_bin}" check --state-dir "${state}")"
			return 0
		fi
		sleep 0.2
	done
	echo "kube sandbox not ready after 120s; see ${log}" >&2
	down >&2 || true
	return 1
}

status() {
	if ! healthy; then
		echo "kube sandbox not running"
		return 1
	fi
	echo "host: $("${sandbox_bin}" check --state-dir "${state}")"
	echo "kube-sandbox pid: $(cat "${pidfile}" 2>/dev/null || echo unknown)"
	local pid total=0 rss
	for pid in $(our_control_plane_pids); do
		rss=$(rss_kib "${pid}")
		total=$((total + rss))
		echo "$(basename "$(readlink "/proc/${pid}/exe")") pid ${pid}: RSS $((rss / 1024)) MiB"
	done
	echo "etcd + kube-apiserver RSS: $((total / 1024)) MiB"
	echo "endpoint: ${endpoint}"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
	echo "usage: $0 up|down|status" >&2
	exit 2
	;;
esac
