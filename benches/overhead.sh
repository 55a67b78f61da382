#!/usr/bin/env bash
# Profiler overhead, side by side in one run: the same Java workload without a
# profiler, with jscope in several modes, and with JDK Flight Recorder. Each
# configuration runs REPEAT times, interleaved, and the median elapsed time is
# compared with the baseline's.
#   bash benches/overhead.sh [REPEAT] [JAVA]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}
java=${2:-java}
cargo build --release -q -p jscope-cli -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-overhead
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 17 -d "$out/classes" benches/java/Workload.java

# JFR settings with only the equivalent events (made with `jfr configure --input none`).
jfr=$PWD/benches/jfr
declare -A flags=(
  [baseline]=""
  [jscope-cpu-10ms]="-agentpath:$agent=mode=cpu,interval=10ms,file=$out/cpu10.jsc,quiet"
  [jfr-cpu-10ms]="-XX:StartFlightRecording=settings=$jfr/jfr-cpu.jfc,filename=$out/cpu10.jfr"
  [jscope-cpu-1ms]="-agentpath:$agent=mode=cpu,interval=1ms,file=$out/cpu1.jsc,quiet"
  [jscope-wall-10ms]="-agentpath:$agent=mode=wall,interval=10ms,file=$out/wall10.jsc,quiet"
  [jscope-snapshot-100ms]="-agentpath:$agent=mode=snapshot,interval=100ms,file=$out/snap.jsc,quiet"
  [jscope-events-all]="-agentpath:$agent=events=all,file=$out/events.jsc,quiet"
  [jfr-events]="-XX:StartFlightRecording=settings=$jfr/jfr-events.jfc,filename=$out/events.jfr"
  [jscope-cpu+events]="-agentpath:$agent=mode=cpu,interval=10ms,events=all,file=$out/all.jsc,quiet"
  [jfr-profile]="-XX:StartFlightRecording=settings=profile,filename=$out/profile.jfr"
)
order=(baseline jscope-cpu-10ms jfr-cpu-10ms jscope-cpu-1ms jscope-wall-10ms jscope-snapshot-100ms
       jscope-events-all jfr-events jscope-cpu+events jfr-profile)

for ((i = 0; i < repeat; i++)); do
  for name in "${order[@]}"; do
    # shellcheck disable=SC2086
    ms=$("$java" ${flags[$name]} -cp "$out/classes" Workload 2 300 2>/dev/null | awk '/elapsed_ms/ {print $2}')
    echo "$name $ms" >> "$out/times.txt"
  done
done

. benches/stats.sh
base=$(awk '$1=="baseline" {print $2}' "$out/times.txt" | median)
"$java" -version 2>&1 | head -1
printf '%-24s %10s %8s\n' configuration median_ms ratio
for name in "${order[@]}"; do
  m=$(awk -v n="$name" '$1==n {print $2}' "$out/times.txt" | median)
  printf '%-24s %10s %8.3f\n' "$name" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN {print a / b}')"
done

# A real program: javac (module jdk.compiler) compiling the example programs and some
# test fixtures of this repository, timed from outside (JVM and profiler start-up
# included for all).
if "$java" --list-modules 2>/dev/null | grep -q '^jdk.compiler'; then
  find examples/src examples/beacon/src benches/java crates/agent/tests/http_fixtures \
    crates/cli/tests/events_fixtures crates/cli/tests/trace_fixtures -name '*.java' > "$out/sources.txt"
  : > "$out/javac-times.txt"
  for ((i = 0; i < repeat; i++)); do
    for name in "${order[@]}"; do
      rm -rf "$out/javac-out" && mkdir -p "$out/javac-out"
      t0=$(date +%s%N)
      # shellcheck disable=SC2086
      "$java" ${flags[$name]} -m jdk.compiler/com.sun.tools.javac.Main -nowarn -proc:none \
        -d "$out/javac-out" "@$out/sources.txt" >/dev/null 2>"$out/javac.err" ||
        { echo "javac failed under $name:"; cat "$out/javac.err"; exit 1; }
      echo "$name $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$out/javac-times.txt"
    done
  done
  echo
  echo "javac compiling $(wc -l < "$out/sources.txt") Java files (wall time, start-up included):"
  base=$(awk '$1=="baseline" {print $2}' "$out/javac-times.txt" | median)
  printf '%-24s %10s %8s\n' configuration median_ms ratio
  for name in "${order[@]}"; do
    m=$(awk -v n="$name" '$1==n {print $2}' "$out/javac-times.txt" | median)
    printf '%-24s %10s %8.3f\n' "$name" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN {print a / b}')"
  done
fi
