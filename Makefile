# subkit's checks. `make test` is the one command CI runs (.ci/run) and a newcomer runs: it
# installs what the tests need, then runs every check.

GO ?= go
VET_TARGETS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
# Targets whose test binaries must build, package by package, though no CI machine runs them.
TESTBUILD_TARGETS := windows/amd64 windows/arm64
TEST_TIMEOUT ?= 15m
FUZZTIME ?= 3s

.PHONY: test deps fmt-check vet generate generate-check unit fuzz

test: deps fmt-check vet generate-check unit fuzz

deps:
	$(GO) mod download

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt: these files need gofmt -w:"; echo "$$out"; exit 1; fi

vet:
	@set -e; for t in $(VET_TARGETS); do \
		echo "go vet $$t"; GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done; \
	for t in $(TESTBUILD_TARGETS); do \
		echo "go test -c $$t"; \
		pkgs=$$(GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) list ./...); \
		for p in $$pkgs; do \
			GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) test -c -o /dev/null $$p >/dev/null; \
		done; \
	done

generate:
	$(GO) generate ./...

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

# A short run of every fuzz target (their seed corpora run in `unit` already).
fuzz:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do \
		dir=$$(dirname "$$f"); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "fuzz $$dir $$fn ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "./$$dir" >/dev/null \
				|| { $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "./$$dir"; exit 1; }; \
		done; \
	done
