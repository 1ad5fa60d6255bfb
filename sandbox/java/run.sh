#!/usr/bin/env bash
# Real-peer sandbox: HDFS (MiniDFSCluster) + ZooKeeper in one JVM, and three Flink session clusters
# (cluster-a for tenant team-a and cluster-b for team-b on Flink 1.20, cluster-c for team-c on
# Flink 2.x), one JVM each, all on 127.0.0.1.
#
#   sandbox/java/run.sh build    mvn package (skipped when up to date) + runtime classpath file
#   sandbox/java/run.sh up       start or reuse the JVMs, wait until they answer, write peers.json
#   sandbox/java/run.sh down     stop every JVM this script started (logs are kept)
#   sandbox/java/run.sh status   show what runs
#
#   sandbox/java/run.sh secure-up      start or reuse the secure storage JVM (KDC + kerberized HA HDFS,
#                                      nameservice ns1), write secure.json; opt-in, independent of up
#   sandbox/java/run.sh secure-down    stop it (down stops it too)
#   sandbox/java/run.sh secure-status  show it
#
#   sandbox/java/run.sh failover-up       start a fresh killable Flink 1.20 session cluster that no
#                                         other test uses (tenant team-failover, a new HA cluster-id
#                                         each time, the same ZooKeeper), write failover.json; needs up
#   sandbox/java/run.sh failover-kill     SIGKILL its JVM, as a crashed JobManager host
#   sandbox/java/run.sh failover-restart  start it again on the same REST port and HA cluster-id; its
#                                         jobs recover from ZooKeeper HA
#   sandbox/java/run.sh failover-down     stop it (down stops it too)
#
#   sandbox/java/run.sh secure-flink-up    start or reuse a Flink 1.20 session cluster on the secure
#                                          HDFS (tenant team-a under hdfs://ns1, logged in from the
#                                          flink principal's keytab, a new HA cluster-id each start,
#                                          the sandbox ZooKeeper), write secure-flink.json; needs up
#                                          and secure-up; one started before them is started again
#   sandbox/java/run.sh secure-flink-down  stop it (down and secure-down stop it too)
#
#   sandbox/java/run.sh drill2-up      start or reuse a Flink 2.3 session cluster that belongs to no
#                                      tenant (drill-2): the drill cluster of version 2.3 a
#                                      compatibility rehearsal restores on, write drill-2.json; needs up
#   sandbox/java/run.sh drill2-down    stop it (down stops it too)
#
#   sandbox/java/run.sh ssl-up         start or reuse a Flink 1.20 session cluster whose REST endpoint
#                                      serves TLS only and asks every client for a certificate its
#                                      truststore trusts (security.ssl.rest.enabled,
#                                      security.ssl.rest.authentication-enabled; keystore and
#                                      truststore made with keytool, PEM copies for Go clients),
#                                      write flink-ssl.json; needs up
#   sandbox/java/run.sh ssl-down       stop it (down stops it too)
#
# State, pid files and logs live under <repo>/var/sandbox (override: FLINKMAINT_SANDBOX_DIR).
# HDFS and ZooKeeper data are fresh whenever the storage JVM starts; a Flink cluster started
# against an older storage JVM is restarted with it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# shellcheck source=scripts/cache.sh
source "$REPO/scripts/cache.sh"
STATE="${FLINKMAINT_SANDBOX_DIR:-$REPO/var/sandbox}"
JAVA_STATE="$STATE/java"
LOGS="$STATE/logs"
PEERS_JSON="$STATE/peers.json"
CLASSPATH_FILE="$STATE/java-classpath.txt"
# Flink 1.20 and 2.x jars cannot share a JVM: the 2.x clusters run on their own classpath.
CLASSPATH_FILE_FLINK2="$STATE/java-classpath-flink2.txt"
BUILD_ENV="$JAVA_STATE/build.env"
BUILD_STAMP="$JAVA_STATE/build.stamp"
JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}java"

# The HDFS user every sandbox JVM runs as; it starts the NameNode, so it is the HDFS superuser.
# Go clients must connect with the same user name (peers.json hdfs.user).
export HADOOP_USER_NAME="${FLINKMAINT_HDFS_USER:-flink}"

NAMESPACE_QUOTA="${FLINKMAINT_NAMESPACE_QUOTA:-15000}"
# The storage JVM (NameNode, DataNode, ZooKeeper) grows to this heap; the benchmark trees it keeps
# (make bench-storage, bench-governance: up to 1.5M namespace objects) need well over 512m.
STORAGE_HEAP="${FLINKMAINT_STORAGE_HEAP:-2g}"
# make test runs three packages at a time, each three tests at a time, and a test's jobs each take
# a slot: with 8 slots cluster-a was seen full (8 jobs running), and a job submitted then waits for
# a slot, without a checkpoint, until its test gives up.
TASK_SLOTS="${FLINKMAINT_TASK_SLOTS:-16}"
# id:tenant:line. The line picks the classpath, the sample job jar and peers.json flinkVersion:
# 1 = Flink 1.20 (modules peers, sample-job), 2 = Flink 2.x (peers-flink2, sample-job-flink2).
CLUSTERS=("cluster-a:team-a:1" "cluster-b:team-b:1" "cluster-c:team-c:2")
TENANTS=("team-a" "team-b" "team-c")
STORAGE_MAIN="io.github.flinkmaint.sandbox.peers.StoragePeers"
SECURE_MAIN="io.github.flinkmaint.sandbox.peers.SecureStoragePeers"
SECURE_DIR="$STATE/secure"
SECURE_JSON="$STATE/secure.json"
# Kerberos ticket lifetime of the secure sandbox: the shortest it takes (60 s), so that
# the tests that outlive tickets wait as little as they can.
SECURE_TICKET_LIFETIME="${FLINKMAINT_SECURE_TICKET_LIFETIME:-60}"
SECURE_RPC_PROTECTION="${FLINKMAINT_SECURE_RPC_PROTECTION:-privacy}"
SECURE_DATA_PROTECTION="${FLINKMAINT_SECURE_DATA_TRANSFER_PROTECTION:-authentication}"
CLUSTER_MAIN="io.github.flinkmaint.sandbox.peers.FlinkSessionCluster"
SAMPLE_ENTRY="io.github.flinkmaint.sandbox.job.StatefulSampleJob"
# One more Flink 1.20 session cluster, for tests that kill a JobManager: the shared clusters
# serve tests running in parallel, so none of them may be killed. Every failover-up starts it
# fresh under a new HA cluster-id, so no job of an earlier test recovers into it; a restart
# keeps the cluster-id (its jobs recover from ZooKeeper) and the REST port.
FAILOVER="failover"
FAILOVER_TENANT="team-failover"
FAILOVER_JSON="$STATE/failover.json"
# ZooKeeper session timeout of the failover cluster: a restarted JobManager answers 503 until
# ZooKeeper expires the dead one's session. Flink's default is 60 s; shorter keeps tests short.
FAILOVER_ZK_SESSION_MS="${FLINKMAINT_FAILOVER_ZK_SESSION_MS:-20000}"
# A Flink 1.20 session cluster whose checkpoints, savepoints and HA data live on the kerberized
# nameservice of the secure storage JVM: production's shape, for tests of a window there.
SECURE_FLINK="secure-flink"
SECURE_FLINK_TENANT="team-a"
SECURE_FLINK_JSON="$STATE/secure-flink.json"
# A Flink 2.3 session cluster no tenant owns, for rehearsals on Flink 2.3 beside cluster-c: drills
# never run on an inventory cluster.
DRILL2="drill-2"
DRILL2_JSON="$STATE/drill-2.json"
# A Flink 1.20 session cluster whose REST endpoint is TLS with mutual authentication, as a
# production JobManager behind security.ssl.rest.*: for tests of the worker's REST TLS settings.
SSL="flink-ssl"
SSL_JSON="$STATE/flink-ssl.json"
# Extra JVM options for the next start_peer (the secure cluster's krb5.conf).
PEER_JVM_OPTS=()

# Marks our JVMs on their command line, so a reused pid is never mistaken for one of ours.
MARKER="-Dflinkmaint.sandbox.home=$STATE"

# cluster_field ENTRY N: field N (1 id, 2 tenant, 3 line) of a CLUSTERS entry.
cluster_field() { cut -d: -f"$2" <<<"$1"; }

# line_version LINE: the Flink version the build made for a line.
line_version() {
    case "$1" in
        1) env_value "$BUILD_ENV" FLINK_VERSION ;;
        2) env_value "$BUILD_ENV" FLINK_VERSION_2 ;;
        *) die "unknown Flink line '$1' in CLUSTERS (valid: 1, 2)" ;;
    esac
}

# line_sample_jar LINE: the sample job jar built against a line.
line_sample_jar() {
    case "$1" in
        1) env_value "$BUILD_ENV" SAMPLE_JAR ;;
        2) env_value "$BUILD_ENV" SAMPLE_JAR_2 ;;
        *) die "unknown Flink line '$1' in CLUSTERS (valid: 1, 2)" ;;
    esac
}

# line_classpath LINE: the runtime classpath file of a Flink line (see CLUSTERS).
line_classpath() {
    case "$1" in
        1) echo "$CLASSPATH_FILE" ;;
        2) echo "$CLASSPATH_FILE_FLINK2" ;;
        *) die "unknown Flink line '$1' in CLUSTERS (valid: 1, 2)" ;;
    esac
}

log() { printf '[java-sandbox] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# One build/up/down at a time: parallel test binaries may all call up. The lock is held on fd 9
# until this script exits; the JVMs do not inherit it.
LOCKED=""
take_lock() {
    [[ -n "$LOCKED" ]] && return 0
    mkdir -p "$JAVA_STATE"
    exec 9>"$JAVA_STATE/run.lock"
    flock -w 900 9 || die "another run.sh held $JAVA_STATE/run.lock for 15 minutes"
    LOCKED=1
}

# ---------------------------------------------------------------- build

needs_build() {
    [[ -f "$BUILD_STAMP" && -f "$CLASSPATH_FILE" && -f "$CLASSPATH_FILE_FLINK2" && -f "$BUILD_ENV" ]] || return 0
    [[ -f "$HERE/peers/target/peers-0.1.0.jar" && -f "$HERE/sample-job/target/sample-job-0.1.0.jar" ]] || return 0
    [[ -f "$HERE/peers-flink2/target/peers-flink2-0.1.0.jar" && -f "$HERE/sample-job-flink2/target/sample-job-flink2-0.1.0.jar" ]] || return 0
    # By content, not mtime: a branch switch or a checkout during a build
    # can leave sources older than the stamp yet different from the jars.
    [[ "$(cat "$BUILD_STAMP")" != "$(source_digest)" ]]
}

# One digest over every source the Maven build reads.
source_digest() {
    (cd "$HERE" && find . -path '*/target' -prune -o -type f \( -name '*.java' -o -name '*.xml' -o -name '*.properties' \) -print \
        | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1)
}

# What the build leaves that the sandbox runs: the jars and the runtime classpaths (the jars in
# the local Maven repository they name). Kept in the tools cache (scripts/cache.sh) under a key
# of the sources, the JDK, Maven and that repository, so another clone copies them.
BUILD_OUTPUTS=(peers/target/peers-0.1.0.jar peers/target/runtime-classpath.txt sample-job/target/sample-job-0.1.0.jar
    peers-flink2/target/peers-flink2-0.1.0.jar peers-flink2/target/runtime-classpath.txt
    sample-job-flink2/target/sample-job-flink2-0.1.0.jar)

# classpaths_whole: every jar the runtime classpaths name exists (the local repository may have
# been emptied since the cache entry was made).
classpaths_whole() {
    local f entry
    for f in "$HERE/peers/target/runtime-classpath.txt" "$HERE/peers-flink2/target/runtime-classpath.txt"; do
        [[ -s "$f" ]] || return 1
        while IFS= read -r -d: entry; do
            [[ -z "$entry" || -e "$entry" ]] || return 1
        done < <(tr -d '\n' <"$f"; printf ':')
    done
}

cmd_build() {
    take_lock
    mkdir -p "$JAVA_STATE" "$LOGS"
    if ! needs_build; then
        log "build is up to date ($CLASSPATH_FILE)"
        return 0
    fi
    command -v mvn >/dev/null || die "mvn not found on PATH (Maven 3.8+ and a Java 17 JDK are needed)"
    local m2="${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}"
    local flink_version flink2_version
    flink_version="$(sed -n 's:.*<flink.version>\(.*\)</flink.version>.*:\1:p' "$HERE/pom.xml" | head -1)"
    flink2_version="$(sed -n 's:.*<flink2.version>\(.*\)</flink2.version>.*:\1:p' "$HERE/pom.xml" | head -1)"
    local start=$SECONDS digest key
    digest="$(source_digest)"
    key="$(cache_key maven-sandbox "$digest" "$m2" "$("$JAVA_BIN" -version 2>&1 | head -1)" "$(mvn -v 2>/dev/null | head -1)")"
    if cache_get maven-sandbox "$key" "$HERE" "${BUILD_OUTPUTS[@]}" && classpaths_whole; then
        log "jars and classpaths from the tools cache ($(cache_entry maven-sandbox "$key"))"
    else
        if [[ ! -d "$m2/org/apache/flink/flink-runtime/$flink_version" ]]; then
            log "first run downloads ~230 MB of Maven artifacts (Flink $flink_version, Hadoop, RocksDB), takes a few minutes"
        fi
        if [[ ! -d "$m2/org/apache/flink/flink-runtime/$flink2_version" ]]; then
            log "downloading Flink $flink2_version (RocksDB, ForSt) for the 2.x clusters, ~200 MB more"
        fi
        log "building (mvn package), log: $LOGS/maven-build.log"
        local repo_opt=()
        [[ -n "${MAVEN_REPO_LOCAL:-}" ]] && repo_opt=("-Dmaven.repo.local=$MAVEN_REPO_LOCAL")
        if ! (cd "$HERE" && mvn -B -ntp "${repo_opt[@]}" package -DskipTests >"$LOGS/maven-build.log" 2>&1); then
            tail -40 "$LOGS/maven-build.log" >&2
            die "maven build failed, see $LOGS/maven-build.log"
        fi
        cache_put maven-sandbox "$key" "$HERE" "${BUILD_OUTPUTS[@]}"
    fi
    local peers_jar="$HERE/peers/target/peers-0.1.0.jar"
    local sample_jar="$HERE/sample-job/target/sample-job-0.1.0.jar"
    local peers2_jar="$HERE/peers-flink2/target/peers-flink2-0.1.0.jar"
    local sample2_jar="$HERE/sample-job-flink2/target/sample-job-flink2-0.1.0.jar"
    printf '%s:%s\n' "$peers_jar" "$(cat "$HERE/peers/target/runtime-classpath.txt")" >"$CLASSPATH_FILE.tmp"
    mv "$CLASSPATH_FILE.tmp" "$CLASSPATH_FILE"
    printf '%s:%s\n' "$peers2_jar" "$(cat "$HERE/peers-flink2/target/runtime-classpath.txt")" >"$CLASSPATH_FILE_FLINK2.tmp"
    mv "$CLASSPATH_FILE_FLINK2.tmp" "$CLASSPATH_FILE_FLINK2"
    cat >"$BUILD_ENV" <<EOF
FLINK_VERSION=$flink_version
SAMPLE_JAR=$sample_jar
PEERS_JAR=$peers_jar
FLINK_VERSION_2=$flink2_version
SAMPLE_JAR_2=$sample2_jar
PEERS_JAR_2=$peers2_jar
EOF
    echo "$digest" >"$BUILD_STAMP"
    log "ready in $((SECONDS - start)) s; classpath: $CLASSPATH_FILE"
}

# ---------------------------------------------------------------- processes

# pid of a peer if its pid file names a live JVM of ours, else nothing.
peer_pid() {
    local name="$1" pidfile="$JAVA_STATE/$1.pid" pid
    [[ -f "$pidfile" ]] || return 0
    pid="$(cat "$pidfile")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$MARKER -Dflinkmaint.sandbox.peer=$name "; then
        echo "$pid"
    fi
}

# Every live JVM carrying our marker, whatever its pid file says.
marked_pids() {
    local f pid
    for f in /proc/[0-9]*/cmdline; do
        pid="${f#/proc/}"; pid="${pid%/cmdline}"
        [[ "$pid" == "$$" ]] && continue
        if tr '\0' ' ' 2>/dev/null <"$f" | grep -qF -- "$MARKER -Dflinkmaint.sandbox.peer="; then
            echo "$pid"
        fi
    done
}

stop_pid() {
    local pid="$1" what="$2" i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || { log "stopped $what (pid $pid)"; return 0; }
        sleep 0.1
    done
    log "$what (pid $pid) ignored SIGTERM for 30 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
}

stop_peer() {
    local name="$1" pid
    pid="$(peer_pid "$name")"
    [[ -n "$pid" ]] && stop_pid "$pid" "$name"
    rm -f "$JAVA_STATE/$name.pid" "$JAVA_STATE/$name.ready"
}

# start_peer NAME MAIN_CLASS HEAP CLASSPATH_FILE -- ARGS...
start_peer() {
    local name="$1" main="$2" heap="$3" cpfile="$4"
    shift 5
    local logfile="$LOGS/$name.log"
    [[ -f "$logfile" ]] && mv -f "$logfile" "$logfile.1"
    # setsid: the JVM outlives this script and its caller's process group (go test, make).
    setsid "$JAVA_BIN" "$MARKER" "-Dflinkmaint.sandbox.peer=$name" \
        "@$HERE/conf/jvm-opts.txt" "${PEER_JVM_OPTS[@]}" \
        -Xms64m "-Xmx$heap" -XX:+UseSerialGC -XX:MaxMetaspaceSize=256m -Xss512k \
        "-Dlog4j2.configurationFile=$HERE/conf/log4j2-server.properties" \
        "-Djava.io.tmpdir=$JAVA_STATE/tmp" \
        -cp "$(cat "$cpfile")" "$main" "$@" \
        </dev/null >"$logfile" 2>&1 9>&- &
    echo $! >"$JAVA_STATE/$name.pid"
}

# wait_ready NAME SECONDS: waits for NAME's ready file; fails with the log tail if the JVM dies.
wait_ready() {
    local name="$1" timeout="$2" i pid
    for ((i = 0; i < timeout * 5; i++)); do
        [[ -f "$JAVA_STATE/$name.ready" ]] && return 0
        # Not peer_pid: right after the fork the command line is not yet the JVM's.
        pid="$(cat "$JAVA_STATE/$name.pid" 2>/dev/null || true)"
        if [[ -z "$pid" ]] || ! kill -0 "$pid" 2>/dev/null; then
            tail -40 "$LOGS/$name.log" >&2 || true
            die "$name exited during start, see $LOGS/$name.log"
        fi
        sleep 0.2
    done
    tail -40 "$LOGS/$name.log" >&2 || true
    die "$name not ready after ${timeout}s, see $LOGS/$name.log"
}

env_value() { sed -n "s/^$2=//p" "$1" 2>/dev/null | head -1; }

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

rest_answers() { curl -fsS --max-time 5 "$1/overview" >/dev/null 2>&1; }

# The REST endpoint answers 503 until the HA leader election has settled. After a crash that
# takes until ZooKeeper expires the dead JobManager's session (60 s by default).
REST_WAIT_SECONDS=150
wait_rest() {
    local i
    for ((i = 0; i < REST_WAIT_SECONDS * 2; i++)); do
        rest_answers "$1" && return 0
        sleep 0.5
    done
    return 1
}

storage_healthy() {
    local ready="$JAVA_STATE/storage.ready"
    [[ -n "$(peer_pid storage)" && -f "$ready" ]] || return 1
    tcp_open "$(env_value "$ready" NAMENODE_PORT)" && tcp_open "$(env_value "$ready" ZOOKEEPER_PORT)"
}

# A cluster is reusable if it answers, runs the current build and its config (which names the
# running storage JVM's ports) is the one generated now in conf.next.
cluster_healthy() {
    local id="$1"
    local ready="$JAVA_STATE/$id.ready"
    [[ -n "$(peer_pid "$id")" && -f "$ready" ]] || return 1
    [[ "$JAVA_STATE/$id.pid" -nt "$BUILD_STAMP" ]] || return 1
    same_conf "$JAVA_STATE/$id/conf/config.yaml" "$JAVA_STATE/$id/conf.next/config.yaml" || return 1
    rest_answers "$(env_value "$ready" REST_URL)"
}

# Two cluster configs are the same but for rest.bind-port: a cluster started on any free port
# and the one generated afterwards with that port pinned are the same cluster.
same_conf() {
    cmp -s <(grep -v '^rest.bind-port:' "$1") <(grep -v '^rest.bind-port:' "$2")
}

# rest_port ID: the REST port the cluster had against the running storage JVM (kept in
# <id>/rest-port with that JVM's pid), so a cluster restarted after a crash answers where
# peers.json and every client already point. Empty for a fresh storage JVM, or when another
# process took the port meanwhile (the cluster then starts on a new one, said in the log).
rest_port() {
    local file="$JAVA_STATE/$1/rest-port" port pid
    [[ -f "$file" ]] || return 0
    read -r port pid <"$file" || return 0
    [[ "$port" =~ ^[0-9]+$ && "$pid" == "$(env_value "$JAVA_STATE/storage.ready" PID)" ]] || return 0
    if [[ -z "$(peer_pid "$1")" ]] && tcp_open "$port"; then
        log "$1: its REST port $port is taken by another process; it starts on a new port"
        return 0
    fi
    echo "$port"
}

# remember_rest_port ID: records the port of a cluster that answers (see rest_port).
remember_rest_port() {
    local url port
    url="$(env_value "$JAVA_STATE/$1.ready" REST_URL)"
    port="${url##*:}"
    [[ "$port" =~ ^[0-9]+$ ]] || die "$1 ready file names REST_URL '$url' without a port"
    printf '%s %s\n' "$port" "$(env_value "$JAVA_STATE/storage.ready" PID)" >"$JAVA_STATE/$1/rest-port"
}

# write_cluster_conf ID TENANT TENANT_ROOT_URI ZOOKEEPER_PORT [HA_CLUSTER_ID [ZK_SESSION_MS]]
write_cluster_conf() {
    local id="$1" tenant="$2" root="$3" zk="$4" ha_id="${5:-$1}" zk_session="${6:-}"
    local dir="$JAVA_STATE/$id" port
    mkdir -p "$dir/conf" "$dir/conf.next" "$dir/tmp" "$dir/web-upload"
    port="$(rest_port "$id")"
    cat >"$dir/conf.next/config.yaml" <<EOF
# Generated by sandbox/java/run.sh for $id (tenant $tenant); rewritten on every start.
# Storage JVM pid $(env_value "$JAVA_STATE/storage.ready" PID) (a new storage JVM means fresh HDFS/ZooKeeper and a restart here).
high-availability.type: zookeeper
high-availability.zookeeper.quorum: "127.0.0.1:$zk"
high-availability.zookeeper.path.root: /flink
high-availability.cluster-id: $ha_id
high-availability.storageDir: "$root/ha"
state.backend.type: rocksdb
execution.checkpointing.incremental: true
# 1.20 names of state.checkpoints.dir, state.savepoints.dir, state.checkpoints.num-retained.
execution.checkpointing.dir: "$root/checkpoints"
execution.checkpointing.savepoint-dir: "$root/savepoints"
execution.checkpointing.num-retained: 3
execution.checkpointing.interval: 2s
execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION
# A task that does not cancel within this fails its TaskManager (the cluster then starts a new
# one); the default 180 s would keep a hung task's slot, and its test, waiting 3 minutes.
task.cancellation.timeout: 60000
# The JobManager fetches TaskManager metrics every 10 s by default; a health gate's metric
# check waits that long for a job that has just started. 2 s (ms: both lines parse it).
metrics.fetcher.update-interval: 2000
restart-strategy.type: fixed-delay
restart-strategy.fixed-delay.attempts: 3
restart-strategy.fixed-delay.delay: 2s
taskmanager.numberOfTaskSlots: $TASK_SLOTS
parallelism.default: 1
# RocksDB takes its memtables and block cache from managed memory, per slot. Its default
# 64 MB write buffer (8 MB arena blocks) does not fit a small slot's share and makes every
# put flush a tiny memtable, stalling writes; 4 MB buffers do fit (24 MB a slot with 16 slots).
taskmanager.memory.managed.size: 384m
state.backend.rocksdb.writebuffer.size: 4mb
state.backend.rocksdb.writebuffer.count: 2
taskmanager.memory.network.min: 64m
taskmanager.memory.network.max: 64m
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.bind-port: "${port:-0}"
jobmanager.rpc.address: 127.0.0.1
jobmanager.bind-host: 127.0.0.1
taskmanager.host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
blob.server.port: "0"
web.submit.enable: true
web.cancel.enable: true
web.upload.dir: "$dir/web-upload"
io.tmp.dirs: "$dir/tmp"
classloader.check-leaked-classloader: false
web.log.path: "$LOGS/$id.log"
EOF
    if [[ -n "$zk_session" ]]; then
        printf 'high-availability.zookeeper.client.session-timeout: %s\n' "$zk_session" >>"$dir/conf.next/config.yaml"
    fi
}

json_str() { local s="${1//\\/\\\\}"; s="${s//\"/\\\"}"; printf '"%s"' "$s"; }

write_peers_json() {
    local nn zk user sample_jar i id tenant line root rest sep
    nn="$(env_value "$JAVA_STATE/storage.ready" NAMENODE_PORT)"
    zk="$(env_value "$JAVA_STATE/storage.ready" ZOOKEEPER_PORT)"
    user="$(env_value "$JAVA_STATE/storage.ready" HDFS_USER)"
    sample_jar="$(env_value "$BUILD_ENV" SAMPLE_JAR)"
    {
        printf '{\n  "hdfs": {"uri": %s, "namenode": %s, "user": %s},\n' \
            "$(json_str "hdfs://127.0.0.1:$nn")" "$(json_str "127.0.0.1:$nn")" "$(json_str "$user")"
        printf '  "zookeeper": %s,\n  "tenants": [\n' "$(json_str "127.0.0.1:$zk")"
        sep=""
        for tenant in "${TENANTS[@]}"; do
            printf '%s    {"name": %s, "root": %s, "namespaceQuota": %s}' "$sep" \
                "$(json_str "$tenant")" "$(json_str "/user/app/$tenant")" "$NAMESPACE_QUOTA"
            sep=$',\n'
        done
        printf '\n  ],\n  "clusters": [\n'
        sep=""
        for i in "${CLUSTERS[@]}"; do
            id="$(cluster_field "$i" 1)"; tenant="$(cluster_field "$i" 2)"; line="$(cluster_field "$i" 3)"
            root="hdfs://127.0.0.1:$nn/user/app/$tenant"
            rest="$(env_value "$JAVA_STATE/$id.ready" REST_URL)"
            printf '%s    {"clusterId": %s, "tenant": %s, "restUrl": %s, "checkpointDir": %s, "savepointDir": %s, "haStorageDir": %s, "flinkVersion": %s, "sampleJobJar": %s, "javaClasspathFile": %s}' \
                "$sep" "$(json_str "$id")" "$(json_str "$tenant")" "$(json_str "$rest")" \
                "$(json_str "$root/checkpoints")" "$(json_str "$root/savepoints")" "$(json_str "$root/ha")" \
                "$(json_str "$(line_version "$line")")" "$(json_str "$(line_sample_jar "$line")")" \
                "$(json_str "$(line_classpath "$line")")"
            sep=$',\n'
        done
        printf '\n  ],\n  "sampleJob": {"jar": %s, "entryClass": %s},\n' "$(json_str "$sample_jar")" "$(json_str "$SAMPLE_ENTRY")"
        printf '  "javaClasspathFile": %s,\n  "logDir": %s\n}\n' "$(json_str "$CLASSPATH_FILE")" "$(json_str "$LOGS")"
    } >"$PEERS_JSON.tmp"
    mv "$PEERS_JSON.tmp" "$PEERS_JSON"
}

cmd_up() {
    local start=$SECONDS
    take_lock
    cmd_build
    mkdir -p "$JAVA_STATE/tmp" "$LOGS"

    if storage_healthy && [[ "$JAVA_STATE/storage.pid" -nt "$BUILD_STAMP" ]]; then
        log "reusing storage peers (pid $(peer_pid storage))"
    else
        log "starting storage peers (HDFS + ZooKeeper), log: $LOGS/storage.log"
        for i in "${CLUSTERS[@]}"; do stop_peer "$(cluster_field "$i" 1)"; done
        stop_peer "$FAILOVER"
        rm -f "$FAILOVER_JSON"
        stop_peer "$SECURE_FLINK"
        rm -f "$SECURE_FLINK_JSON"
        stop_peer "$DRILL2"
        rm -f "$DRILL2_JSON"
        stop_peer storage
        local tenant_args=()
        for tenant in "${TENANTS[@]}"; do tenant_args+=(--tenant "$tenant"); done
        start_peer storage "$STORAGE_MAIN" "$STORAGE_HEAP" "$CLASSPATH_FILE" -- \
            --data-dir "$JAVA_STATE/storage-data" --ready-file "$JAVA_STATE/storage.ready" \
            --namenode-port "${FLINKMAINT_NAMENODE_PORT:-0}" --zookeeper-port "${FLINKMAINT_ZOOKEEPER_PORT:-0}" \
            --namespace-quota "$NAMESPACE_QUOTA" "${tenant_args[@]}"
        wait_ready storage 180
        storage_healthy || die "storage peers wrote their ready file but do not answer, see $LOGS/storage.log"
    fi
    local nn zk
    nn="$(env_value "$JAVA_STATE/storage.ready" NAMENODE_PORT)"
    zk="$(env_value "$JAVA_STATE/storage.ready" ZOOKEEPER_PORT)"

    local started=()
    for i in "${CLUSTERS[@]}"; do
        local id tenant line
        id="$(cluster_field "$i" 1)"; tenant="$(cluster_field "$i" 2)"; line="$(cluster_field "$i" 3)"
        write_cluster_conf "$id" "$tenant" "hdfs://127.0.0.1:$nn/user/app/$tenant" "$zk"
        if cluster_healthy "$id"; then
            log "reusing $id (pid $(peer_pid "$id"))"
            remember_rest_port "$id"
            continue
        fi
        stop_peer "$id"
        cp "$JAVA_STATE/$id/conf.next/config.yaml" "$JAVA_STATE/$id/conf/config.yaml"
        log "starting $id (tenant $tenant, Flink $(line_version "$line")), log: $LOGS/$id.log"
        start_peer "$id" "$CLUSTER_MAIN" 640m "$(line_classpath "$line")" -- \
            --conf-dir "$JAVA_STATE/$id/conf" --ready-file "$JAVA_STATE/$id.ready"
        started+=("$id")
    done
    for id in "${started[@]}"; do
        wait_ready "$id" 240
        local rest
        rest="$(env_value "$JAVA_STATE/$id.ready" REST_URL)"
        wait_rest "$rest" || die "$id REST endpoint $rest does not answer within $REST_WAIT_SECONDS s, see $LOGS/$id.log"
        remember_rest_port "$id"
    done

    write_peers_json
    log "up in $((SECONDS - start)) s"
    cmd_status
}

cmd_down() {
    take_lock
    for i in "${CLUSTERS[@]}"; do stop_peer "$(cluster_field "$i" 1)"; done
    stop_peer "$FAILOVER"
    rm -f "$FAILOVER_JSON"
    stop_peer "$SECURE_FLINK"
    rm -f "$SECURE_FLINK_JSON"
    stop_peer "$DRILL2"
    rm -f "$DRILL2_JSON"
    stop_peer "$SSL"
    rm -f "$SSL_JSON"
    stop_peer storage
    stop_peer secure-storage
    rm -f "$SECURE_JSON"
    # Anything of ours left behind (a lost pid file), found by its marker.
    local pid
    for pid in $(marked_pids); do stop_pid "$pid" "leftover sandbox JVM"; done
    rm -f "$PEERS_JSON"
    local left
    left="$(marked_pids)"
    [[ -z "$left" ]] || die "sandbox JVMs still running: $left"
    log "down; no sandbox JVM runs (logs kept in $LOGS)"
}

cmd_status() {
    local pid ready
    pid="$(peer_pid storage)"
    if [[ -n "$pid" && ! -f "$JAVA_STATE/storage.ready" ]]; then
        printf 'storage    starting pid %s\n' "$pid"
    elif [[ -n "$pid" ]]; then
        ready="$JAVA_STATE/storage.ready"
        printf 'storage    running pid %-7s hdfs://127.0.0.1:%s (user %s)  zookeeper 127.0.0.1:%s\n' "$pid" \
            "$(env_value "$ready" NAMENODE_PORT)" "$(env_value "$ready" HDFS_USER)" "$(env_value "$ready" ZOOKEEPER_PORT)"
    else
        printf 'storage    stopped\n'
    fi
    for i in "${CLUSTERS[@]}"; do
        local id
        id="$(cluster_field "$i" 1)"
        pid="$(peer_pid "$id")"
        if [[ -n "$pid" && ! -f "$JAVA_STATE/$id.ready" ]]; then
            printf '%-10s starting pid %s\n' "$id" "$pid"
        elif [[ -n "$pid" ]]; then
            printf '%-10s running pid %-7s %s (tenant %s)\n' "$id" "$pid" "$(env_value "$JAVA_STATE/$id.ready" REST_URL)" "$(cluster_field "$i" 2)"
        else
            printf '%-10s stopped\n' "$id"
        fi
    done
    [[ -f "$PEERS_JSON" ]] && printf 'peers.json %s\n' "$PEERS_JSON"
    return 0
}

# ---------------------------------------------------------------- secure storage (opt-in)

secure_healthy() {
    local ready="$JAVA_STATE/secure-storage.ready"
    [[ -n "$(peer_pid secure-storage)" && -f "$ready" ]] || return 1
    [[ "$JAVA_STATE/secure-storage.pid" -nt "$BUILD_STAMP" ]] || return 1
    local addr
    for addr in "$(env_value "$ready" NN1_ADDRESS)" "$(env_value "$ready" NN2_ADDRESS)" "$(env_value "$ready" KDC_ADDRESS)"; do
        tcp_open "${addr##*:}" || return 1
    done
    curl -fsS --max-time 5 "$(env_value "$ready" CONTROL_URL)/state" >/dev/null 2>&1
}

write_secure_json() {
    local r="$JAVA_STATE/secure-storage.ready" tenant sep u
    {
        printf '{\n  "nameservice": %s,\n  "uri": %s,\n' "$(json_str "$(env_value "$r" NAMESERVICE)")" \
            "$(json_str "hdfs://$(env_value "$r" NAMESERVICE)")"
        printf '  "namenodes": [%s, %s],\n' "$(json_str "$(env_value "$r" NN1_ADDRESS)")" "$(json_str "$(env_value "$r" NN2_ADDRESS)")"
        printf '  "controlUrl": %s,\n  "realm": %s,\n  "kdc": %s,\n' "$(json_str "$(env_value "$r" CONTROL_URL)")" \
            "$(json_str "$(env_value "$r" REALM)")" "$(json_str "$(env_value "$r" KDC_ADDRESS)")"
        printf '  "krb5Conf": %s,\n  "hadoopConfDir": %s,\n' "$(json_str "$(env_value "$r" KRB5_CONF)")" \
            "$(json_str "$(env_value "$r" HADOOP_CONF_DIR)")"
        printf '  "servicePrincipal": %s,\n' "$(json_str "$(env_value "$r" SERVICE_PRINCIPAL)")"
        printf '  "ticketLifetimeSeconds": %s,\n' "$(env_value "$r" TICKET_LIFETIME_SECONDS)"
        printf '  "rpcProtection": %s,\n  "dataTransferProtection": %s,\n' "$(json_str "$(env_value "$r" RPC_PROTECTION)")" \
            "$(json_str "$(env_value "$r" DATA_TRANSFER_PROTECTION)")"
        printf '  "principals": {\n'
        sep=""
        for u in worker:FLINKMAINT flink:FLINK denied:INTRUDER service:SERVICE; do
            printf '%s    %s: {"principal": %s, "keytab": %s}' "$sep" "$(json_str "${u%%:*}")" \
                "$(json_str "$(env_value "$r" "${u##*:}_PRINCIPAL")")" "$(json_str "$(env_value "$r" "${u##*:}_KEYTAB")")"
            sep=$',\n'
        done
        printf '\n  },\n  "tenants": [\n'
        sep=""
        for tenant in "${TENANTS[@]}"; do
            printf '%s    {"name": %s, "root": %s, "namespaceQuota": %s}' "$sep" \
                "$(json_str "$tenant")" "$(json_str "/user/app/$tenant")" "$NAMESPACE_QUOTA"
            sep=$',\n'
        done
        printf '\n  ],\n  "javaClasspathFile": %s,\n  "logDir": %s\n}\n' "$(json_str "$CLASSPATH_FILE")" "$(json_str "$LOGS")"
    } >"$SECURE_JSON.tmp"
    mv "$SECURE_JSON.tmp" "$SECURE_JSON"
}

cmd_secure_up() {
    local start=$SECONDS
    take_lock
    cmd_build
    mkdir -p "$JAVA_STATE/tmp" "$LOGS"
    if secure_healthy; then
        log "reusing secure storage peers (pid $(peer_pid secure-storage))"
    else
        log "starting secure storage peers (KDC + kerberized HA HDFS), log: $LOGS/secure-storage.log"
        stop_peer "$SECURE_FLINK"
        rm -f "$SECURE_FLINK_JSON"
        stop_peer secure-storage
        rm -f "$SECURE_JSON"
        local tenant_args=()
        for tenant in "${TENANTS[@]}"; do tenant_args+=(--tenant "$tenant"); done
        start_peer secure-storage "$SECURE_MAIN" 640m "$CLASSPATH_FILE" -- \
            --work-dir "$SECURE_DIR" --ready-file "$JAVA_STATE/secure-storage.ready" \
            --namespace-quota "$NAMESPACE_QUOTA" --ticket-lifetime "$SECURE_TICKET_LIFETIME" \
            --rpc-protection "$SECURE_RPC_PROTECTION" --data-transfer-protection "$SECURE_DATA_PROTECTION" \
            "${tenant_args[@]}"
        wait_ready secure-storage 240
        secure_healthy || die "secure storage peers wrote their ready file but do not answer, see $LOGS/secure-storage.log"
    fi
    write_secure_json
    log "secure storage up in $((SECONDS - start)) s"
    cmd_secure_status
}

cmd_secure_down() {
    take_lock
    stop_peer "$SECURE_FLINK"
    rm -f "$SECURE_FLINK_JSON"
    stop_peer secure-storage
    rm -f "$SECURE_JSON"
}

cmd_secure_status() {
    local pid r
    pid="$(peer_pid secure-storage)"
    r="$JAVA_STATE/secure-storage.ready"
    if [[ -n "$pid" && ! -f "$r" ]]; then
        printf 'secure     starting pid %s\n' "$pid"
    elif [[ -n "$pid" ]]; then
        printf 'secure     running pid %-7s hdfs://%s (%s, %s) realm %s kdc %s control %s\n' "$pid" \
            "$(env_value "$r" NAMESERVICE)" "$(env_value "$r" NN1_ADDRESS)" "$(env_value "$r" NN2_ADDRESS)" \
            "$(env_value "$r" REALM)" "$(env_value "$r" KDC_ADDRESS)" "$(env_value "$r" CONTROL_URL)"
    else
        printf 'secure     stopped\n'
    fi
    [[ -f "$SECURE_JSON" ]] && printf 'secure.json %s\n' "$SECURE_JSON"
    return 0
}

# ---------------------------------------------------------------- failover cluster (opt-in)

failover_ha_id() { env_value "$JAVA_STATE/$FAILOVER/ha-cluster-id" ID; }

# write_single_cluster_json ID TENANT TENANT_ROOT_URI HA_CLUSTER_ID HDFS_USER OUT [LINE [EXTRA]]:
# the description of a cluster started on its own (failover, secure-flink, drill-2, flink-ssl; line
# 1 by default), for tests; EXTRA is more JSON members, each starting with a comma.
write_single_cluster_json() {
    local id="$1" tenant="$2" root="$3" ha_id="$4" user="$5" out="$6" line="${7:-1}" extra="${8:-}" rest pid
    rest="$(env_value "$JAVA_STATE/$id.ready" REST_URL)"
    pid="$(env_value "$JAVA_STATE/$id.ready" PID)"
    {
        printf '{\n  "clusterId": %s, "tenant": %s, "restUrl": %s,\n' "$(json_str "$ha_id")" \
            "$(json_str "$tenant")" "$(json_str "$rest")"
        printf '  "checkpointDir": %s, "savepointDir": %s, "haStorageDir": %s,\n' \
            "$(json_str "$root/checkpoints")" "$(json_str "$root/savepoints")" "$(json_str "$root/ha")"
        printf '  "flinkVersion": %s, "sampleJobJar": %s, "javaClasspathFile": %s,\n' \
            "$(json_str "$(line_version "$line")")" "$(json_str "$(line_sample_jar "$line")")" "$(json_str "$(line_classpath "$line")")"
        printf '  "pid": %s, "hdfsUser": %s, "log": %s%s\n}\n' "$pid" "$(json_str "$user")" "$(json_str "$LOGS/$id.log")" "$extra"
    } >"$out.tmp"
    mv "$out.tmp" "$out"
}

write_failover_json() {
    write_single_cluster_json "$FAILOVER" "$FAILOVER_TENANT" \
        "hdfs://127.0.0.1:$(env_value "$JAVA_STATE/storage.ready" NAMENODE_PORT)/user/app/$FAILOVER_TENANT" \
        "$(failover_ha_id)" "$(env_value "$JAVA_STATE/storage.ready" HDFS_USER)" "$FAILOVER_JSON"
}

# start_failover: starts the failover JVM with the conf in place and waits until REST answers.
start_failover() {
    # Keep the logs of the last starts (a test kills and restarts it; each
    # start would otherwise rotate away the log of the crash before).
    if [[ -f "$LOGS/$FAILOVER.log" ]]; then
        mv -f "$LOGS/$FAILOVER.log" "$LOGS/$FAILOVER.$(date +%Y%m%dT%H%M%S.%N).log"
    fi
    # find, not ls: no such log yet (a fresh clone) is no error under pipefail.
    find "$LOGS" -maxdepth 1 -name "$FAILOVER.2*.log" -printf '%T@ %p\n' | sort -rn | tail -n +41 | cut -d' ' -f2- | xargs -r rm -f
    log "starting $FAILOVER (HA cluster-id $(failover_ha_id), Flink $(line_version 1)), log: $LOGS/$FAILOVER.log"
    start_peer "$FAILOVER" "$CLUSTER_MAIN" 640m "$(line_classpath 1)" -- \
        --conf-dir "$JAVA_STATE/$FAILOVER/conf" --ready-file "$JAVA_STATE/$FAILOVER.ready"
    wait_ready "$FAILOVER" 240
    local rest
    rest="$(env_value "$JAVA_STATE/$FAILOVER.ready" REST_URL)"
    wait_rest "$rest" || die "$FAILOVER REST endpoint $rest does not answer within $REST_WAIT_SECONDS s, see $LOGS/$FAILOVER.log"
    remember_rest_port "$FAILOVER"
    write_failover_json
}

failover_conf() {
    write_cluster_conf "$FAILOVER" "$FAILOVER_TENANT" \
        "hdfs://127.0.0.1:$(env_value "$JAVA_STATE/storage.ready" NAMENODE_PORT)/user/app/$FAILOVER_TENANT" \
        "$(env_value "$JAVA_STATE/storage.ready" ZOOKEEPER_PORT)" "$(failover_ha_id)" "$FAILOVER_ZK_SESSION_MS"
    cp "$JAVA_STATE/$FAILOVER/conf.next/config.yaml" "$JAVA_STATE/$FAILOVER/conf/config.yaml"
}

cmd_failover_up() {
    local start=$SECONDS
    take_lock
    storage_healthy || die "storage peers do not run: run '$0 up' first"
    [[ "$JAVA_STATE/storage.pid" -nt "$BUILD_STAMP" ]] || die "storage peers predate the build: run '$0 up' first"
    stop_peer "$FAILOVER"
    rm -f "$FAILOVER_JSON"
    mkdir -p "$JAVA_STATE/$FAILOVER"
    # The REST port of an earlier failover-up is no one's: a fresh cluster takes a free one.
    rm -f "$JAVA_STATE/$FAILOVER/rest-port"
    printf 'ID=failover-%s-%s\n' "$(date +%s)" "$RANDOM" >"$JAVA_STATE/$FAILOVER/ha-cluster-id"
    failover_conf
    start_failover
    log "$FAILOVER up in $((SECONDS - start)) s"
    cmd_failover_status
}

# No lock: a kill must land at the moment the caller chose, not after another run.sh.
cmd_failover_kill() {
    local pid i
    pid="$(peer_pid "$FAILOVER")"
    [[ -n "$pid" ]] || die "$FAILOVER does not run (no live JVM in $JAVA_STATE/$FAILOVER.pid)"
    kill -KILL "$pid"
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && die "$FAILOVER (pid $pid) still lives 30 s after SIGKILL"
    # The pid file stays: its JVM is gone, so peer_pid no longer names it.
    rm -f "$JAVA_STATE/$FAILOVER.ready"
    log "killed $FAILOVER (pid $pid) with SIGKILL"
}

cmd_failover_restart() {
    local start=$SECONDS want got
    take_lock
    storage_healthy || die "storage peers do not run: run '$0 up' first"
    [[ -f "$JAVA_STATE/$FAILOVER/ha-cluster-id" ]] || die "$FAILOVER was never started: run '$0 failover-up' first"
    [[ -z "$(peer_pid "$FAILOVER")" ]] || die "$FAILOVER still runs (pid $(peer_pid "$FAILOVER")): kill it first"
    want="$(rest_port "$FAILOVER")"
    [[ -n "$want" ]] || die "$FAILOVER has no REST port to keep (another process took it, or the storage JVM restarted)"
    failover_conf
    start_failover
    got="$(env_value "$JAVA_STATE/$FAILOVER.ready" REST_URL)"
    [[ "${got##*:}" == "$want" ]] || die "$FAILOVER restarted on $got, not on its port $want"
    log "$FAILOVER restarted in $((SECONDS - start)) s"
    cmd_failover_status
}

cmd_failover_down() {
    take_lock
    stop_peer "$FAILOVER"
    rm -f "$FAILOVER_JSON"
}

cmd_failover_status() {
    local pid
    pid="$(peer_pid "$FAILOVER")"
    if [[ -n "$pid" && ! -f "$JAVA_STATE/$FAILOVER.ready" ]]; then
        printf 'failover   starting pid %s\n' "$pid"
    elif [[ -n "$pid" ]]; then
        printf 'failover   running pid %-7s %s (HA cluster-id %s)\n' "$pid" "$(env_value "$JAVA_STATE/$FAILOVER.ready" REST_URL)" "$(failover_ha_id)"
    else
        printf 'failover   stopped\n'
    fi
    [[ -f "$FAILOVER_JSON" ]] && printf 'failover.json %s\n' "$FAILOVER_JSON"
    return 0
}

# ---------------------------------------------------------------- Flink 2.3 drill cluster (opt-in)

cmd_drill2_up() {
    local start=$SECONDS root rest
    take_lock
    storage_healthy || die "storage peers do not run: run '$0 up' first"
    [[ "$JAVA_STATE/storage.pid" -nt "$BUILD_STAMP" ]] || die "storage peers predate the build: run '$0 up' first"
    root="hdfs://127.0.0.1:$(env_value "$JAVA_STATE/storage.ready" NAMENODE_PORT)/user/app/$DRILL2"
    write_cluster_conf "$DRILL2" "$DRILL2" "$root" "$(env_value "$JAVA_STATE/storage.ready" ZOOKEEPER_PORT)"
    if cluster_healthy "$DRILL2"; then
        log "reusing $DRILL2 (pid $(peer_pid "$DRILL2"))"
    else
        stop_peer "$DRILL2"
        cp "$JAVA_STATE/$DRILL2/conf.next/config.yaml" "$JAVA_STATE/$DRILL2/conf/config.yaml"
        log "starting $DRILL2 (no tenant, Flink $(line_version 2)), log: $LOGS/$DRILL2.log"
        start_peer "$DRILL2" "$CLUSTER_MAIN" 640m "$(line_classpath 2)" -- \
            --conf-dir "$JAVA_STATE/$DRILL2/conf" --ready-file "$JAVA_STATE/$DRILL2.ready"
        wait_ready "$DRILL2" 240
        rest="$(env_value "$JAVA_STATE/$DRILL2.ready" REST_URL)"
        wait_rest "$rest" || die "$DRILL2 REST endpoint $rest does not answer within $REST_WAIT_SECONDS s, see $LOGS/$DRILL2.log"
        remember_rest_port "$DRILL2"
    fi
    write_single_cluster_json "$DRILL2" "" "$root" "$DRILL2" "$(env_value "$JAVA_STATE/storage.ready" HDFS_USER)" "$DRILL2_JSON" 2
    log "$DRILL2 up in $((SECONDS - start)) s"
}

cmd_drill2_down() {
    take_lock
    stop_peer "$DRILL2"
    rm -f "$DRILL2_JSON"
}

cmd_drill2_status() {
    local pid
    pid="$(peer_pid "$DRILL2")"
    if [[ -n "$pid" ]]; then
        printf 'drill-2    running pid %-7s %s\n' "$pid" "$(env_value "$JAVA_STATE/$DRILL2.ready" REST_URL)"
    else
        printf 'drill-2    stopped\n'
    fi
    return 0
}

# ---------------------------------------------------------------- REST TLS cluster (opt-in)

# ssl_material DIR: the REST identity of the TLS cluster, made once: a self-signed certificate for
# 127.0.0.1/localhost in a PKCS12 keystore, a truststore holding it (the endpoint trusts clients that
# present it, the shared REST certificate Flink's SSL setup guide describes), and PEM copies for Go
# clients: rest.crt (the certificate, to trust and to present) and rest.key. other-ca.crt is an
# unrelated CA certificate that signed none of it.
ssl_material() {
    local dir="$1" pass
    if [[ -s "$dir/rest.keystore.p12" && -s "$dir/rest.truststore.p12" && -s "$dir/rest.crt" && -s "$dir/rest.key" && -s "$dir/other-ca.crt" && -s "$dir/password" ]]; then
        return 0
    fi
    command -v keytool >/dev/null || die "keytool (a JDK) is required to make the TLS cluster's keystore"
    command -v openssl >/dev/null || die "openssl is required to export the TLS cluster's private key as PEM"
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 700 "$dir"
    pass="$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')"
    printf '%s\n' "$pass" >"$dir/password"
    keytool -genkeypair -alias flink.rest -keyalg RSA -keysize 2048 -validity 3650 \
        -dname "CN=flink-ssl.sandbox" -ext "SAN=dns:localhost,ip:127.0.0.1" \
        -keystore "$dir/rest.keystore.p12" -storetype PKCS12 -storepass "$pass" -keypass "$pass" >/dev/null 2>&1 ||
        die "keytool could not make $dir/rest.keystore.p12"
    keytool -exportcert -rfc -alias flink.rest -keystore "$dir/rest.keystore.p12" -storepass "$pass" -file "$dir/rest.crt" >/dev/null 2>&1 ||
        die "keytool could not export $dir/rest.crt"
    keytool -importcert -noprompt -alias flink.rest -file "$dir/rest.crt" \
        -keystore "$dir/rest.truststore.p12" -storetype PKCS12 -storepass "$pass" >/dev/null 2>&1 ||
        die "keytool could not make $dir/rest.truststore.p12"
    openssl pkcs12 -in "$dir/rest.keystore.p12" -passin "pass:$pass" -nocerts -nodes 2>/dev/null |
        openssl pkey -out "$dir/rest.key" 2>/dev/null || die "openssl could not export $dir/rest.key"
    keytool -genkeypair -alias other -keyalg RSA -keysize 2048 -validity 3650 -dname "CN=other-ca.sandbox" \
        -ext "bc:c" -keystore "$dir/other.p12" -storetype PKCS12 -storepass "$pass" -keypass "$pass" >/dev/null 2>&1 &&
        keytool -exportcert -rfc -alias other -keystore "$dir/other.p12" -storepass "$pass" -file "$dir/other-ca.crt" >/dev/null 2>&1 ||
        die "keytool could not make $dir/other-ca.crt"
    chmod 600 "$dir"/*
}

# ssl_rest_answers URL DIR: the TLS cluster's REST endpoint answers a client that presents its
# certificate.
ssl_rest_answers() {
    curl -fsS --max-time 5 --cacert "$2/rest.crt" --cert "$2/rest.crt" --key "$2/rest.key" "$1/overview" >/dev/null 2>&1
}

cmd_ssl_up() {
    local start=$SECONDS root rest dir="$JAVA_STATE/$SSL" ssl="$JAVA_STATE/$SSL/ssl" pass i ready=""
    take_lock
    storage_healthy || die "storage peers do not run: run '$0 up' first"
    [[ "$JAVA_STATE/storage.pid" -nt "$BUILD_STAMP" ]] || die "storage peers predate the build: run '$0 up' first"
    ssl_material "$ssl"
    pass="$(head -1 "$ssl/password")"
    root="hdfs://127.0.0.1:$(env_value "$JAVA_STATE/storage.ready" NAMENODE_PORT)/user/app/$SSL"
    write_cluster_conf "$SSL" "$SSL" "$root" "$(env_value "$JAVA_STATE/storage.ready" ZOOKEEPER_PORT)"
    {
        printf '# REST over TLS only, and only for clients whose certificate the truststore trusts.\n'
        printf 'security.ssl.rest.enabled: true\n'
        printf 'security.ssl.rest.authentication-enabled: true\n'
        printf 'security.ssl.rest.keystore: "%s"\n' "$ssl/rest.keystore.p12"
        printf 'security.ssl.rest.keystore-password: "%s"\n' "$pass"
        printf 'security.ssl.rest.key-password: "%s"\n' "$pass"
        printf 'security.ssl.rest.truststore: "%s"\n' "$ssl/rest.truststore.p12"
        printf 'security.ssl.rest.truststore-password: "%s"\n' "$pass"
    } >>"$dir/conf.next/config.yaml"
    if [[ -n "$(peer_pid "$SSL")" && -f "$JAVA_STATE/$SSL.ready" && "$JAVA_STATE/$SSL.pid" -nt "$BUILD_STAMP" ]] &&
        same_conf "$dir/conf/config.yaml" "$dir/conf.next/config.yaml" &&
        ssl_rest_answers "$(env_value "$JAVA_STATE/$SSL.ready" REST_URL)" "$ssl"; then
        log "reusing $SSL (pid $(peer_pid "$SSL"))"
    else
        stop_peer "$SSL"
        rm -f "$SSL_JSON"
        cp "$dir/conf.next/config.yaml" "$dir/conf/config.yaml"
        log "starting $SSL (REST TLS with client certificates, Flink $(line_version 1)), log: $LOGS/$SSL.log"
        start_peer "$SSL" "$CLUSTER_MAIN" 640m "$(line_classpath 1)" -- \
            --conf-dir "$dir/conf" --ready-file "$JAVA_STATE/$SSL.ready"
        wait_ready "$SSL" 240
        rest="$(env_value "$JAVA_STATE/$SSL.ready" REST_URL)"
        [[ "$rest" == https://* ]] || die "$SSL serves REST at $rest, not https, see $LOGS/$SSL.log"
        for ((i = 0; i < REST_WAIT_SECONDS * 2; i++)); do
            if ssl_rest_answers "$rest" "$ssl"; then
                ready=1
                break
            fi
            sleep 0.5
        done
        [[ -n "$ready" ]] || die "$SSL REST endpoint $rest does not answer a client with its certificate within $REST_WAIT_SECONDS s, see $LOGS/$SSL.log"
        remember_rest_port "$SSL"
    fi
    write_single_cluster_json "$SSL" "$SSL" "$root" "$SSL" "$(env_value "$JAVA_STATE/storage.ready" HDFS_USER)" "$SSL_JSON" 1 \
        "$(printf ',\n  "tls": {"caFile": %s, "certFile": %s, "keyFile": %s, "otherCaFile": %s}' "$(json_str "$ssl/rest.crt")" \
            "$(json_str "$ssl/rest.crt")" "$(json_str "$ssl/rest.key")" "$(json_str "$ssl/other-ca.crt")")"
    log "$SSL up in $((SECONDS - start)) s"
}

cmd_ssl_down() {
    take_lock
    stop_peer "$SSL"
    rm -f "$SSL_JSON"
}

cmd_ssl_status() {
    local pid
    pid="$(peer_pid "$SSL")"
    if [[ -n "$pid" ]]; then
        printf 'flink-ssl  running pid %-7s %s\n' "$pid" "$(env_value "$JAVA_STATE/$SSL.ready" REST_URL)"
    else
        printf 'flink-ssl  stopped\n'
    fi
    return 0
}

# ---------------------------------------------------------------- secure Flink cluster (opt-in)

# secure_flink_reusable: the secure Flink cluster runs, answers, and was started after the
# storage and secure storage JVMs that run now (its ZooKeeper, its HDFS and its KDC).
secure_flink_reusable() {
    local pid_file="$JAVA_STATE/$SECURE_FLINK.pid"
    [[ -n "$(peer_pid "$SECURE_FLINK")" && -f "$JAVA_STATE/$SECURE_FLINK.ready" && -f "$SECURE_FLINK_JSON" ]] || return 1
    [[ "$pid_file" -nt "$JAVA_STATE/storage.pid" && "$pid_file" -nt "$JAVA_STATE/secure-storage.pid" ]] || return 1
    rest_answers "$(env_value "$JAVA_STATE/$SECURE_FLINK.ready" REST_URL)"
}

cmd_secure_flink_up() {
    local start=$SECONDS r="$JAVA_STATE/secure-storage.ready" dir="$JAVA_STATE/$SECURE_FLINK" ha_id root
    take_lock
    storage_healthy || die "storage peers do not run (the cluster's ZooKeeper): run '$0 up' first"
    secure_healthy || die "secure storage peers do not run: run '$0 secure-up' first"
    if secure_flink_reusable; then
        log "reusing $SECURE_FLINK (pid $(peer_pid "$SECURE_FLINK")), started on the running storage peers"
        cmd_secure_flink_status
        return 0
    fi
    stop_peer "$SECURE_FLINK"
    rm -f "$SECURE_FLINK_JSON"
    mkdir -p "$dir"
    # Fresh on every start: the HA data of an earlier start may name files of an earlier secure HDFS.
    rm -f "$dir/rest-port"
    ha_id="secure-flink-$(date +%s)-$RANDOM"
    root="hdfs://$(env_value "$r" NAMESERVICE)/user/app/$SECURE_FLINK_TENANT"
    write_cluster_conf "$SECURE_FLINK" "$SECURE_FLINK_TENANT" "$root" "$(env_value "$JAVA_STATE/storage.ready" ZOOKEEPER_PORT)" "$ha_id"
    cat >>"$dir/conf.next/config.yaml" <<EOF
# Kerberos, as a production JobManager on a kerberized HDFS: log in from the flink principal's
# keytab (the Hadoop client config comes from HADOOP_CONF_DIR, the realm from the JVM's krb5.conf).
security.kerberos.login.keytab: "$(env_value "$r" FLINK_KEYTAB)"
security.kerberos.login.principal: "$(env_value "$r" FLINK_PRINCIPAL)"
security.kerberos.login.use-ticket-cache: false
# One JVM holds JobManager and TaskManager, both logged in: no tokens to hand around.
security.delegation.tokens.enabled: false
# The sandbox ZooKeeper is not kerberized.
zookeeper.sasl.disable: true
# Tickets live minutes here; log in again from the keytab before they run out.
flink.hadoop.hadoop.kerberos.keytab.login.autorenewal.enabled: true
flink.hadoop.hadoop.kerberos.min.seconds.before.relogin: 10
EOF
    cp "$dir/conf.next/config.yaml" "$dir/conf/config.yaml"
    log "starting $SECURE_FLINK (tenant $SECURE_FLINK_TENANT on $root, HA cluster-id $ha_id, Flink $(line_version 1)), log: $LOGS/$SECURE_FLINK.log"
    (
        HADOOP_CONF_DIR="$(env_value "$r" HADOOP_CONF_DIR)"
        export HADOOP_CONF_DIR
        unset HADOOP_USER_NAME
        PEER_JVM_OPTS=("-Djava.security.krb5.conf=$(env_value "$r" KRB5_CONF)")
        start_peer "$SECURE_FLINK" "$CLUSTER_MAIN" 640m "$(line_classpath 1)" -- \
            --conf-dir "$dir/conf" --ready-file "$JAVA_STATE/$SECURE_FLINK.ready"
    )
    wait_ready "$SECURE_FLINK" 240
    local rest
    rest="$(env_value "$JAVA_STATE/$SECURE_FLINK.ready" REST_URL)"
    wait_rest "$rest" || die "$SECURE_FLINK REST endpoint $rest does not answer within $REST_WAIT_SECONDS s, see $LOGS/$SECURE_FLINK.log"
    write_single_cluster_json "$SECURE_FLINK" "$SECURE_FLINK_TENANT" "$root" "$ha_id" flink "$SECURE_FLINK_JSON"
    log "$SECURE_FLINK up in $((SECONDS - start)) s"
    cmd_secure_flink_status
}

cmd_secure_flink_down() {
    take_lock
    stop_peer "$SECURE_FLINK"
    rm -f "$SECURE_FLINK_JSON"
}

cmd_secure_flink_status() {
    local pid
    pid="$(peer_pid "$SECURE_FLINK")"
    if [[ -n "$pid" && ! -f "$JAVA_STATE/$SECURE_FLINK.ready" ]]; then
        printf 'secure-flink starting pid %s\n' "$pid"
    elif [[ -n "$pid" ]]; then
        printf 'secure-flink running pid %-7s %s\n' "$pid" "$(env_value "$JAVA_STATE/$SECURE_FLINK.ready" REST_URL)"
    else
        printf 'secure-flink stopped\n'
    fi
    [[ -f "$SECURE_FLINK_JSON" ]] && printf 'secure-flink.json %s\n' "$SECURE_FLINK_JSON"
    return 0
}

case "${1:-}" in
    build) cmd_build ;;
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status; cmd_secure_status; cmd_failover_status; cmd_secure_flink_status; cmd_drill2_status; cmd_ssl_status ;;
    drill2-up) cmd_drill2_up ;;
    drill2-down) cmd_drill2_down ;;
    ssl-up) cmd_ssl_up ;;
    ssl-down) cmd_ssl_down ;;
    secure-up) cmd_secure_up ;;
    secure-down) cmd_secure_down ;;
    secure-status) cmd_secure_status ;;
    failover-up) cmd_failover_up ;;
    failover-kill) cmd_failover_kill ;;
    failover-restart) cmd_failover_restart ;;
    failover-down) cmd_failover_down ;;
    failover-status) cmd_failover_status ;;
    secure-flink-up) cmd_secure_flink_up ;;
    secure-flink-down) cmd_secure_flink_down ;;
    secure-flink-status) cmd_secure_flink_status ;;
    *) echo "usage: $0 build|up|down|status|secure-up|secure-down|secure-status|failover-up|failover-kill|failover-restart|failover-down|failover-status|secure-flink-up|secure-flink-down|secure-flink-status|drill2-up|drill2-down|ssl-up|ssl-down" >&2; exit 2 ;;
esac
