#!/usr/bin/env bash
# Cost of jscope's in-application probes, with the release agent:
#  - one traced call (entry + exit) of an empty method in a tight loop, against the
#    same loop untraced (fixture crates/agent/tests/trace_fixtures/Hot.java), with
#    the share of its events dropped and the probes' waits for the writer
#    (`traceoverflow=wait`, the default: a full ring waits instead of dropping);
#  - one user event (jscope.Events.log) in a tight loop
#    (fixture crates/agent/tests/events_fixtures/UserEvents.java);
#  - the floor under a traced call: the same loop with two minimal C JNI natives
#    (a TSC read and a store each, benches/floor/) around the empty call.
#  - on JDK 25 and later, JFR's jdk.MethodTrace of the same method (stack traces off).
#   bash benches/probes.sh [JAVA] [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
java=${1:-java}
n=${2:-20000000}
cargo build --release -q -p jscope-agent -p jscope-cli
agent=$PWD/target/release/libjscope_agent.so
jscope=$PWD/target/release/jscope
out=target/bench-probes
rm -rf "$out" && mkdir -p "$out/hot" "$out/events"
javac --release 17 -d "$out/hot" crates/agent/tests/trace_fixtures/Hot.java
# The stub jscope/Events is only for compiling; at run time the agent's class is used.
javac --release 17 -d "$out/events" crates/agent/tests/events_fixtures/UserEvents.java \
  crates/agent/tests/events_fixtures/jscope/Events.java
rm -rf "$out/events/jscope"
floor=""
if [[ $(uname -m) == x86_64 ]] && command -v gcc >/dev/null; then
  jdk_include=$(dirname "$(readlink -f "$(command -v javac)")")/../include
  mkdir -p "$out/floor"
  gcc -O2 -shared -fPIC -I"$jdk_include" -I"$jdk_include/linux" benches/floor/floor.c \
    -o "$out/floor/libfloor.so"
  javac --release 17 -d "$out/floor" benches/floor/Floor.java
  floor=$PWD/$out/floor/libfloor.so
fi
"$java" -version 2>&1 | head -1
# JFR's method tracing (jdk.MethodTrace, JDK 25+) of the same empty method, beside
# jscope's probe: stack traces off, as jscope records none; a tenth of the calls
# (it costs an order of magnitude more per call).
major=$("$java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
for i in 1 2 3; do
  plain=$("$java" -cp "$out/hot" Hot "$n" | awk '{print $2}')
  traced=$("$java" "-agentpath:$agent=trace=Hot#empty,quiet,file=$out/hot.jsc" -cp "$out/hot" Hot "$n" | awk '{print $2}')
  dropped=$("$jscope" info "$out/hot.jsc" 2>/dev/null | awk '$1=="trace.events_dropped" {d=$2} $1=="trace.events_written" {w=$2} $1=="trace.waits" {k=$2} $1=="trace.waited_ns" {ns=$2} END {printf "%.2f%% of its events dropped, %d waits for the writer, %.3f s waited", 100 * d / (d + w), k, ns / 1e9}')
  events=$("$java" "-agentpath:$agent=events=user,quiet,file=$out/events.jsc" -cp "$out/events" UserEvents bench 1000000 | awk '/ns-per-event/ {print $2}')
  line="run $i: untraced call ${plain} ns, traced call ${traced} ns (${dropped}), user event ${events} ns"
  if (( ${major%%.*} >= 25 )); then
    jfr=$("$java" "-XX:StartFlightRecording:jdk.MethodTrace#filter=Hot::empty,jdk.MethodTrace#stackTrace=false,filename=$out/hot.jfr" \
      -cp "$out/hot" Hot $((n / 10)) | awk '/ns\/call/ {print $2}')
    line+=", JFR MethodTrace call ${jfr} ns"
  fi
  if [[ -n $floor ]]; then
    line+=", floor $("$java" -cp "$out/floor" Floor "$n" "$floor" 2>/dev/null | awk '{print $2 " ns (JNI transitions alone " $4 " ns)"}')"
  fi
  echo "$line"
done
