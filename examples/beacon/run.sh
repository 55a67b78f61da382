#!/usr/bin/env bash
# JaViz's Beacon across four JVMs: a client calls remoteFoo on s1, which forwards
# it to s2, then s3, the termination server. Each JVM records with exact tracing of
# the beacon classes (and of RMI's UnicastRef.invoke / UnicastServerRef.dispatch);
# the recordings are then merged into one session and printed as one tree.
#
#   examples/beacon/run.sh [CALLS]        # from the repository root or anywhere
#
# Ports 47101-47103 on 127.0.0.1 must be free. Output: target/beacon/.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-3}
cargo build -q -p jscope-cli -p jscope-agent
out=target/beacon
rm -rf "$out"
mkdir -p "$out/classes"
javac --release 17 -g -d "$out/classes" examples/beacon/src/beacon/*.java
agent="$PWD/target/debug/libjscope_agent.so"
jscope=target/debug/jscope
trace='beacon.*'
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

# start NAME CLASS ARGS...: one traced JVM in the background, its output in NAME.log.
start() {
    local name=$1
    shift
    java "-agentpath:$agent=remote,trace=$trace,file=$out/$name.jsc${SKEW:+,clockoffset=$SKEW}" \
        -cp "$out/classes" "$@" \
        >"$out/$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        grep -q '^ready' "$out/$name.log" && return
        sleep 0.1
    done
    echo "$name did not start; see $out/$name.log" >&2
    exit 1
}

start s3 beacon.TerminationServer 47103
start s2 beacon.BeaconServer 47102 47103
start s1 beacon.BeaconServer 47101 47102
java "-agentpath:$agent=remote,trace=$trace,file=$out/client.jsc" -cp "$out/classes" \
    beacon.BeaconClient 47101 "$calls"
wait "${pids[@]}"
trap - EXIT

"$jscope" merge "$out/client.jsc" "$out/s1.jsc" "$out/s2.jsc" "$out/s3.jsc" -o "$out/beacon.jss"
echo
"$jscope" tree --distributed "$out/beacon.jss"
