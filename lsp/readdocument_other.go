//go:build !unix

package lsp

// openNoFollow is nothing here: Windows has no FIFOs in the file system, and the type check
// after opening refuses what is not a regular file.
const openNoFollow = 0

func isSymlinkRefusal(error) bool { return false }
