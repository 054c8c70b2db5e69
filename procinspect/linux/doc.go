// Package linux reads process identity and tree links from Linux procfs.
//
// [ParseStat] is a pure function on the bytes of /proc/<pid>/stat and builds
// on every OS, so it is tested (and fuzzed) anywhere. The readers
// ([ReadStat], [ReadAll], [ReadEnviron]) exist on Linux only. ReadAll lists
// /proc once and makes three system calls per process (open, read, close)
// with buffers reused across the scan; it skips processes that exit while it
// runs.
package linux
