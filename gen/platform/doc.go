// Command platform turns the platform support table below into per-OS constants
// (zplatform_<os>.go in the package it runs in) and the support matrix of docs/platform.md, between
// the markers
//
//	<!-- BEGIN PLATFORM MATRIX (go generate) -->
//	<!-- END PLATFORM MATRIX -->
//
// It is run by `go generate ./...` from subprocess/generate.go. The table is the one place to
// change when a capability lands on a platform.
package main
