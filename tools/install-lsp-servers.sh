#!/usr/bin/env bash
# Installs the language servers the lsp tests run against, each pinned, and skips each one that
# is already present (run it as often as you like; `make tools` does):
#
#   gopls                        v0.23.0 from tools/gopls (a module of its own), built into .bin/gopls
#   pyright                      1.1.414  } from tools/npm (package.json and package-lock.json),
#   typescript-language-server   5.3.0    } installed with `npm ci` into .bin/npm
#   typescript                   5.9.3    } (typescript 7 ships no tsserver)
#   clangd                       Debian's package (clangd 14 on bookworm), with apt-get, only
#                                when no clangd is on PATH
#
# A gopls that does not build fails the script, as it always has. The other installs need a
# registry or root and may fail on a machine without them: such a failure is written to
# .bin/lsp-install/NAME.failed (the reason and the last lines of the log) and the script goes
# on; the tests that need that server then skip and quote the file. A later successful install
# removes it.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.bin"
marks="$bin/lsp-install"
mkdir -p "$marks"
GO=${GO:-go}

log=$(mktemp)
trap 'rm -f "$log"' EXIT

ok() { rm -f "$marks/$1.failed"; }
failed() { # NAME REASON: record a failed install and go on
	{ echo "$2"; echo "--- last lines of the install log:"; tail -n 20 "$log"; } > "$marks/$1.failed"
	echo "tools: $1 NOT installed: $2 (recorded in .bin/lsp-install/$1.failed; its tests will skip)" >&2
}

# gopls: the version tools/gopls pins.
want=$(awk '{ for (i = 1; i < NF; i++) if ($i == "golang.org/x/tools/gopls") { print $(i + 1); exit } }' "$root/tools/gopls/go.mod")
if [ -z "$want" ]; then
	echo "tools: tools/gopls/go.mod does not require golang.org/x/tools/gopls" >&2
	exit 1
fi
if [ -x "$bin/gopls" ] && "$bin/gopls" version 2>/dev/null | grep -qF "$want"; then
	echo "tools: gopls $want present"
else
	echo "tools: building gopls $want into .bin/gopls (minutes the first time)"
	(cd "$root/tools/gopls" && "$GO" build -o "$bin/gopls" golang.org/x/tools/gopls) || exit 1
fi

# pyright, typescript-language-server and typescript, as tools/npm/package-lock.json pins them.
npmdir="$bin/npm"
if cmp -s "$root/tools/npm/package-lock.json" "$npmdir/package-lock.json" &&
	[ -e "$npmdir/node_modules/.bin/pyright-langserver" ] &&
	[ -e "$npmdir/node_modules/.bin/typescript-language-server" ] &&
	[ -e "$npmdir/node_modules/typescript/lib/tsserver.js" ]; then
	echo "tools: npm language servers present (.bin/npm)"
	ok npm
elif ! command -v npm >/dev/null 2>&1; then
	: > "$log"
	failed npm "npm not found on PATH (install Node.js 20 or later with npm)"
else
	echo "tools: installing pyright, typescript-language-server and typescript into .bin/npm"
	mkdir -p "$npmdir"
	cp "$root/tools/npm/package.json" "$root/tools/npm/package-lock.json" "$npmdir/"
	if (cd "$npmdir" && npm ci --no-audit --no-fund) >"$log" 2>&1; then
		ok npm
	else
		rm -f "$npmdir/package-lock.json" # not installed: the next run tries again
		failed npm "npm ci in .bin/npm failed"
	fi
fi

# clangd: Debian's, installed only when none is on PATH.
if command -v clangd >/dev/null 2>&1; then
	echo "tools: clangd present ($(command -v clangd))"
	ok clangd
elif ! command -v apt-get >/dev/null 2>&1; then
	: > "$log"
	failed clangd "no clangd on PATH and no apt-get to install it with"
elif [ "$(id -u)" != 0 ]; then
	: > "$log"
	failed clangd "no clangd on PATH; installing it needs root (apt-get install clangd)"
else
	echo "tools: installing clangd with apt-get"
	if { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clangd; } >"$log" 2>&1 &&
		command -v clangd >/dev/null 2>&1; then
		ok clangd
	else
		failed clangd "apt-get install clangd failed"
	fi
fi
exit 0
