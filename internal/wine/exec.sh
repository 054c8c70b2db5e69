#!/bin/sh
# The `go test -exec` program of test-windows.sh: runs one Windows test binary (and its
# arguments) under Wine, in the prefix test-windows.sh exported. Its exit status is the test
# binary's.
set -e
: "${WINEPREFIX:?run through make test-windows, which sets up the Wine prefix}"
exec "${SUBKIT_WINE:-wine}" "$@"
