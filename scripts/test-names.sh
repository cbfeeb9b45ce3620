#!/bin/sh
# test-names.sh FILE...: a go test -run pattern, ^(TestA|TestB|...)$, of
# the top-level test functions the given _test.go files declare.
set -eu
names=$(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' "$@" | sort -u | paste -sd '|' -)
[ -n "$names" ] || { echo "test-names.sh: no test functions in $*" >&2; exit 1; }
echo "^($names)\$"
