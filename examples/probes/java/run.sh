#!/bin/sh
# Runs a JVM probe: examples/probes/java/run.sh NAME, NAME one of JdkProbe, UrlConnectionProbe,
# Hc4Probe, Hc5Probe, OkHttpProbe. It compiles NAME.java with Protocol.java (javac, once per version, into
# $PROBE_JAVA_CACHE, by default a directory under $TMPDIR) against Debian's jars in
# /usr/share/java (libhttpclient-java, libhttpclient5-java, libokhttp-java, libslf4j-java), then runs it:
#   labrun probe -- examples/probes/java/run.sh OkHttpProbe
set -eu
name=${1:?usage: run.sh JdkProbe|UrlConnectionProbe|Hc4Probe|Hc5Probe|OkHttpProbe}
dir=$(cd "$(dirname "$0")" && pwd)
jars=${PROBE_JARS:-/usr/share/java}
case $name in
  Hc5Probe) cp=$jars/httpclient5.jar:$jars/httpcore5.jar:$jars/httpcore5-h2.jar:$jars/slf4j-api.jar:$jars/slf4j-nop.jar ;;
  Hc4Probe) cp=$jars/httpclient.jar:$jars/httpcore.jar:$jars/commons-logging.jar:$jars/commons-codec.jar ;;
  OkHttpProbe) cp=$jars/okhttp.jar:$jars/okio.jar ;;
  JdkProbe | UrlConnectionProbe) cp=. ;;
  *) echo "run.sh: unknown probe $name" >&2; exit 2 ;;
esac
cache=${PROBE_JAVA_CACHE:-${TMPDIR:-/tmp}/labrun-java-probes-$(id -u)}
# One directory per source version, compiled aside and renamed into place: probes run side by
# side, and a JVM must never load a class another javac is still writing.
sum=$(cat "$dir/Protocol.java" "$dir/$name.java" | cksum | cut -d' ' -f1)
out=$cache/$name-$sum
if [ ! -f "$out/$name.class" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.$name.XXXXXX")
  javac -nowarn -d "$tmp" -cp "$cp" "$dir/Protocol.java" "$dir/$name.java"
  mv -T "$tmp" "$out" 2>/dev/null || rm -rf "$tmp"
fi
# A short-lived client: the quickest start (no tiered compilation past C1, the serial GC).
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$out:$cp" "$name"
