#!/usr/bin/env bash
# Overhead of mixed stacks (issue 11): the same Java workload without a profiler,
# with jscope's cpu mode at 100 Hz with mixed stacks (every thread, native and
# kernel frames) walked by DWARF unwind tables (cstack=dwarf, the default) and by
# frame pointers (cstack=fp), and with Java-only stacks (cstack=no), interleaved,
# REPEAT runs each. Prints per configuration the median and range of the elapsed
# time measured inside the program and of the process's CPU time (user+sys from
# outside, profiler threads and start-up included), the load average before and
# after, and what the unwind tables cost at start-up (their header key).
#   bash benches/native.sh [REPEAT] [JAVA]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-7}
java=${2:-java}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-native
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 17 -d "$out/classes" benches/java/Workload.java

declare -A flags=(
  [baseline]=""
  [cpu-10ms-dwarf]="-agentpath:$agent=mode=cpu,interval=10ms,cstack=dwarf,file=$out/dwarf.jsc,quiet"
  [cpu-10ms-fp]="-agentpath:$agent=mode=cpu,interval=10ms,cstack=fp,file=$out/fp.jsc,quiet"
  [cpu-10ms-java-only]="-agentpath:$agent=mode=cpu,interval=10ms,cstack=no,file=$out/java.jsc,quiet"
)
order=(baseline cpu-10ms-dwarf cpu-10ms-fp cpu-10ms-java-only)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$out/times.txt"
for ((i = 0; i < repeat; i++)); do
  for name in "${order[@]}"; do
    t=$( { TIMEFORMAT='%U %S'; time "$java" ${flags[$name]} -cp "$out/classes" Workload 2 300 \
           > "$out/run.txt" 2>/dev/null; } 2>&1 )
    ms=$(awk '/elapsed_ms/ {print $2}' "$out/run.txt")
    cpu=$(echo "$t" | awk '{printf "%d", ($1 + $2) * 1000}')
    echo "$name $ms $cpu" >> "$out/times.txt"
  done
done

. benches/stats.sh
base=$(awk '$1=="baseline" {print $2}' "$out/times.txt" | median)
base_cpu=$(awk '$1=="baseline" {print $3}' "$out/times.txt" | median)
"$java" -version 2>&1 | head -1
echo "load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
cargo run --release -q -p jscope-cli -- info "$out/dwarf.jsc" 2>/dev/null | grep -i 'unwind' || true
printf '%-20s %-22s %7s %-22s %7s\n' configuration 'elapsed ms (range)' ratio 'cpu ms (range)' ratio
for name in "${order[@]}"; do
  e=$(awk -v n="$name" '$1==n {print $2}' "$out/times.txt")
  c=$(awk -v n="$name" '$1==n {print $3}' "$out/times.txt")
  em=$(echo "$e" | median)
  cm=$(echo "$c" | median)
  printf '%-20s %-22s %7.3f %-22s %7.3f\n' "$name" "$(echo "$e" | stats)" \
    "$(awk -v a="$em" -v b="$base" 'BEGIN {print a / b}')" "$(echo "$c" | stats)" \
    "$(awk -v a="$cm" -v b="$base_cpu" 'BEGIN {print a / b}')"
done
