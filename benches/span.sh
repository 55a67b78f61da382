#!/usr/bin/env bash
# jscope.Span's cost: start + end in a loop (benches/span/SpanBench.java), ns per
# pair, without the agent (the no-op: start returns 0) and, for comparison, with
# the agent recording cpu samples at 10 ms (each pair then opens and ends a
# request). ROUNDS rounds of PAIRS pairs each in one JVM; median and range.
#   bash benches/span.sh [ROUNDS] [PAIRS] [JAVA]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
pairs=${2:-20000000}
java=${3:-java}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-span
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 11 -d "$out/classes" java/jscope/Span.java benches/span/SpanBench.java

summary() { sort -n | awk '{a[NR]=$1} END {m=(NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); printf "median %.2f ns, range %.2f to %.2f (%d rounds)\n", m, a[1], a[NR], NR}'; }

echo "without the agent:"
"$java" -cp "$out/classes" SpanBench "$rounds" "$pairs" | awk '{print $2}' | summary
echo "with the agent (cpu, 10 ms; every pair a request):"
"$java" "-agentpath:$agent=interval=10ms,quiet,file=$out/span.jsc" -cp "$out/classes" \
  SpanBench "$rounds" "$((pairs / 20))" | awk '{print $2}' | summary
