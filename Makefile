# subkit's checks. `make test` is the one command CI runs (.ci/run) and a newcomer runs: it
# installs what the tests need, then runs every check.

GO ?= go
VET_TARGETS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
# Targets whose test binaries must build for every package, though no CI machine runs them
# (windows/arm64 is vetted, test files included).
TESTBUILD_TARGETS := windows/amd64
TEST_TIMEOUT ?= 15m
FUZZTIME ?= 3s

.PHONY: test deps tools fmt-check vet generate generate-check unit fuzz bench test-windows

test: deps fmt-check vet generate-check unit fuzz test-windows

# Debian packages of the tests, installed with apt-get (one apt-get update for all) only when
# missing: python3-matplotlib, for the coderuntime test of a real plot, bubblewrap, the
# sandbox's second backend, and curl, the client of the network allow-list tests. A failed
# install leaves those tests skipped, saying why.
deps: tools
	$(GO) mod download
	@missing=""; \
	dpkg -s python3-matplotlib >/dev/null 2>&1 || missing="$$missing python3-matplotlib"; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } || \
			echo "make deps:$$missing not installed; TestSessionMatplotlibFigure and the bwrap backend's sandbox tests will skip"; \
	fi

# The language servers of the lsp tests, pinned, each skipped when present: gopls v0.23.0
# (the separate module tools/gopls, so that subkit's own go.mod stays clean) built into
# ./.bin/gopls; pyright, typescript-language-server and typescript 5 (tools/npm) installed with
# npm ci into ./.bin/npm; Debian's clangd with apt-get when none is on PATH. A failed npm or
# apt-get install is recorded in .bin/lsp-install/ and the tests of that server skip saying so.
# The TypeScript MCP SDK client of the subkit mcp tests (tools/mcp-client) goes into
# ./.bin/mcp-client the same way; a failed install is recorded in .bin/mcp-client.failed.
tools:
	GO=$(GO) bash tools/install-lsp-servers.sh
	bash tools/install-mcp-client.sh

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt: these files need gofmt -w:"; echo "$$out"; exit 1; fi

vet:
	@set -e; for t in $(VET_TARGETS); do \
		echo "go vet $$t"; GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done; \
	out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	for t in $(TESTBUILD_TARGETS); do \
		echo "go test -c $$t (every package)"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) test -c -o "$$out/" ./... >/dev/null; \
		rm -rf "$$out"/*; \
	done

generate:
	$(GO) generate ./...

# The Windows test binaries of every package, run under Wine (Debian's Wine 8.0); of the
# packages whose tests still assume a POSIX host, only the tests it names (cmd/subkit's tree
# tests, with a cross-built subkit.exe). It installs what it lacks (apt-get, as root), builds a
# stand-in bcryptprimitives.dll, and keeps its Wine prefix in .build/wine; see
# internal/wine/test-windows.sh.
test-windows:
	GO=$(GO) ./internal/wine/test-windows.sh

# The generated files are committed; regenerating must change nothing.
generate-check:
	@before=$$(git status --porcelain; git diff | sha256sum); \
	$(GO) generate ./...; \
	after=$$(git status --porcelain; git diff | sha256sum); \
	if [ "$$before" != "$$after" ]; then \
		echo "go generate ./... changed files: run it and commit the output"; git status --short; exit 1; \
	fi

unit:
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

# A short run of every fuzz target (their seed corpora run in `unit` already). An input that
# fails is saved under testdata/fuzz and replayed first by any later run, so a failed run is
# repeated once: a real failure fails again, a hiccup of the fuzzing engine under load does not.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do \
		dir=$$(dirname "$$f"); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "fuzz $$dir $$fn ($(FUZZTIME))"; \
			if ! $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "./$$dir" >"$$log" 2>&1; then \
				grep -v '^fuzz: elapsed' "$$log" | tail -20; echo "fuzz $$dir $$fn failed; running it again"; \
				$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "./$$dir" || exit 1; \
			fi; \
		done; \
	done

# Side-by-side benchmarks (Linux; see bench/doc.go): `make bench` or `make bench COUNT=10`. The raw
# output goes to bench/results.txt, then bench/report regenerates BENCHMARKS.md from it (medians,
# ratios, targets) with bench/findings.md included. A run in which a benchmark failed is still
# written (the report flags it) but make fails; go test alone does not fail on a benchmark that
# fails in a repeat of -count, hence the grep.
COUNT ?= 5
BENCH_CMD = $(GO) test -run '^$$' -bench . -benchmem -count $(COUNT) -timeout 60m ./bench/

bench:
	@set -e; tmp=$$(mktemp); rc=$$(mktemp); trap 'rm -f "$$tmp" "$$rc"' EXIT; \
	{ echo "run-started: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; \
	  echo "loadavg-before: $$(cat /proc/loadavg 2>/dev/null)"; } > "$$tmp"; \
	echo "$(BENCH_CMD)"; \
	{ $(BENCH_CMD) 2>&1; echo $$? > "$$rc"; } | tee -a "$$tmp"; \
	echo "loadavg-after: $$(cat /proc/loadavg 2>/dev/null)" >> "$$tmp"; \
	if ! grep -q '^Benchmark.*ns/op' "$$tmp"; then echo "make bench: no results; nothing written"; exit 1; fi; \
	cat "$$tmp" > bench/results.txt; \
	$(GO) run ./bench/report -in bench/results.txt -findings bench/findings.md -out BENCHMARKS.md \
		-command "$(BENCH_CMD)"; \
	echo "wrote bench/results.txt and BENCHMARKS.md"; \
	if [ "$$(cat "$$rc")" != 0 ] || grep -q -- '--- FAIL' "$$tmp"; then \
		echo "make bench: a benchmark failed (see bench/results.txt)"; exit 1; \
	fi
