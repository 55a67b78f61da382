#!/usr/bin/env bash
# Compiles the framework readers (src/jscope/fw: Java read at the entries of
# the frameworks' HTTP methods, see src/remote/readers.rs) into classes/, which
# the agent embeds. Run it after changing a reader; the agent's `http` tests
# check that classes/ is what these sources compile to.
#   bash crates/agent/java/build.sh [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/classes}
jars=
for jar in servlet-api tomcat10-servlet-api netty-transport netty-codec-http netty-codec \
  netty-common netty-buffer okhttp okio httpcore5; do
  [[ -f /usr/share/java/$jar.jar ]] || {
    echo "missing /usr/share/java/$jar.jar (apt-get install libjetty9-java libtomcat10-java libnetty-java libokhttp-java libhttpclient5-java)" >&2
    exit 1
  }
  jars=$jars${jars:+:}/usr/share/java/$jar.jar
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Tomcat 10's reader is the javax one over jakarta.servlet: made from it here.
sed -e 's/javax\.servlet/jakarta.servlet/g; s/JavaxServlet/JakartaServlet/g' \
  "$here"/src/jscope/fw/JavaxServlet.java > "$tmp"/JakartaServlet.java
javac --release 11 -g:none -nowarn -implicit:none -cp "$jars" -d "$tmp" \
  "$here"/stubs/jscope/Remote.java "$here"/src/jscope/fw/*.java "$tmp"/JakartaServlet.java
mkdir -p "$out"
rm -f "$out"/*.class
cp "$tmp"/jscope/fw/*.class "$out"/
