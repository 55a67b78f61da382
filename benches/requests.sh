#!/usr/bin/env bash
# The request context's cost: the JDK HTTP server fixture
# (crates/agent/tests/request_fixtures/Served.java: 2 clients x PER requests, a
# pooled com.sun.net.httpserver, every 20th request spinning 120 ms, the others 3 ms,
# then 12 jscope.Span spans) recorded at 100 Hz cpu sampling with `remote=http`
# (every served request opens a request context, samples carry it) against the
# same agent without `remote` (no request opened for HTTP; the spans still are).
# CPU time (user + sys) of the JVM, the two interleaved, REPEAT rounds; median,
# range and the ratio of medians.
#   bash benches/requests.sh [REPEAT] [PER] [JAVA]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-7}
per=${2:-200}
java=${3:-java}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-requests
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 11 -d "$out/classes" java/jscope/Span.java \
  crates/agent/tests/request_fixtures/Served.java
tp=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01

cpu() { # cpu FLAGS: CPU seconds of one run
  local TIMEFORMAT='%U %S'
  { time "$java" "$1" -cp "$out/classes" Served "$per" "$tp" > /dev/null; } 2>&1 | awk '{print $1 + $2}'
}
summary() { sort -n | awk '{a[NR]=$1} END {m=(NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); printf "%.3f %.3f %.3f\n", m, a[1], a[NR]}'; }

: > "$out/on.txt"; : > "$out/off.txt"
for ((i = 0; i < repeat; i++)); do
  cpu "-agentpath:$agent=remote=http,interval=10ms,quiet,file=$out/on.jsc" >> "$out/on.txt"
  cpu "-agentpath:$agent=interval=10ms,quiet,file=$out/off.jsc" >> "$out/off.txt"
done
read -r on on_lo on_hi < <(summary < "$out/on.txt")
read -r off off_lo off_hi < <(summary < "$out/off.txt")
echo "remote=http (request context): median ${on} s CPU, range ${on_lo} to ${on_hi}"
echo "no remote:                     median ${off} s CPU, range ${off_lo} to ${off_hi}"
awk -v a="$on" -v b="$off" 'BEGIN {printf "ratio of medians: %.4f\n", a / b}'
