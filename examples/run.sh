#!/usr/bin/env bash
# Builds jscope, profiles the bundled example shop for a few seconds in cpu and
# snapshot mode, and shows the result: hot methods, threads, and a flame graph file.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p jscope-cli -p jscope-collector -p jscope-agent
out=target/example
mkdir -p "$out/classes"
javac --release 17 -g -d "$out/classes" examples/src/demo/*.java
jscope=target/release/jscope
"$jscope" record --mode cpu+snapshot --interval 5ms -o "$out/shop.jsc" -- java -cp "$out/classes" demo.Shop 5
echo
"$jscope" info "$out/shop.jsc"
echo
"$jscope" report "$out/shop.jsc" --mode cpu --top 15
echo
"$jscope" threads "$out/shop.jsc" --at 2.5
"$jscope" flame "$out/shop.jsc" --mode cpu -o "$out/shop-flame.html"
"$jscope" callgraph "$out/shop.jsc" --dot > "$out/shop-callgraph.dot"
echo
echo "flame graph:  $out/shop-flame.html (open it in a browser)"
echo "call graph:   $out/shop-callgraph.dot (render with: dot -Tsvg)"
