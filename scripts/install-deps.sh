#!/usr/bin/env bash
# Installs what the tests need on a Debian machine, when it is missing:
# a ZooKeeper server, a JDK with javac, Curator's jars (recipes and
# curator-x-discovery) and Kazoo (the last two run in the interop tests against the real peers). Without root it
# says what is missing and leaves the rest to the tests' own messages.
set -euo pipefail

need=()
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
if [ -z "${ZOOKEEPER_HOME:-}" ] && [ -z "${ZKTEST_SERVERS:-}" ]; then
  [ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
fi
[ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
[ -f /usr/share/java/curator-x-discovery.jar ] || need+=(libcurator-discovery-java)
/usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || need+=(python3-kazoo)

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
