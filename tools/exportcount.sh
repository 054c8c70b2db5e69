#!/bin/bash
# Counts the exported identifiers of every package of the module, as `go doc -all` lists them
# (top-level funcs, methods, types, consts and vars, and the exported names inside const and
# var blocks and structs), taking for each package the largest count over linux, darwin and
# windows. Run from the module root: bash tools/exportcount.sh. CHANGES.md quotes its sums.
for p in $(go list ./...); do
	n=0
	for os in linux darwin windows; do
		m=$(GOOS=$os go doc -all -u=false "$p" 2>/dev/null | grep -cE '^(func|type|const|var) [A-Z(]|^    [A-Z][A-Za-z0-9_]*( |$)')
		[ "$m" -gt "$n" ] && n=$m
	done
	echo "$n ${p#github.com/subkit/subkit/}"
done
