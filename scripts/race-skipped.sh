#!/bin/sh
# race-skipped.sh [EXCLUDED_PACKAGE...]: for each package with tests that
# skip under the race detector (go-zookeeper/zk#35: go-zookeeper's
# reconnects race inside it; and the connection's TLS tests, whose time
# under it goes to instrumented handshakes), one line "./pkg REGEXP", where REGEXP is a
# go test -run pattern of exactly those tests, so that make test runs them
# without -race. A test counts when its function body calls
# skipReconnectsUnderRace or skipUnderRace, or tests raceDetector. The
# packages given as arguments (as ./pkg) are left out: they run whole
# without -race elsewhere.
set -eu
cd "$(dirname "$0")/.."
git ls-files '*_test.go' | xargs grep -lE 'skipReconnectsUnderRace\(t\)|skipUnderRace\(t\)|if raceDetector' |
	xargs -n1 dirname | sort -u | while read -r dir; do
	for ex in "$@"; do [ "./$dir" = "$ex" ] && continue 2; done
	names=$(awk '
		/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name); next }
		/^}/ { name = "" }
		name != "" && /skipReconnectsUnderRace\(t\)|skipUnderRace\(t\)|if raceDetector/ { print name; name = "" }
	' "$dir"/*_test.go | sort -u | paste -sd '|' -)
	[ -n "$names" ] && echo "./$dir ^($names)\$"
done
