#!/usr/bin/env bash
# make test-windows: cross-builds the Windows (amd64) test binaries of every package and runs
# them under Wine, then stops the Wine server. What it needs is set up idempotently:
#
#   - Debian packages wine, wine64 (Wine 8.0 on Debian 12) and gcc-mingw-w64-x86-64-win32,
#     installed with apt-get only when missing (apt-get update first);
#   - bcryptprimitives.dll, built from processprng.c (Go >= 1.24 needs its ProcessPrng, which
#     Wine 8.0 lacks), rebuilt only when the source changes;
#   - a Wine prefix under $WINE_BUILD_DIR (default .build/wine), made once and reused, with the
#     DLL in its system32 (the Go runtime loads it from there only);
#   - an -overlay that adds deleteat_test.go.in to each test binary (Wine 8.0 cannot delete files
#     the way Go 1.26 does by default), linked with -ldflags=-checklinkname=0.
#
# Tests that cannot pass under Wine skip themselves, naming the Wine gap. Packages whose tests
# assume a POSIX host are listed in NOT_WINDOWS_READY below with the reason: their Windows
# test binaries are built (so they keep compiling) but not run, except for the tests that
# WINE_FOCUS names for such a package, run on their own. The summary counts the tests
# run, passed and skipped. WINE_PKGS='./subprocess/...' limits the run to some packages.
# subkit.exe is cross-built too, for the cmd/subkit tests that run it as a process of its own
# (SUBKIT_WINE_SUBKIT_EXE names it).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
GO=${GO:-go}
build=${WINE_BUILD_DIR:-$root/.build/wine}
mkdir -p "$build"
build=$(cd "$build" && pwd)
here=$root/internal/wine
# One run at a time per build directory: runs share the prefix, and each stops the Wine server
# when it ends.
exec 9>"$build/lock"
flock 9

# Packages whose tests are not yet written for Windows, with why. Their owners make the tests
# skip (or build-tag) what needs a POSIX host; then the package leaves this list.
declare -A NOT_WINDOWS_READY=(
)

# The tests of a NOT_WINDOWS_READY package that do run under Wine (a go test -run pattern).
declare -A WINE_FOCUS=(
)

log() { printf 'test-windows: %s\n' "$*"; }
# current STAMP PATH: PATH exists and was built from inputs whose digest is STAMP (PATH.sha256).
current() { [ -e "$2" ] && [ "$(cat "$2.sha256" 2>/dev/null)" = "$1" ]; }

# --- packages -------------------------------------------------------------------------------
need=()
[ -x /usr/lib/wine/wine64 ] || command -v wine64 >/dev/null || need+=(wine64)
command -v wine >/dev/null || need+=(wine)
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64-win32)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		log "missing ${need[*]}: install them (Debian: apt-get install wine wine64 gcc-mingw-w64-x86-64-win32)"
		exit 1
	fi
	log "installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ -x /usr/lib/wine/wine64 ]; then
	wine=/usr/lib/wine/wine64 # the wine wrapper warns on every run that wine32 is missing
else
	wine=$(command -v wine64 || command -v wine)
fi
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)

# --- the stand-in DLL -----------------------------------------------------------------------
dll=$build/bcryptprimitives.dll
stamp=$( { cat "$here/processprng.c"; x86_64-w64-mingw32-gcc --version | head -1; } | sha256sum | cut -d' ' -f1)
if ! current "$stamp" "$dll"; then
	log "building bcryptprimitives.dll"
	x86_64-w64-mingw32-gcc -shared -O2 -s -o "$dll.tmp" "$here/processprng.c" -lbcrypt
	mv "$dll.tmp" "$dll"
	echo "$stamp" >"$dll.sha256"
fi

# --- the prefix -----------------------------------------------------------------------------
export WINEPREFIX=$build/prefix WINEARCH=win64 WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export SUBKIT_WINE=$wine
unset DISPLAY
trap '"$wineserver" -k 2>/dev/null || true' EXIT
if [ ! -f "$WINEPREFIX/.subkit-ready" ]; then
	log "making a fresh Wine prefix in $WINEPREFIX"
	rm -rf "$WINEPREFIX"
	"$wine" wineboot -i >"$build/wineboot.log" 2>&1 || { cat "$build/wineboot.log"; exit 1; }
	"$wineserver" -w
	touch "$WINEPREFIX/.subkit-ready"
fi
sys32=$WINEPREFIX/drive_c/windows/system32
cmp -s "$dll" "$sys32/bcryptprimitives.dll" || cp "$dll" "$sys32/bcryptprimitives.dll"
# Keep the server up between test binaries, and start Wine's own background processes
# (services.exe, winedevice.exe, ...) now, with no stdio of go test's: started by the first
# test binary, they would inherit its output pipe and hold it open until the server stops.
"$wineserver" -p
"$wine" cmd.exe /c exit </dev/null >/dev/null 2>&1

# --- the overlay ----------------------------------------------------------------------------
overlay=$build/overlay
rm -rf "$overlay"
mkdir -p "$overlay"
run=()
built=()
focus=()
entries=()
while read -r pkg dir name; do
	[ -n "$pkg" ] || continue
	f=$overlay/$(printf '%s' "$pkg" | tr '/.' '__').go
	sed "s/^package PACKAGE$/package $name/" "$here/deleteat_test.go.in" >"$f"
	entries+=("\"$dir/zz_wine_deleteat_test.go\":\"$f\"")
	if [ -n "${NOT_WINDOWS_READY[$pkg]:-}" ]; then
		built+=("$pkg")
		[ -z "${WINE_FOCUS[$pkg]:-}" ] || focus+=("$pkg")
	else
		run+=("$pkg")
	fi
done < <(GOOS=windows GOARCH=amd64 "$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}} {{.Name}}{{end}}' ${WINE_PKGS:-./...})
(IFS=,; printf '{"Replace":{%s}}\n' "${entries[*]}") >"$build/overlay.json"

export GOOS=windows GOARCH=amd64
flags=(-overlay "$build/overlay.json" -ldflags=-checklinkname=0)

if [ ${#built[@]} -gt 0 ]; then
	bin=$build/bin
	rm -rf "$bin"
	mkdir -p "$bin"
	for pkg in "${built[@]}"; do
		log "built, not run under Wine: $pkg (${NOT_WINDOWS_READY[$pkg]})${WINE_FOCUS[$pkg]:+; but its tests ${WINE_FOCUS[$pkg]} are}"
	done
	"$GO" test "${flags[@]}" -c -o "$bin/" "${built[@]}"
fi

winpath() { printf 'Z:%s' "$1" | tr / '\\'; }
if printf '%s\n' "${run[@]}" "${focus[@]}" | grep -qx 'github.com/subkit/subkit/cmd/subkit'; then
	"$GO" build -o "$build/subkit.exe" ./cmd/subkit
	export SUBKIT_WINE_SUBKIT_EXE=$(winpath "$build/subkit.exe")
fi
# The language servers of the lsp and cmd/subkit tests, cross-built since Wine has no go: the
# fake server, and gopls from the pinned module tools/gopls.
if printf '%s\n' "${run[@]}" "${focus[@]}" | grep -qx 'github.com/subkit/subkit/\(lsp\|cmd/subkit\)'; then
	"$GO" build -o "$build/fakeserver.exe" ./lsp/testdata/fakeserver
	export SUBKIT_LSP_FAKESERVER=$(winpath "$build/fakeserver.exe")
	stamp=$( { cat tools/gopls/go.mod tools/gopls/go.sum; "$GO" version; } | sha256sum | cut -d' ' -f1)
	if ! current "$stamp" "$build/gopls.exe"; then
		log "building gopls.exe from tools/gopls"
		(cd tools/gopls && "$GO" build -o "$build/gopls.exe" golang.org/x/tools/gopls)
		echo "$stamp" >"$build/gopls.exe.sha256"
	fi
	export SUBKIT_GOPLS=$(winpath "$build/gopls.exe")
	# gopls runs go list, and go list asks compile, asm and link for their versions (a test runs
	# gofmt): a Windows Go toolchain of this go's version, its sources linked from GOROOT, which
	# exec.sh hands to the test binaries (GOROOT, PATH; cgo off, no downloads).
	goroot=$build/goroot
	stamp=$( { "$GO" version; echo go gofmt compile asm link; } | sha256sum | cut -d' ' -f1)
	if ! current "$stamp" "$goroot"; then
		log "building a Windows Go toolchain (go, gofmt, compile, asm, link) in $goroot"
		host_goroot=$("$GO" env GOROOT)
		rm -rf "$goroot" && mkdir -p "$goroot/pkg/tool/windows_amd64" "$goroot/bin"
		for f in src VERSION go.env lib misc api pkg/include; do
			[ ! -e "$host_goroot/$f" ] || ln -s "$host_goroot/$f" "$goroot/$f"
		done
		"$GO" build -o "$goroot/bin/go.exe" cmd/go
		"$GO" build -o "$goroot/bin/gofmt.exe" cmd/gofmt
		for tool in compile asm link; do
			"$GO" build -o "$goroot/pkg/tool/windows_amd64/$tool.exe" "cmd/$tool"
		done
		echo "$stamp" >"$goroot.sha256"
	fi
	export SUBKIT_WINE_GOROOT=$(winpath "$goroot")
fi

# --- the run --------------------------------------------------------------------------------
out=$build/test.log
log "running ${#run[@]} packages, and focused tests of ${#focus[@]}, under $("$wine" --version) (log: $out)"
start=$(date +%s)
rc=0
: >"$out"
if [ ${#run[@]} -gt 0 ]; then
	"$GO" test "${flags[@]}" -exec "$here/exec.sh" -count=1 -timeout 10m -v "${run[@]}" >>"$out" 2>&1 || rc=$?
fi
for pkg in "${focus[@]}"; do
	log "focused: $pkg -run '${WINE_FOCUS[$pkg]}'" >>"$out"
	"$GO" test "${flags[@]}" -exec "$here/exec.sh" -count=1 -timeout 10m -v -run "${WINE_FOCUS[$pkg]}" "$pkg" >>"$out" 2>&1 || rc=$?
done
# Everything but the chatter of passing tests; skips come with their reasons.
grep -v -E '^[[:space:]]*(=== (RUN|PAUSE|CONT|NAME)|--- PASS: |PASS$)' "$out" || true

count() { grep -c -E "$1" "$out" || true; }
top_pass=$(count '^--- PASS: ')
top_skip=$(count '^--- SKIP: ')
top_fail=$(count '^--- FAIL: ')
sub_pass=$(count '^[[:space:]]+--- PASS: ')
sub_skip=$(count '^[[:space:]]+--- SKIP: ')
sub_fail=$(count '^[[:space:]]+--- FAIL: ')
log "Windows tests under Wine, in $(($(date +%s) - start))s: $((top_pass + top_skip + top_fail)) run: $top_pass passed, $top_skip skipped, $top_fail failed (subtests: $sub_pass passed, $sub_skip skipped, $sub_fail failed); ${#built[@]} packages built, not run (${#focus[@]} of them with focused tests run)"
if [ "$top_skip" -gt 0 ]; then
	log "skipped: $(grep -E '^--- SKIP: ' "$out" | awk '{print $3}' | paste -sd' ')"
fi
exit "$rc"
