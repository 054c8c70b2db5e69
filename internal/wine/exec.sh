#!/bin/sh
# The `go test -exec` program of test-windows.sh: runs one Windows test binary (and its
# arguments) under Wine, in the prefix test-windows.sh exported. Its exit status is the test
# binary's.
set -e
: "${WINEPREFIX:?run through make test-windows, which sets up the Wine prefix}"
# A Windows Go toolchain for the language servers of the lsp tests (gopls runs go list).
if [ -n "${SUBKIT_WINE_GOROOT:-}" ]; then
	export GOROOT=$SUBKIT_WINE_GOROOT WINEPATH="$SUBKIT_WINE_GOROOT\bin" CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
fi
exec "${SUBKIT_WINE:-wine}" "$@"
