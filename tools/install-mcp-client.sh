#!/usr/bin/env bash
# Installs the MCP client the subkit mcp tests drive the server with besides the Go SDK's own:
# the official TypeScript SDK, @modelcontextprotocol/sdk 1.32.2, as tools/mcp-client/package.json
# and package-lock.json pin it, with `npm ci` into .bin/mcp-client (the test script,
# tools/mcp-client/client.cjs, loads it from there). It skips the install when that lock is
# installed already (run it as often as you like; `make tools` does).
#
# It needs npm and Node.js 18 or later, and the npm registry. A failed install is written to
# .bin/mcp-client.failed (the reason and the last lines of the log) and the script exits 0:
# the TypeScript client test then skips and quotes that file. A later successful install
# removes it.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.bin"
dir="$bin/mcp-client"
mark="$bin/mcp-client.failed"
mkdir -p "$bin"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

failed() { # REASON: record a failed install and go on
	{ echo "$1"; echo "--- last lines of the install log:"; tail -n 20 "$log"; } > "$mark"
	echo "tools: mcp-client NOT installed: $1 (recorded in .bin/mcp-client.failed; its test will skip)" >&2
	exit 0
}

if cmp -s "$root/tools/mcp-client/package-lock.json" "$dir/package-lock.json" &&
	[ -e "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
	echo "tools: TypeScript MCP SDK client present (.bin/mcp-client)"
	rm -f "$mark"
	exit 0
fi
command -v node >/dev/null 2>&1 || failed "node not found on PATH (install Node.js 18 or later with npm)"
command -v npm >/dev/null 2>&1 || failed "npm not found on PATH (install Node.js 18 or later with npm)"
major=$(node -p 'process.versions.node.split(".")[0]' 2>>"$log")
if [ -z "$major" ] || [ "$major" -lt 18 ]; then
	failed "node $(node --version 2>/dev/null) is too old: @modelcontextprotocol/sdk needs Node.js 18 or later"
fi
echo "tools: installing the TypeScript MCP SDK client into .bin/mcp-client"
mkdir -p "$dir"
cp "$root/tools/mcp-client/package.json" "$root/tools/mcp-client/package-lock.json" "$dir/"
if (cd "$dir" && npm ci --no-audit --no-fund) >"$log" 2>&1; then
	rm -f "$mark"
else
	rm -f "$dir/package-lock.json" # not installed: the next run tries again
	failed "npm ci in .bin/mcp-client failed"
fi
exit 0
