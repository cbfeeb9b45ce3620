# zkrecipes — each target installs what it needs on a fresh Debian machine.

GO        ?= go
# The oldest Go the library builds and tests on: the go line of go.mod.
# make test runs the tests with it too (the toolchain comes from the Go
# module proxy, as GOTOOLCHAIN fetches it).
GO_OLDEST ?= go1.22.0
STATICCHECK_VERSION ?= v0.8.2
# Fuzzing runs a number of inputs, not a time: with a time, the engine ends on a deadline that a
# worker still minimising a new input can report as the failure "context deadline exceeded"
# (about 5 s per target on this machine).
FUZZTIME  ?= 100000x
FUZZ_TARGETS = connection:FuzzValidatePath recipes/layout:FuzzParse \
	recipes/layout:FuzzContenderOrder recipes/queue:FuzzParseEntry
TESTFLAGS ?=
# The packages whose -race tests take longest, in that order: make test starts them first, so
# that the packages running last, two at a time, are short ones (go test starts the packages'
# tests in the order it is given them).
TEST_FIRST ?= ./recipes/cache ./connection ./recipes/election ./recipes/mutex ./cmd/zkrecipes
# The packages whose integration tests run with the oldest Go too (see test): the recipes whose
# workers wait on timers.
OLDEST_INTEGRATION ?= ./recipes/node ./recipes/partition
# The command line's tests that run with the oldest Go too: those of its processes, signals and
# terminal (the files only Linux builds, where they live).
OLDEST_CMD_FILES ?= cmd/zkrecipes/*_linux_test.go
# The session owner's integration tests that run with the oldest Go too, as a go test -run
# pattern: those of its code that waits on timers — the watchdog (suspension, loss, expiry, the
# server's lag), the end of a handle (Close) and the guards' settling. The rest of the package
# waits on go-zookeeper and the servers alone, the same under every Go.
OLDEST_CONNECTION_RUN ?= Watchdog|Suspen|Lost|Silen|Close|Guard|Expir|Timeout|ServerLag|Ping

.PHONY: demo test test-race test-early test-faults test-norace bench chaos lint api deps deps-demo

## demo: show fair locking, fencing tokens and the herd effect (starts a local ZooKeeper unless ZK_SERVERS is set);
## installs only what its local server needs, a Java runtime and ZooKeeper (deps-demo)
demo: deps-demo
	$(GO) run ./cmd/zkrecipes demo

# Packages the -race pass tests at once, and tests of one package at once (t.Parallel): most
# integration tests wait on servers and timeouts, not on the CPU.
TEST_P ?= 3
TEST_PARALLEL ?= 4

## test: install ZooKeeper, a JDK, Curator and Kazoo if missing, then run every test, in three
## parts. (1) test-race: every test with -race; beside it, at the lowest CPU priority, test-early,
## what no timing depends on (the oldest Go's vet, fuzzing, the later parts' builds): the -race
## pass keeps the CPU busy only part of the time, as its tests wait on servers and timeouts. (2)
## Once both end, the tests timed against session timeouts that the -race pass does not run, in two
## lanes side by side: test-faults (the short fault run, then the oldest Go's tests) and
## test-norace (the rest without -race); the second lane's output follows the first's. The fault
## run waits for the -race pass: beside it, its ensemble's quorum, restored from a backup under
## tight limits, could not sync its followers in time.
test: deps
	@echo "== make test: the -race pass from $$(date +%T), test-early beside it (nice 19; its output follows)"
	@log=$$(mktemp); \
	( exec setsid nice -n 19 $(MAKE) --no-print-directory test-early >$$log.early 2>&1 ) & early=$$!; \
	trap 'kill -TERM -- -'$$early' 2>/dev/null; rm -f '$$log' '$$log.early EXIT INT TERM; \
	$(MAKE) --no-print-directory test-race; rc=$$?; \
	echo "== make test: the -race pass ended at $$(date +%T)"; \
	wait $$early; erc=$$?; cat $$log.early; \
	[ $$rc -eq 0 ] && [ $$erc -eq 0 ] || exit 1; \
	echo "== make test: test-faults and test-norace side by side from $$(date +%T)"; \
	( exec setsid $(MAKE) --no-print-directory test-norace >$$log 2>&1 ) & other=$$!; \
	trap 'kill -TERM -- -'$$other' 2>/dev/null; rm -f '$$log' '$$log.early EXIT INT TERM; \
	$(MAKE) --no-print-directory test-faults; rc=$$?; \
	wait $$other; orc=$$?; \
	echo "== make test: test-norace, beside test-faults:"; cat $$log; \
	echo "== make test: done at $$(date +%T)"; \
	[ $$rc -eq 0 ] && [ $$orc -eq 0 ]

## test-race: every test with -race; a package that fails with go-zookeeper's own race alone (above),
## or with its other own race (a call that gave up on a closed handle reads its response as the late
## answer is decoded into it), runs once more (scripts/known-race.py). The short fault run is left
## to test-faults: go-zookeeper v1.0.4 reads its last zxid unsynchronised while it re-registers
## watches on a reconnect, a race inside the dependency that the fault run's many reconnects make
## the detector report (go-zookeeper/zk#35, open). -vet=off here and below: test-early runs go vet.
test-race:
	@out=$$(mktemp); \
	pkgs=$$($(GO) list $(TEST_FIRST) ./... | awk '!seen[$$0]++' | grep -v /internal/testinfra/chaos); \
	{ $(GO) test -race -vet=off -count=1 -timeout 15m -p $(TEST_P) -parallel $(TEST_PARALLEL) $(TESTFLAGS) $$pkgs 2>&1; echo $$? > $$out.rc; } | tee $$out; \
	rc=$$(cat $$out.rc); rm -f $$out.rc; \
	if [ $$rc -ne 0 ]; then \
		again=$$(python3 scripts/known-race.py < $$out) && [ -n "$$again" ] || { rm -f $$out; exit 1; }; \
		echo "== go-zookeeper's own race (go-zookeeper/zk#35) failed $$again; once more"; \
		$(GO) test -race -vet=off -count=1 -timeout 15m $(TESTFLAGS) $$again || { rm -f $$out; exit 1; }; \
	fi; rm -f $$out

## test-early: what no timing depends on — the oldest supported Go's ($(GO_OLDEST)) go vet of
## every package (the build of each, too), fuzzing (the seeds also run in every go test), and the
## test binaries of test-faults and test-norace built, so that those find them made.
test-early:
	@echo "== test-early: the oldest supported Go, $(GO_OLDEST): the build and vet of every package"
	GOTOOLCHAIN=$(GO_OLDEST) $(GO) vet ./...
	@echo "== test-early: fuzzing, $(FUZZTIME) inputs per target"
	@for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*} || exit 1; done
	@echo "== test-early: the test binaries of test-faults and test-norace"
	@d=$$(mktemp -d); trap 'rm -rf '$$d EXIT; \
	GOTOOLCHAIN=$(GO_OLDEST) $(GO) test -vet=off -c -o $$d/oldest/ $$($(GO) list ./... | grep -v 'zkrecipes/zkrecipes$$') && \
	$(GO) test -vet=off -c -o $$d/ ./internal/testinfra/chaos $$(scripts/race-skipped.sh | cut -d' ' -f1) && \
	for m in observe/prometheus observe/otel testing/zktest/docker; do (cd $$m && $(GO) test -c -o $$d/ ./...) || exit 1; done
	@echo "== test-early done at $$(date +%T)"

## test-faults: the short fault run (internal/testinfra/chaos), without -race (see test-race); then,
## with the oldest supported Go ($(GO_OLDEST), without -race), what can differ between Go versions
## beyond the build and vet: every unit test (-short: the tests against real servers skip), and the
## integration tests of the code that leans on what Go versions changed — timers (Go 1.23 made
## their channels unbuffered and Stop/Reset synchronous), child processes and signals: the
## connection's tests of its timers (OLDEST_CONNECTION_RUN), $(OLDEST_INTEGRATION) (with
## ZKRECIPES_SKIP_HEAVY set, their longest fault tests skip there, having run once) and the
## command line's tests of its processes, signals and terminal (OLDEST_CMD_FILES), these three
## at once (they wait on servers and timers, not on the CPU)
test-faults:
	@echo "== test-faults: the short fault run, without -race"
	$(GO) test -vet=off -count=1 -timeout 10m $(TESTFLAGS) ./internal/testinfra/chaos
	@echo "== test-faults: the oldest supported Go, $(GO_OLDEST): the unit tests, the connection's tests of its timers, the integration tests of $(OLDEST_INTEGRATION), the command line's of its processes, signals and terminal"
	GOTOOLCHAIN=$(GO_OLDEST) $(GO) test -vet=off -short -count=1 -timeout 10m $(TESTFLAGS) ./...
	@d=$$(mktemp -d); trap 'rm -rf '$$d EXIT; export GOTOOLCHAIN=$(GO_OLDEST); \
	echo "$(GO) test -run '$(OLDEST_CONNECTION_RUN)' ./connection, $(OLDEST_INTEGRATION), and the command line's tests of its processes, at once (their output follows)"; \
	{ ZKRECIPES_SKIP_HEAVY=1 $(GO) test -vet=off -count=1 -timeout 10m $(TESTFLAGS) -run '$(OLDEST_CONNECTION_RUN)' ./connection; echo $$? >$$d/1.rc; } >$$d/1 2>&1 & \
	{ ZKRECIPES_SKIP_HEAVY=1 $(GO) test -vet=off -count=1 -timeout 15m $(TESTFLAGS) $(OLDEST_INTEGRATION); echo $$? >$$d/2.rc; } >$$d/2 2>&1 & \
	{ $(GO) test -vet=off -count=1 -timeout 10m $(TESTFLAGS) -run "$$(scripts/test-names.sh $(OLDEST_CMD_FILES))" ./cmd/zkrecipes; echo $$? >$$d/3.rc; } >$$d/3 2>&1 & \
	wait; cat $$d/1 $$d/2 $$d/3; [ "$$(cat $$d/1.rc $$d/2.rc $$d/3.rc)" = "$$(printf '0\n0\n0')" ]
	@echo "== test-faults done at $$(date +%T)"

## test-norace: the tests that skip under -race — for go-zookeeper's race, and the connection's TLS
## tests, whose time under it would go to instrumented handshakes (scripts/race-skipped.sh lists
## them) — but for those of $(OLDEST_INTEGRATION), which test-faults runs whole; the Docker
## backend's module (its tests skip, saying why, without a Docker engine); the Prometheus adapter's
## module (observe/prometheus); the OpenTelemetry adapter's module (observe/otel)
test-norace:
	@echo "== test-norace: the tests that skip under -race, without it, but for $(OLDEST_INTEGRATION)'s"
	@scripts/race-skipped.sh $(OLDEST_INTEGRATION) | while read -r pkg run; do \
		echo "$(GO) test -count=1 -parallel $(TEST_PARALLEL) -run '$$run' $$pkg"; \
		$(GO) test -vet=off -count=1 -timeout 10m -parallel $(TEST_PARALLEL) $(TESTFLAGS) -run "$$run" $$pkg || exit 1; done
	cd testing/zktest/docker && $(GO) test -count=1 -timeout 10m $(TESTFLAGS) ./...
	cd observe/prometheus && $(GO) test -count=1 -timeout 10m $(TESTFLAGS) ./...
	cd observe/otel && $(GO) test -count=1 -timeout 10m $(TESTFLAGS) ./...
	@echo "== test-norace done at $$(date +%T)"

## chaos: participants of every recipe held exclusively (the work queue's one item too), 2–4 to a process sharing its client, under a nemesis on a local 3-node ensemble
## (answers lost while requests apply, releases with deadlines shorter than the answer, the network, server and pause faults,
## and the ensemble restored from an older backup)
## for CHAOS_DURATION (default 1m; try 5m, 15m), printing the tables and writing docs/chaos.svg
CHAOS_DURATION ?= 1m
CHAOS_FLAGS ?=
chaos: deps
	$(GO) run ./internal/testinfra/chaos/zkchaos -duration $(CHAOS_DURATION) -svg docs/chaos.svg $(CHAOS_FLAGS)

# The API file of each module, as module-directory=file: the exported API of its packages
# that are neither internal nor commands (docs/stability.md says what it promises).
API_FILES = .=api/zkrecipes.txt testing/zktest/docker=testing/zktest/docker/api/docker.txt \
	observe/prometheus=observe/prometheus/api/prometheus.txt \
	observe/otel=observe/otel/api/otel.txt

## lint: gofmt, go vet, staticcheck (of the main module and of the adapters' modules), and the API files (each module's exported API as its file has it)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	for m in observe/otel observe/prometheus; do (cd $$m && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...) || exit 1; done
	$(GO) run ./internal/testinfra/apifile/zkapi -check $(API_FILES)

## api: rewrite the API files after a change to the exported API (review their diff and commit
## them with it), and print each package's exported identifiers counted
api:
	$(GO) run ./internal/testinfra/apifile/zkapi -write $(API_FILES)

# deps: what the tests, the benchmarks and the fault run need: ZooKeeper, a JDK, Curator and Kazoo.
deps:
	@./scripts/install-deps.sh test

# deps-demo: what a local ZooKeeper needs (make demo, zkrecipes dev): a Java runtime and ZooKeeper's jars.
deps-demo:
	@./scripts/install-deps.sh demo

## bench: the Go benchmarks (the partitioner's rebalance beside Kazoo's among them; Lock+Unlock
## with and without an observer, and the Prometheus adapter's cost of a request and a hold; a scrape of zkrecipes exporter with 10,000 locks under its path),
## the cache's first view of a 100,011-node subtree checked node for node (TestScaleTree at its full
## size), then zkrecipes,
## Curator, Kazoo and zk.Lock side by side on a local 3-node ensemble (medians of 3 rounds), the
## cache against CuratorCache and both TreeCaches included, and the latency-bound lock scenarios
## again on a second ensemble whose every link is delayed 0 and 250 µs one way (--link-delay),
## the uncontended Lock+Unlock without and with a recording observer, interleaved, and
## curatorqueue beside Curator's DistributedQueue and SimpleDistributedQueue,
## rewriting docs/benchmarks.md and its two charts (the cache's section alone:
## go run ./cmd/zkbench --scenarios cache --docs docs; the observer's: --scenarios observer;
## Curator's queues': --scenarios curatorqueue)
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x ./cmd/zkbench/internal/bench
	$(GO) test -run '^$$' -bench LockUnlock -benchmem -benchtime 500x ./recipes/mutex
	$(GO) test -run '^$$' -bench TracedRequest -benchmem ./connection
	cd observe/prometheus && $(GO) test -run '^$$' -bench Record -benchmem .
	cd observe/otel && $(GO) test -run '^$$' -bench RequestObserved -benchmem .
	$(GO) test -run '^$$' -bench IdleWaiters -benchmem -benchtime 1x ./recipes/mutex
	$(GO) test -run '^$$' -bench . -benchmem ./internal/lockcore ./recipes/layout
	$(GO) test -run '^$$' -bench MarkerCost -benchtime 2000x ./recipes/shared
	$(GO) test -run '^$$' -bench Rebalance -benchtime 1x ./recipes/partition
	$(GO) test -run '^$$' -bench ExporterScrape -benchtime 20x ./cmd/zkrecipes
	ZKRECIPES_SCALE=full $(GO) test -count=1 -v -run '^(TestScaleTree|TestScaleWideDirectory|TestScaleWideDirectoryOnBoundedClient)$$' ./recipes/cache
	$(GO) run ./cmd/zkbench --rounds 3 --link-delay 0,250us --docs docs
