# memlayer — make targets. `make test` is what CI runs (through .ci/run).

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 10s

.PHONY: all test test-short bench fuzz fuzz-ci lint run reliability cover

all: lint test

# The whole test suite under the race detector, in shuffled order. Redis
# tests use the server named by MEMLAYER_REDIS_URL; when it is unset and a
# redis-server binary is installed, .ci/with-redis starts a throwaway one.
# The Redis Cluster tests start their own cluster (redis-server and
# redis-cli) on loopback. PostgreSQL tests use MEMLAYER_POSTGRES_URL;
# when it is unset and initdb is installed, .ci/with-postgres starts a
# throwaway cluster. internal/testreport reads the -json output, prints
# what plain go test would (the ok lines, a failing test's output) and ends
# with one line counting the tests passed, failed and skipped, the skips
# grouped by reason. pipefail keeps go test's exit status.
#
# The SQLite engine (modernc.org/sqlite, SQLite's C translated to Go, and
# the C library it runs on) is compiled without the race detector's
# instrumentation: instrumented, it made every SQLite test 3-4x slower,
# checking accesses inside SQLite's own C code. memlayer's code (its
# SQLite store included) and every other dependency stay instrumented, and
# a race in them is still reported; only accesses made inside the engine go
# unchecked. The longest packages are listed first,
# so that go test (which runs two test binaries at once on two cores)
# starts them first and the run does not end waiting for one of them.
RACE      = -race -gcflags=modernc.org/...=-race=false
SLOW_PKGS = ./agentloop ./reliability ./storage/sqlite
TEST_PKGS = $(if $(filter ./...,$(PKGS)),$(SLOW_PKGS) $(PKGS),$(PKGS))
test: SHELL := /bin/bash
test:
	set -o pipefail; .ci/with-redis .ci/with-postgres bash -c '\
		status=0; \
		$(GO) test -json $(RACE) -shuffle=on -count=1 -timeout 20m $(TEST_PKGS) || status=$$?; \
		$(GO) test -json $(RACE) -count=1 -tags postgres ./cmd/memlayer || status=$$?; \
		exit $$status' | $(GO) run ./internal/testreport -label 'make test'

test-short:
	$(GO) test -short $(PKGS)

# Benchmarks, three runs each so the figures can be compared with benchstat.
bench:
	.ci/with-redis .ci/with-postgres $(GO) test -run '^$$' -bench . -benchmem -count 3 $(PKGS)

# Every fuzz target, FUZZTIME each (go test runs one target at a time).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# The fuzz targets CI runs on every change, FUZZTIME each: the merge, the
# extractor, the entity archive's naming test, the storage key escaping, the typed scope keys and the Redis
# Cluster key form, the fence, the hostile template compile, the prompt
# projection, budgets and scored packing (never past the pool), the history
# loader, the deterministic summarizer (no copied text forges a line), the
# history summary's parts in scored assembly, the episodic log, the redactor,
# and the update tool end to end.
FUZZ_CI = \
	./workingmemory:FuzzMerge \
	./workingmemory:FuzzRecall \
	./entitymemory:FuzzExtract \
	./entitymemory:FuzzArchiveNamed \
	./storage:FuzzEscape \
	./storage:FuzzTrust301_ScopeKeys \
	./storage/redis:FuzzClusterKey \
	./prompt/fence:FuzzFence \
	./prompt:FuzzCompileHostile \
	./prompt:FuzzProjectHistory \
	./prompt:FuzzProjectLayers \
	./prompt:FuzzAllocate \
	./prompt:FuzzAssemble \
	./reliability:FuzzUpdateTool \
	./agentloop:FuzzHistoryLoad \
	./history:FuzzDeterministicSummarizer \
	./history:FuzzSummaryParts \
	./episodicmemory:FuzzEpisodic15_DecodeLog \
	./redact:FuzzRedact

# .ci/fuzz-one fails on any failure the fuzzer finds, and retries only Go
# 1.26's deadline race at the end of -fuzztime (golang/go#75804), which
# writes no failing input.
fuzz-ci:
	@set -e; for t in $(FUZZ_CI); do \
		GO=$(GO) .ci/fuzz-one $${t%%:*} $${t#*:} $(FUZZTIME); \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

# The CMS assistant on the embedded SQLite store and a scripted model (no
# API key, no server). Set OPENAI_API_KEY to use a real model.
run:
	$(GO) run ./examples/cms

# The reliability suite in full: 8 processes x 200 updates per backend,
# SIGKILL crash trials, Redis restarts, bad input and the load run. Its
# figures are the FIGURE lines of the output (see RELIABILITY.md). Without
# -race on purpose: the race detector would distort the figures, and the
# reduced form of the suite already runs under -race in `make test`. The
# agentloop package runs again with MEMLAYER_RELIABILITY=1, so that its
# long tests run at full size (make test runs them reduced).
reliability:
	.ci/with-redis .ci/with-postgres env MEMLAYER_RELIABILITY=1 $(GO) test -count=1 -timeout 30m -v ./reliability/...
	.ci/with-redis .ci/with-postgres env MEMLAYER_RELIABILITY=1 $(GO) test -count=1 -timeout 30m ./agentloop

cover:
	.ci/with-redis .ci/with-postgres $(GO) test -coverprofile=cover.out $(PKGS) && $(GO) tool cover -func=cover.out | tail -1
