package sandbox

import (
	"bytes"
	"strings"
)

// Exit statuses of a program killed by the signals the limits send, as shells (and bwrap)
// report them: 128 + the signal number (SIGXCPU is 24, SIGXFSZ is 25 on Linux, macOS and
// Windows' emulations alike).
const (
	exitSIGXCPU = 128 + 24
	exitSIGXFSZ = 128 + 25
)

// LikelyDenial tells a likely denial of the sandbox from a confined program's stderr (its
// tail is enough) and exit status (128+N when a signal N ended it, as shells report it), and
// returns one line to add to a result, or "" when nothing points to the sandbox. It guesses:
// a program may print "Permission denied" for reasons of its own; the line says "likely".
func LikelyDenial(stderrTail []byte, exitCode int) string {
	// The marks of a likely denial, most specific first, each with the line to return.
	signs := []struct {
		marks []string
		line  string
	}{
		{[]string{"subkit sandbox:"}, "sandbox: the sandbox helper failed before the program started (see its line on stderr)"},
		{[]string{"file size limit exceeded"}, "sandbox: the program likely hit the file-size limit (SIGXFSZ); raise Limits.FileSizeBytes"},
		{[]string{"cpu time limit exceeded"}, "sandbox: the program likely hit the CPU-time limit (SIGXCPU); raise Limits.CPUSeconds"},
		{[]string{"cannot fork", "fork: retry", "fork: resource temporarily unavailable", "can't fork"}, "sandbox: a fork was likely refused at the process limit; raise Limits.Processes"},
		{[]string{"too many open files"}, "sandbox: the program likely hit the open-files limit; raise Limits.OpenFiles"},
		{[]string{"read-only file system"}, "sandbox: a write outside the writable roots (or to a protected path) was likely refused (read-only file system); allow a directory with --writable DIR (Policy.Writable), or write under $TMPDIR"},
		{[]string{"invalid cross-device link"}, "sandbox: a rename or link out of a writable root was likely refused; allow the other directory with --writable DIR (Policy.Writable)"},
		{[]string{"is not in the network allow-list", "connect tunnel failed, response 403", "tunnel connection failed: 403"}, "sandbox: a host was likely refused by the network allow-list (the Report's NetworkRefused names it); allow it with --allow HOST (Policy.Allow)"},
		{[]string{"network is unreachable", "cannot assign requested address", "address family not supported", "temporary failure in name resolution", "could not resolve host"}, "sandbox: a network access was likely refused (the network is off); allow it with --network on (Policy.Network)"},
		{[]string{"operation not permitted"}, "sandbox: a call was likely refused by the sandbox (Operation not permitted: network sockets when the network is off, ptrace, mount, namespaces, keyrings, bpf); --network on allows sockets, the rest stays refused"},
		{[]string{"permission denied"}, "sandbox: an access was likely refused by the sandbox (Permission denied: a write outside the writable roots, or a hidden path); --writable DIR allows writes there, and the Report lists the hidden paths"},
	}
	switch exitCode {
	case exitSIGXFSZ:
		return signs[1].line
	case exitSIGXCPU:
		return signs[2].line
	case 0:
		return ""
	}
	lower := strings.ToLower(string(bytes.ToValidUTF8(stderrTail, nil)))
	for _, s := range signs {
		for _, m := range s.marks {
			if strings.Contains(lower, m) {
				return s.line
			}
		}
	}
	return ""
}

// LikelyDenial is the package's LikelyDenial for a program confined as r says, naming the
// hosts the network allow-list refused it, when it failed after such a refusal. A nil Report
// is an unconfined program: "".
func (r *Report) LikelyDenial(stderrTail []byte, exitCode int) string {
	if r == nil {
		return ""
	}
	if len(r.NetworkRefused) > 0 && exitCode != 0 {
		hosts := make([]string, 0, len(r.NetworkRefused))
		for _, n := range r.NetworkRefused {
			host, _, _ := strings.Cut(n, " ")
			hosts = append(hosts, host)
		}
		return "sandbox: the network allow-list refused " + strings.Join(hosts, ", ") + "; allow a host with --allow HOST (Policy.Allow)"
	}
	return LikelyDenial(stderrTail, exitCode)
}
