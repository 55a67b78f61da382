#!/usr/bin/env bash
# Cost of jscope's in-application probes, with the release agent:
#  - one traced call (entry + exit) of an empty method in a tight loop, against the
#    same loop untraced (fixture crates/agent/tests/trace_fixtures/Hot.java);
#  - one user event (jscope.Events.log) in a tight loop
#    (fixture crates/agent/tests/events_fixtures/UserEvents.java).
#   bash benches/probes.sh [JAVA] [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
java=${1:-java}
n=${2:-20000000}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-probes
rm -rf "$out" && mkdir -p "$out/hot" "$out/events"
javac --release 17 -d "$out/hot" crates/agent/tests/trace_fixtures/Hot.java
# The stub jscope/Events is only for compiling; at run time the agent's class is used.
javac --release 17 -d "$out/events" crates/agent/tests/events_fixtures/UserEvents.java \
  crates/agent/tests/events_fixtures/jscope/Events.java
rm -rf "$out/events/jscope"
"$java" -version 2>&1 | head -1
for i in 1 2 3; do
  plain=$("$java" -cp "$out/hot" Hot "$n" | awk '{print $2}')
  traced=$("$java" "-agentpath:$agent=trace=Hot#empty,quiet,file=$out/hot.jsc" -cp "$out/hot" Hot "$n" | awk '{print $2}')
  events=$("$java" "-agentpath:$agent=events=user,quiet,file=$out/events.jsc" -cp "$out/events" UserEvents bench 1000000 | awk '/ns-per-event/ {print $2}')
  echo "run $i: untraced call ${plain} ns, traced call ${traced} ns, user event ${events} ns"
done
