// Package linux reads process identity and tree links from Linux procfs.
//
// [ParseStat] and [ParseBrief] are pure functions on the bytes of /proc/<pid>/stat and build
// on every OS, so they are tested (and fuzzed) anywhere. The readers ([ReadStat], [ReadAll],
// [ReadSome], [ReadEnviron], [Census]) exist on Linux only. ReadAll lists /proc once and
// makes three system calls per process (open, read, close) with buffers reused across the
// scan; it skips processes that exit while it runs. ReadSome does the same for the pids a
// filter accepts, since listing /proc is cheap and reading a stat file is not. A Census lists
// the processes of one user started since a given start token, and remembers what never
// changes of a process, so that a later scan reads the stat file only of processes it has not
// seen.
package linux
