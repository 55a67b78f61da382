#!/usr/bin/env bash
# The request context's cost on the three-JVM framework fixture
# (crates/cli/tests/frameworks_fixtures: an OkHttp client spending 15 ms of CPU
# before each request, a Jetty servlet calling its backend over Apache HttpClient
# 5, a Netty backend; every 20th request takes the servlet's 150 ms heavy branch),
# the three recorded at 100 Hz cpu sampling with `remote=http` (every request is
# captured on both sides, a traceparent goes with it, samples carry the request)
# against the same agent without `remote` (the client's jscope.Span spans are
# recorded in both).
# CPU time (user + sys) of the three JVMs together, the two interleaved (which
# runs first alternates between rounds), REPEAT rounds; median, range and the
# ratio of medians, and the median of the rounds' own ratios with its 95%
# interval, for the whole runs and for the measured phase alone (each
# JVM's process CPU time from its first measured request to the last, as the
# fixtures print it: start-up and warm-up, whose JIT and class loading vary
# from run to run, left out).
#   bash benches/requests_frameworks.sh [REPEAT] [COUNT] [JAVA]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-7}
count=${2:-200}
java=${3:-java}
cargo build --release -q -p jscope-agent
agent=$PWD/target/release/libjscope_agent.so
out=target/bench-requests-frameworks
rm -rf "$out" && mkdir -p "$out/classes"
jars=
for jar in okhttp okio httpclient5 httpcore5 httpcore5-h2 slf4j-api servlet-api \
  jetty9-server jetty9-servlet jetty9-security jetty9-util jetty9-http jetty9-io \
  netty-transport netty-codec-http netty-codec netty-common netty-buffer netty-resolver; do
  [[ -f /usr/share/java/$jar.jar ]] || { echo "missing /usr/share/java/$jar.jar (apt-get install libokhttp-java libhttpclient5-java libjetty9-java libnetty-java)" >&2; exit 1; }
  jars=$jars${jars:+:}/usr/share/java/$jar.jar
done
fixtures=crates/cli/tests/frameworks_fixtures
javac --release 17 -cp "$jars" -d "$out/classes" "$fixtures"/fw/*.java "$fixtures"/jscope/Span.java
cp="$out/classes:$jars"
tp=00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01

ready() { # ready LOG: waits for the JVM's "ready" line
  for _ in $(seq 600); do grep -q '^ready' "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "no ready line in $1" >&2; exit 1
}
run() { # run NAME OPTIONS CLASS ARGS...: one JVM in the background, timed
  local name=$arm-$1 options=$2; shift 2
  rm -f "$out/$name.log"
  /usr/bin/time -f '%U %S' -o "$out/$name.time" \
    "$java" "-agentpath:$agent=$options,file=$out/$name.jsc" -cp "$cp" "$@" > "$out/$name.log" 2>&1 &
}
cpu() { # cpu ARM OPTIONS: CPU seconds of the three JVMs of one run, and each one's
  local arm=$1; shift
  local back=$((20000 + RANDOM % 20000)) front=$((40000 + RANDOM % 20000))
  run back "$1" fw.Backend "$back"; ready "$out/$arm-back.log"
  run front "$1" fw.Front "$front" "$back"; ready "$out/$arm-front.log"
  run client "$1" fw.Client "$front" 40 "$count" "$tp"
  wait
  local phase
  phase=$(cat "$out/$arm"-{client,front,back}.log | awk '$1 == "cpu" {v[$2] += $3} END {printf "%.3f", (v["end"] - v["start"]) / 1e9}')
  cat "$out/$arm"-{client,front,back}.time | awk -v p="$phase" '{c[NR] = $1 + $2; s += c[NR]} END {printf "%.2f %.2f %.2f %.2f %s\n", s, c[1], c[2], c[3], p}'
}
. benches/stats.sh
col() { cut -d' ' -f"$1" "$2"; } # col FIELD FILE: one column of the per-round lines

: > "$out/on.txt"; : > "$out/off.txt"
on() { cpu on "remote=http,interval=10ms,quiet" >> "$out/on.txt"; }
off() { cpu off "interval=10ms,quiet" >> "$out/off.txt"; }
for ((i = 0; i < repeat; i++)); do
  if ((i % 2 == 0)); then on; off; else off; on; fi
done
for jvm in 2:client 3:front 4:back; do
  echo "${jvm#*:}: median $(col "${jvm%%:*}" "$out/on.txt" | median) s CPU with remote=http, $(col "${jvm%%:*}" "$out/off.txt" | median) s without"
done
echo "remote=http (request context): median (range) $(col 1 "$out/on.txt" | stats) s CPU"
echo "no remote:                     median (range) $(col 1 "$out/off.txt" | stats) s CPU"
awk -v a="$(col 1 "$out/on.txt" | median)" -v b="$(col 1 "$out/off.txt" | median)" 'BEGIN {printf "ratio of medians: %.4f\n", a / b}'
echo "measured phase, remote=http: median (range) $(col 5 "$out/on.txt" | stats) s CPU"
echo "measured phase, no remote:   median (range) $(col 5 "$out/off.txt" | stats) s CPU"
awk -v a="$(col 5 "$out/on.txt" | median)" -v b="$(col 5 "$out/off.txt" | median)" 'BEGIN {printf "measured phase, ratio of medians: %.4f\n", a / b}'
# Each round's two runs ran back to back: the ratio within a round leaves out
# the machine's drift between rounds.
paired() { paste -d' ' <(col "$1" "$out/on.txt") <(col "$1" "$out/off.txt") | awk '{printf "%.4f\n", $1 / $2}'; }
echo "per-round ratio, median: $(paired 1 | median_ci)"
echo "measured phase, per-round ratio, median: $(paired 5 | median_ci)"
