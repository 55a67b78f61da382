#!/usr/bin/env bash
# Overhead of native memory sampling (nativemem) on an allocation-heavy native
# workload (benches/java/nativemem: two threads each running ROUNDS million
# malloc/calloc/realloc/free calls with 4096 blocks kept alive; WORK `compute`
# fills and hashes every byte of each block of 16 B to 1 KiB, as a parser or
# codec would, `touch` fills and reads back blocks of 16 B to 16 KiB, `none`
# leaves the allocator alone, its worst case), without a profiler, with jscope's nativemem at the
# default rate (one sample per 512 KiB), with nativemem and nativelock, and with
# async-profiler's nativemem when ASPROF_LIB names its library, interleaved,
# REPEAT runs each. Prints per configuration the median and range of the
# process's CPU time (user+sys from outside, start-up and profiler threads
# included) and of the elapsed time measured inside the program, with their
# ratios to the baseline, and the load average before and after.
#   bash benches/nativemem.sh [REPEAT] [ROUNDS] [WORK] [JAVA]
#   ASPROF_LIB=/path/to/libasyncProfiler.so bash benches/nativemem.sh 7
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-7}
rounds=${2:-3}
work=${3:-compute}
java=${4:-java}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-nativemem
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 17 -d "$out/classes" benches/java/nativemem/MallocBench.java
include="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")/include"
cc -O2 -shared -fPIC -I"$include" -I"$include/linux" -o "$out/libmallocbench.so" \
  benches/java/nativemem/mallocbench.c

declare -A flags=(
  [baseline]=""
  [jscope-nativemem]="-agentpath:$agent=nativemem,quiet,file=$out/mem.jsc"
  [jscope-nativemem+lock]="-agentpath:$agent=nativemem,nativelock,quiet,file=$out/memlock.jsc"
)
order=(baseline jscope-nativemem jscope-nativemem+lock)
if [ -n "${ASPROF_LIB:-}" ]; then
  flags[async-profiler-nativemem]="-agentpath:$ASPROF_LIB=start,nativemem,file=$out/ap.jfr"
  order+=(async-profiler-nativemem)
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$out/times.txt"
for ((i = 0; i < repeat; i++)); do
  for name in "${order[@]}"; do
    t=$( { TIMEFORMAT='%U %S'; time "$java" ${flags[$name]} -Djava.library.path="$out" \
           -cp "$out/classes" MallocBench 2 "$rounds" "$work" > "$out/run.txt" 2>/dev/null; } 2>&1 )
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
printf '%-26s %-22s %7s %-22s %7s\n' configuration 'cpu ms (range)' ratio 'elapsed ms (range)' ratio
for name in "${order[@]}"; do
  e=$(awk -v n="$name" '$1==n {print $2}' "$out/times.txt")
  c=$(awk -v n="$name" '$1==n {print $3}' "$out/times.txt")
  em=$(echo "$e" | median)
  cm=$(echo "$c" | median)
  printf '%-26s %-22s %7.3f %-22s %7.3f\n' "$name" "$(echo "$c" | stats)" \
    "$(awk -v a="$cm" -v b="$base_cpu" 'BEGIN {print a / b}')" "$(echo "$e" | stats)" \
    "$(awk -v a="$em" -v b="$base" 'BEGIN {print a / b}')"
done
cargo run --release -q -p jscope-cli -- nativemem "$out/mem.jsc" --by function -n 3 2>/dev/null | head -3 || true
