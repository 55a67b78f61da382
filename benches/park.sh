#!/usr/bin/env bash
# Park events' overhead: a park-heavy workload (benches/java/PingPong.java, threads
# handing a token over through one-slot queues, so every hand-over parks) without a
# profiler, with jscope `events=park` (default 20 ms threshold: nearly every park
# is only counted), with `events=park,parkthreshold=0` (every park recorded with
# its stack), and with JFR recording only jdk.ThreadPark at 20 ms
# (benches/jfr/jfr-park.jfc). Interleaved, REPEAT times each; median elapsed
# time (measured inside the program) and its ratio to the baseline. Then the
# same configurations on `PingPong self SELF`: parks that return at once, so the
# difference per park is the hook's own cost.
#   bash benches/park.sh [REPEAT] [JAVA] [PAIRS] [ROUNDS] [SELF]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}
java=${2:-java}
pairs=${3:-2}
rounds=${4:-100000}
self=${5:-2000000}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-park
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 17 -d "$out/classes" benches/java/PingPong.java

jfr=$PWD/benches/jfr
declare -A flags=(
  [baseline]=""
  [jscope-park-20ms]="-agentpath:$agent=events=park,file=$out/park.jsc,quiet"
  [jscope-park-all]="-agentpath:$agent=events=park,parkthreshold=0,file=$out/park0.jsc,quiet"
  [jfr-park-20ms]="-XX:StartFlightRecording=settings=$jfr/jfr-park.jfc,filename=$out/park.jfr"
)
order=(baseline jscope-park-20ms jscope-park-all jfr-park-20ms)

. benches/stats.sh
# run TITLE FIELD ARGS...: every configuration REPEAT times, interleaved; prints
# the median of the program's FIELD and its ratio to the baseline.
run() {
  local title=$1 field=$2
  local times="$out/times-$field.txt"
  shift 2
  : > "$times"
  for ((i = 0; i < repeat; i++)); do
    for name in "${order[@]}"; do
      # shellcheck disable=SC2086
      v=$("$java" ${flags[$name]} -cp "$out/classes" PingPong "$@" 2>/dev/null |
        awk -v f="$field" '{for (i = 1; i < NF; i++) if ($i == f) print $(i + 1)}')
      echo "$name $v" >> "$times"
    done
  done
  base=$(awk '$1=="baseline" {print $2}' "$times" | median)
  echo "$title, $repeat runs each"
  printf '%-20s %10s %8s %s\n' configuration "median_$field" ratio all
  for name in "${order[@]}"; do
    all=$(awk -v n="$name" '$1==n {print $2}' "$times" | sort -n | paste -sd, -)
    m=$(awk -v n="$name" '$1==n {print $2}' "$times" | median)
    printf '%-20s %10s %8.3f %s\n' "$name" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN {print a / b}')" "$all"
  done
}

"$java" -version 2>&1 | head -1
run "PingPong $pairs pairs x $rounds rounds ($((2 * pairs * rounds)) hand-overs)" elapsed_ms \
  "$pairs" "$rounds"
echo
run "PingPong self $self (parks that do not wait)" ns_per_park self "$self"
