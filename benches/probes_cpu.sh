#!/usr/bin/env bash
# The CPU time of one traced call (entry + exit of an empty method) for agents
# compared side by side, interleaved: on a shared machine the calling thread's CPU
# time moves far less with the load than the wall time benches/probes.sh reports
# (fixture benches/probes_cpu/HotCpu.java: best of 5 rounds of CALLS calls per run).
# Each AGENT is a libjscope_agent.so (copy one aside before rebuilding); with none,
# the release agent of this tree.
#   bash benches/probes_cpu.sh [-j JAVA] [-r ROUNDS] [-n CALLS] [AGENT...]
set -euo pipefail
cd "$(dirname "$0")/.."
java=java rounds=3 n=4000000
while getopts j:r:n: o; do
  case $o in
    j) java=$OPTARG ;;
    r) rounds=$OPTARG ;;
    n) n=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
cargo build --release -q -p jscope-agent -p jscope-cli
agents=("$@")
[[ ${#agents[@]} -gt 0 ]] || agents=("$PWD/target/release/libjscope_agent.so")
out=target/bench-probes-cpu
rm -rf "$out" && mkdir -p "$out/classes"
javac --release 17 -d "$out/classes" benches/probes_cpu/HotCpu.java
"$java" -version 2>&1 | head -1
for r in $(seq "$rounds"); do
  for a in "${agents[@]}"; do
    line=$("$java" "-agentpath:$(readlink -f "$a")=trace=HotCpu#empty,quiet,file=$out/hot.jsc" \
      -cp "$out/classes" HotCpu "$n" 5)
    dropped=$(target/release/jscope info "$out/hot.jsc" 2>/dev/null |
      awk '$1=="trace.events_dropped" {d=$2} $1=="trace.waits" {k=$2} END {printf "%d dropped, %d waits", d, k}')
    echo "round $r $a: $line ($dropped) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
