#!/usr/bin/env bash
# How fast the agent's writer thread turns trace events into the recording: the
# tight loop of benches/probes.sh (crates/agent/tests/trace_fixtures/Hot.java,
# twice CALLS calls with its warm-up, two events each) under `perf record -e
# cpu-clock`, and the writer thread's CPU time (its samples) against the events
# it wrote. CPU time, not wall time, so the figure holds on a loaded machine.
# Needs perf (software events suffice). With AGENT libraries named, each run
# measures each of them in turn (interleaved, to compare builds under the same
# load), instead of this checkout's release agent.
#   bash benches/probes_writer.sh [RUNS] [JAVA] [CALLS] [AGENT...]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
java=${2:-java}
n=${3:-20000000}
shift $(($# < 3 ? $# : 3))
command -v perf >/dev/null || { echo "jscope: perf is needed (linux-perf)"; exit 1; }
cargo build --release -q -p jscope-agent -p jscope-cli
agents=("$@")
((${#agents[@]})) || agents=("$PWD/target/release/libjscope_agent.so")
jscope=$PWD/target/release/jscope
out=target/bench-writer
rm -rf "$out" && mkdir -p "$out/hot"
javac --release 17 -d "$out/hot" crates/agent/tests/trace_fixtures/Hot.java
"$java" -version 2>&1 | head -1
hz=1000
for ((i = 1; i <= runs; i++)); do
  for agent in "${agents[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    perf record -q -e cpu-clock -F $hz -o "$out/perf.data" -- \
      "$java" "-agentpath:$agent=trace=Hot#empty,quiet,file=$out/hot.jsc" -cp "$out/hot" Hot "$n" >/dev/null 2>&1
    samples=$(perf report -i "$out/perf.data" --sort comm --stdio -n 2>/dev/null | awk '/jscope-writer/ {print $2}')
    label=""
    ((${#agents[@]} > 1)) && label=" $(basename "$agent")"
    "$jscope" info "$out/hot.jsc" 2>/dev/null | awk -v s="$samples" -v hz=$hz -v i="$i" -v load="$load" -v label="$label" '
      $1 == "trace.events_written" {w = $2} $1 == "trace.events_dropped" {d = $2}
      END {printf "run %d%s: %d events written (%d dropped), writer %.2f s CPU: %.1f M events per writer CPU second (load average %s)\n",
        i, label, w, d, s / hz, w / (s / hz) / 1e6, load}'
  done
done
