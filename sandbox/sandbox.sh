#!/usr/bin/env bash
# The whole real-peer sandbox: HDFS + ZooKeeper + three Flink session clusters (two on
# Flink 1.20, one on 2.3; sandbox/java) and a kube-apiserver + etcd (sandbox/kube).
#
#   sandbox/sandbox.sh build   build everything once (cached afterwards)
#   sandbox/sandbox.sh up      start or reuse every peer, print the endpoints
#   sandbox/sandbox.sh down    stop every peer (the failover, secure, drill-2 and REST TLS Flink clusters tests start on demand
#                              too); no process is left running
#   sandbox/sandbox.sh status  what runs
#   sandbox/sandbox.sh secure-up  also start the secure storage JVM (KDC + kerberized HA HDFS,
#                                 var/sandbox/secure.json); tests start it on demand
#
# Endpoints: var/sandbox/peers.json (HDFS, Flink) and var/sandbox/kube.json
# (a second control plane, started on demand: var/sandbox/kube-second/kube.json).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

build() {
  "$HERE/kube/build.sh"
  "$HERE/java/run.sh" build
}

up() {
  local start=$SECONDS
  build
  "$HERE/kube/run.sh" up
  "$HERE/java/run.sh" up
  echo "sandbox up in $((SECONDS - start)) s"
  status
}

down() {
  local rc=0
  "$HERE/java/run.sh" down || rc=$?
  "$HERE/kube/run.sh" down || rc=$?
  # The second control plane, started on demand by tests of an inventory
  # over several Kubernetes clusters.
  KUBE_SANDBOX_INSTANCE=second "$HERE/kube/run.sh" down || rc=$?
  return $rc
}

status() {
  local rc=0
  "$HERE/java/run.sh" status || rc=$?
  "$HERE/kube/run.sh" status || rc=$?
  echo "second control plane:"
  KUBE_SANDBOX_INSTANCE=second "$HERE/kube/run.sh" status || true
  return $rc
}

case "${1:-}" in
  build) build ;;
  up) up ;;
  down) down ;;
  status) status ;;
  secure-up) "$HERE/java/run.sh" secure-up ;;
  *) echo "usage: $0 build|up|down|status|secure-up" >&2; exit 2 ;;
esac
