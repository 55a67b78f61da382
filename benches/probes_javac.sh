#!/usr/bin/env bash
# Exact tracing of a real program: javac (JDK 25, or JAVA) compiling a package of
# the JDK's own sources (src.zip; java/util/concurrent unless PACKAGE is given)
# into java.base, traced on every method of its own packages
# (`trace=com.sun.tools.javac.*`), against the untraced run and against JFR's
# jdk.MethodTrace of the same classes (JDK 25+; every com.sun.tools.javac class
# named in the filter, stack traces off as jscope records none). Runs are
# interleaved; each traced run must drop no event and write .class files identical
# to the untraced run's. Prints each run, then medians and ranges of the wall and
# CPU (user + system) times and the load average seen.
#   bash benches/probes_javac.sh [REPEAT] [JAVA] [PACKAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
java=${2:-java}
pkg=${3:-java/util/concurrent}
home=$(dirname "$(dirname "$(readlink -f "$(command -v "$java")")")")
major=$("$java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
src_zip=$home/lib/src.zip
[[ -r $src_zip ]] || { echo "jscope: no src.zip beside $java ($src_zip); install the JDK's sources"; exit 1; }
cargo build --release -q -p jscope-agent -p jscope-cli
agent=$PWD/target/release/libjscope_agent.so
jscope=$PWD/target/release/jscope
out=$PWD/target/bench-javac
rm -rf "$out" && mkdir -p "$out/src"
(cd "$out/src" && unzip -q "$src_zip" "java.base/$pkg/*.java" -x "java.base/$pkg/*/*")
find "$out/src/java.base/$pkg" -maxdepth 1 -name '*.java' | sort > "$out/sources.txt"

# JFR's filter names classes (no wildcards): all of jdk.compiler's javac classes.
jfr_flags=""
if ((major >= 25)); then
  filter=$("$home/bin/jimage" list "$home/lib/modules" | awk '
    /^Module:/ {m = $2}
    m == "jdk.compiler" && $1 ~ /^com\/sun\/tools\/javac\/.*\.class$/ {
      c = $1; sub(/\.class$/, "", c); gsub(/\//, ".", c); printf "%s%s", sep, c; sep = ";" }')
  cat > "$out/method-trace.jfc" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="javac MethodTrace">
  <event name="jdk.MethodTrace">
    <setting name="enabled">true</setting>
    <setting name="filter">$filter</setting>
    <setting name="threshold">0 ms</setting>
    <setting name="stackTrace">false</setting>
  </event>
</configuration>
EOF
  jfr_flags="-XX:StartFlightRecording=settings=$out/method-trace.jfc,filename=$out/javac.jfr"
fi

declare -A flags=(
  [untraced]=""
  [jscope]="-agentpath:$agent=trace=com.sun.tools.javac.*,quiet,file=$out/javac.jsc"
  [jfr]="$jfr_flags"
)
order=(untraced jscope)
[[ -n $jfr_flags ]] && order+=(jfr)

"$java" -version 2>&1 | head -1
echo "javac compiling $(wc -l < "$out/sources.txt") files of $pkg (patched into java.base)"
: > "$out/times.txt"
for ((i = 1; i <= repeat; i++)); do
  for name in "${order[@]}"; do
    rm -rf "$out/classes-$name" && mkdir -p "$out/classes-$name"
    load=$(cut -d' ' -f1 /proc/loadavg)
    # shellcheck disable=SC2086
    /usr/bin/time -o "$out/time" -f '%e %U %S' "$java" ${flags[$name]} -m jdk.compiler/com.sun.tools.javac.Main -nowarn -XDignore.symbol.file \
      --patch-module "java.base=$out/src/java.base" -d "$out/classes-$name" "@$out/sources.txt" \
      >/dev/null 2>"$out/javac.err" || { echo "javac failed under $name:"; head "$out/javac.err"; exit 1; }
    read -r wall user sys < "$out/time"
    ms=$(awk -v w="$wall" 'BEGIN {print int(w * 1000)}')
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {print int((u + s) * 1000)}')
    note=""
    if [[ $name != untraced ]]; then
      diff -rq "$out/classes-untraced" "$out/classes-$name" >/dev/null ||
        { echo "run $i: $name wrote other class files than the untraced run"; exit 1; }
      note=", classes identical"
    fi
    if [[ $name == jscope ]]; then
      note+=$("$jscope" info "$out/javac.jsc" 2>/dev/null | awk '
        $1 == "trace.events_written" {w = $2} $1 == "trace.events_dropped" {d = $2}
        $1 == "trace.waits" {k = $2} $1 == "trace.waited_ns" {ns = $2}
        END {printf ", %d events written, %d dropped, %d waits (%.3f s)", w, d, k, ns / 1e9}')
      note+=$(du -m "$out/javac.jsc" | awk '{printf ", %d MB", $1}')
    fi
    if [[ $name == jfr ]]; then
      note+=$("$home/bin/jfr" summary "$out/javac.jfr" | awk '$1 == "jdk.MethodTrace" {printf ", %d MethodTrace events in the file (JFR keeps the last 250 MB)", $2}')
    fi
    echo "run $i: $name ${ms} ms wall, ${cpu} ms CPU (load average $load$note)"
    echo "$name $ms $load $cpu" >> "$out/times.txt"
  done
done

stats() { sort -n | awk '{a[NR] = $1} END {m = (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2); printf "%s %s %s\n", m, a[1], a[NR]}'; }
read -r base _ _ < <(awk '$1 == "untraced" {print $2}' "$out/times.txt" | stats)
read -r cbase _ _ < <(awk '$1 == "untraced" {print $4}' "$out/times.txt" | stats)
printf '%-10s %10s %16s %8s %12s %16s %8s\n' run wall_ms range factor cpu_ms range factor
for name in "${order[@]}"; do
  read -r m lo hi < <(awk -v n="$name" '$1 == n {print $2}' "$out/times.txt" | stats)
  read -r c clo chi < <(awk -v n="$name" '$1 == n {print $4}' "$out/times.txt" | stats)
  printf '%-10s %10s %16s %8.2f %12s %16s %8.2f\n' "$name" "$m" "$lo-$hi" "$(awk -v a="$m" -v b="$base" 'BEGIN {print a / b}')" \
    "$c" "$clo-$chi" "$(awk -v a="$c" -v b="$cbase" 'BEGIN {print a / b}')"
done
read -r lm llo lhi < <(awk '{print $3}' "$out/times.txt" | stats)
echo "load average at the runs' start: median $lm, $llo-$lhi (2 cores)"
