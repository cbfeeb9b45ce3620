#!/usr/bin/env bash
# Installs what a make target needs on a Debian machine, when it is missing.
#
#   install-deps.sh [test]   what the tests need (make test, bench, chaos): a
#                            ZooKeeper server, a JDK with javac, Curator's jars
#                            (recipes and curator-x-discovery) and Kazoo (the
#                            last three run in the interop tests against the
#                            real peers), and a Prometheus server (it scrapes
#                            zkrecipes exporter in a test)
#   install-deps.sh demo     what make demo needs: a Java runtime and
#                            ZooKeeper's jars for its local server (zkrecipes
#                            dev's too), no JDK, Curator or Kazoo; nothing when
#                            ZK_SERVERS names servers for the demo
#
# Without root it says what is missing and leaves the rest to the programs'
# own messages.
set -euo pipefail

mode=${1:-test}
need=()
case "$mode" in
test)
  command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
  if [ -z "${ZOOKEEPER_HOME:-}" ] && [ -z "${ZKTEST_SERVERS:-}" ]; then
    [ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
  fi
  [ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
  [ -f /usr/share/java/curator-x-discovery.jar ] || need+=(libcurator-discovery-java)
  /usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || need+=(python3-kazoo)
  command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
  ;;
demo)
  if [ -n "${ZK_SERVERS:-}" ]; then
    exit 0
  fi
  # The server runs on java from JAVA_HOME, else from PATH (as the demo
  # looks for it); libzookeeper-java is the jar and the libraries its
  # manifest names, without the zookeeper package's full JRE and tools.
  if [ -n "${JAVA_HOME:-}" ]; then
    [ -x "$JAVA_HOME/bin/java" ] || need+=(default-jre-headless)
  else
    command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
  fi
  if [ -z "${ZOOKEEPER_HOME:-}" ]; then
    [ -f /usr/share/java/zookeeper.jar ] || need+=(libzookeeper-java)
  fi
  ;;
*)
  echo "install-deps: unknown mode \"$mode\": want test or demo" >&2
  exit 2
  ;;
esac

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${need[*]}; run as root, or: sudo apt-get install ${need[*]}" >&2
  exit 0
fi
echo "install-deps: apt-get install ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
