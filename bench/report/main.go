package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	in := flag.String("in", "bench/results.txt", "raw `go test -bench` output")
	out := flag.String("out", "BENCHMARKS.md", "report to write")
	findings := flag.String("findings", "bench/findings.md", "hand-written findings to include (optional)")
	command := flag.String("command", "", "the command that produced -in, as shown in the report")
	flag.Parse()
	if err := run(*in, *out, *findings, *command); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(in, out, findingsPath, command string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(res.samples) == 0 {
		return fmt.Errorf("%s: no benchmark results", in)
	}
	var findings []byte
	if findingsPath != "" {
		findings, err = os.ReadFile(findingsPath)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	var b strings.Builder
	write(&b, res, hostInfo(), command, in, findingsPath, findings, time.Now().UTC())
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

// results is a parsed `go test -bench` output: configuration lines ("key: value") and every
// sample of every metric, per benchmark name without the -GOMAXPROCS suffix.
type results struct {
	config   map[string]string
	failures []string                        // "--- FAIL: name" lines: a benchmark that failed in some run
	procs    string                          // the -N suffix seen, i.e. GOMAXPROCS
	order    []string                        // benchmark names in first-seen order
	samples  map[string]map[string][]float64 // name -> unit -> one value per run
}

// parse reads the Go benchmark format: "BenchmarkName-N  iters  value unit  value unit ...".
// Other lines (PASS, ok, log output) are ignored, except "key: value" configuration lines.
func parse(r io.Reader) (*results, error) {
	res := &results{config: map[string]string{}, samples: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "--- FAIL: "); i >= 0 {
			name := trimProcs(strings.TrimSpace(line[i+len("--- FAIL: "):]))
			if !slices.Contains(res.failures, name) {
				res.failures = append(res.failures, name)
			}
			continue
		}
		if strings.HasPrefix(line, "Benchmark") {
			res.addLine(line)
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && k != "" && !strings.ContainsAny(k, " \t") &&
			k[0] >= 'a' && k[0] <= 'z' {
			res.config[k] = strings.TrimSpace(v)
		}
	}
	return res, sc.Err()
}

func (res *results) addLine(line string) {
	fields := strings.Fields(line)
	if len(fields) < 4 || len(fields)%2 != 0 {
		return // a benchmark's name printed alone, or a log line
	}
	if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
		return
	}
	name := trimProcs(fields[0])
	if len(name) < len(fields[0]) {
		res.procs = fields[0][len(name)+1:]
	}
	units, ok := res.samples[name]
	if !ok {
		units = map[string][]float64{}
		res.samples[name] = units
		res.order = append(res.order, name)
	}
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			continue
		}
		units[fields[i+1]] = append(units[fields[i+1]], v)
	}
}

// trimProcs drops the -GOMAXPROCS suffix go test appends to a benchmark's name.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

// median of xs: the middle value, or the mean of the two middle values. NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// stat returns the median of a benchmark's unit and whether there were samples.
func (res *results) stat(name, unit string) (float64, bool) {
	xs := res.samples[name][unit]
	if len(xs) == 0 {
		return math.NaN(), false
	}
	return median(xs), true
}

// row is one line of the table. Its figures come from Bench+"/subkit" and Bench+"/baseline".
type row struct {
	Title, Baseline, Target string
	Bench                   string
	// Check computes the subkit figure, the baseline figure, the measured value and whether
	// the target is met. ok is false when the results lack what it needs.
	Check func(res *results, sub, base string) (subkit, baseline, measured string, met, ok bool)
	// Pending says why a row has no benchmark yet; shown while its results are missing.
	Pending string
	Note    string
}

// reportOnly is the target of a row that only reports its figures: it is neither met nor
// missed.
const reportOnly = "report"

var rows = []row{
	{
		Title:    "spawn and settle `/bin/true`, both streams collected (Spawn + Wait)",
		Baseline: "os/exec `Run` with `Setpgid`, both streams to a `bytes.Buffer`",
		Target:   "time ratio <= 1.10",
		Bench:    "BenchmarkSpawnTrue",
		Check:    timeRatio(1.10),
	},
	{
		Title:    "bash executor `true` (`Executor.Exec` of `true`: a fresh `bash -c true`, both streams collected)",
		Baseline: "os/exec `bash -c true` with `Setpgid`, both streams to a `bytes.Buffer`",
		Target:   "time ratio <= 1.10",
		Bench:    "BenchmarkBashTrue",
		Check:    timeRatio(1.10),
	},
	{
		Title:    "256 MiB through collect (64 KiB tail, no spill)",
		Baseline: "os/exec `StdoutPipe` + `io.Copy(io.Discard)`",
		Target:   "throughput ratio >= 0.90",
		Bench:    "BenchmarkCollect256MiB",
		Check:    throughputRatio(0.90),
	},
	{
		Title:    "256 MiB through collect with spill (SpillBytes = 256 MiB)",
		Baseline: "os/exec with stdout set to an `*os.File`",
		Target:   "throughput ratio >= 0.85",
		Bench:    "BenchmarkSpill256MiB",
		Check:    throughputRatio(0.85),
	},
	{
		Title:    "1 GiB through collect (64 KiB tail)",
		Baseline: "none",
		Target:   "B/op <= 4 MiB + tail (4,259,840 B)",
		Bench:    "BenchmarkCollect1GiB",
		Check:    bytesPerOp(4<<20 + 64<<10),
	},
	{
		Title:    "Terminate a cooperative 100-process tree (Terminate until the tree is gone)",
		Baseline: "by hand: `kill(-pgid, SIGTERM)`, wait for the leader, poll `kill(-pgid, 0)` every 1 ms until ESRCH",
		Target:   "time ratio <= 1.20",
		Bench:    "BenchmarkTerminateTree100",
		Check:    endedEarly(timeRatio(1.20)),
		Note:     "spawn and readiness untimed",
	},
	{
		Title:    "exit detection: last member (an orphan) exits -> WaitForExit returns",
		Baseline: "none",
		Target:   "median <= 10 ms",
		Bench:    "BenchmarkExitDetection",
		Check:    endedEarly(exitLatency(10)),
		Note:     "latency from the member's own CLOCK_REALTIME stamp; ns/op means nothing here",
	},
	{
		Title:    "Snapshot + Descendants of a 200-process tree",
		Baseline: "gopsutil/v4 `Processes` + `Ppid` + `CreateTime` of every process, same walk",
		Target:   "speed-up >= 5x",
		Bench:    "BenchmarkSnapshotDescendants200",
		Check:    speedup(5),
	},
	{
		Title:    "500 concurrent spawns of `/bin/true` (Spawn + Wait, both streams collected)",
		Baseline: "os/exec, same concurrency, both streams to a `bytes.Buffer`",
		Target:   "spawns/s ratio >= 0.90; fds back to baseline",
		Bench:    "BenchmarkConcurrentSpawn500",
		Check:    spawnRate(0.90),
	},
	{
		Title: "LSP: 1,000 small requests to the fake server (sequential `Client.Call`s of `test/echo`, " +
			"params `{\"seq\":N}`, result decoded)",
		Baseline: "raw Content-Length framed writes/reads on the stdin/stdout pipe pair of the same fake " +
			"server started with os/exec (no JSON encoding or decoding)",
		Target: reportOnly,
		Bench:  "BenchmarkLSPRequests1000",
		Check:  perRequestReport,
		Note:   "figures per request; launch, initialize and shutdown untimed",
	},
	{
		Title: "Cookie sweep (`Cookie.Find` of a fresh cookie) with 1,000 unrelated live processes",
		Baseline: "the former `Find` without its start fence: `Snapshot`, then `os.Stat` of /proc/<pid> and " +
			"`Environ` of every process of the user, read again after 1 ms when empty",
		Target: "sweep under 5 ms",
		Bench:  "BenchmarkCookieSweep1000",
		Check:  timeUnder(5e6),
		Note: "1,000 `sleep` of this user, started before the cookie, untimed; steady state (the " +
			"Service's Table remembers what never changes of a process); the first Find is reported as cold-ms",
	},
	{
		Title:    "OS threads held while 1,000 trees live (`sleep 1000`, stdio discarded)",
		Baseline: "os/exec `Start` of each and a goroutine per tree in `cmd.Wait`",
		Target:   "fewer than 50 threads",
		Bench:    "BenchmarkLiveTrees1000",
		Check:    threadsUnder(50),
		Note:     "the thread count of the process once every tree runs and the count has settled",
	},
	{
		Title:    "OS threads held while 10,000 trees live",
		Baseline: "as row 12, in a child process whose Go thread limit is raised past its default of 10,000",
		Target:   "fewer than 50 threads",
		Bench:    "BenchmarkLiveTrees10000",
		Check:    threadsUnder(50),
		Note:     "at Go's default limit a thread per tree is a fatal error: thread exhaustion",
	},
	{
		Title:    "guarded spawn and settle `/bin/true` (Spawn + Wait through the Service's guard, both streams collected)",
		Baseline: "the same Spawn + Wait without a guard",
		Target:   "time ratio <= 1.30",
		Bench:    "BenchmarkGuardedSpawnTrue",
		Check:    timeRatio(1.30),
	},
	{
		Title:    "the guard's resident memory while 1,000 trees live under it",
		Baseline: "none",
		Target:   "under 10 MiB",
		Bench:    "BenchmarkGuardMemory1000",
		Check:    metricUnder("guard-MiB", 10, "MiB"),
		Note:     "VmRSS of the guard process once every tree runs",
	},
	{
		Title: "shell session `true` (`Session.Run` of `true` in a warm session: typed into the pty, " +
			"sourced by the running bash, its prompt marker read back)",
		Baseline: "a fresh `bash -c true` per call: os/exec with `Setpgid`, both streams to a `bytes.Buffer`",
		Target:   reportOnly,
		Bench:    "BenchmarkShellTrue",
		Check:    timeRatio(0),
		Note:     "session opened untimed; `true` is plain words, so no `bash -n` check runs",
	},
	{
		Title: "sandboxed spawn and settle `/bin/true` (`subprocess.Run` with `Config.Sandbox`, one writable root, " +
			"the backend the probe picks)",
		Baseline: "the same `subprocess.Run` unconfined",
		Target:   reportOnly,
		Bench:    "BenchmarkSandboxedSpawnTrue",
		Check:    timeRatio(0),
		Note:     "the helper's exec and its self-restriction (Landlock rules, seccomp filter, limits) before the program's exec",
	},
	{
		Title: "code session cell `1 + 1` (python3 `Session.Run` in a warm session: sent over the control socket, " +
			"its main result and end markers read back)",
		Baseline: "a one-shot `Runtime.Run` of `print(1 + 1)`: a fresh interpreter and private directory per run",
		Target:   reportOnly,
		Bench:    "BenchmarkCodeCell",
		Check:    speedup(0),
		Note:     "session opened untimed; python3 is the interpreter itself, not a version manager's shim",
	},
	{
		Title: "python REPL line `1+1` in a shell session (`Session.Write` with a 30 s yield, returned as " +
			"`waiting_for_input` once python reads the terminal again and the output has been quiet for `InputSettle`, 100 ms)",
		Baseline: "the codex-style fixed yield: the line written to `python3 -q` on a pty, output read after 250 ms",
		Target:   reportOnly,
		Bench:    "BenchmarkShellREPLLine",
		Check:    speedup(0),
		Note:     "session and REPL started untimed; the figure is the settle plus two /proc probes",
	},
	{
		Title: "256 MiB HTTP download through the allow-list proxy (`internal/netproxy`): a CONNECT tunnel, " +
			"the client on the proxy's Unix socket, the name resolved and checked by the proxy",
		Baseline: "the same request sent to the loopback server directly over TCP",
		Target:   reportOnly,
		Bench:    "BenchmarkProxyDownload256MiB",
		Check:    throughputRatio(0),
		Note: "a fresh connection per download, the CONNECT timed with it; the proxy splices both ways, and the " +
			"client reads a Unix socket where the baseline reads TCP, so the ratio can exceed 1",
	},
	{
		Title: "LSP: 50 one-line incremental edits to an open 1 MiB document (`Client.Change` with a range, " +
			"sent to the fake server, which takes incremental changes)",
		Baseline: "the same edits kept as a Go string, as the client kept them before: two conversions to bytes " +
			"to find each range, then a concatenation (no notification sent)",
		Target: "B/op ratio <= 0.01 (no whole-document copy per edit)",
		Bench:  "BenchmarkLSPIncrementalEdits50",
		Check:  allocRatio(0.01),
	},
	{
		Title: "LSP: a disk edit of lib.go to main.go's fresh diagnostics, twice (breaks, then fixes it): what " +
			"`lsp_diagnostics` does, a warm gopls watching the root, `SyncFiles`, then `Diagnostics`",
		Baseline: "a cold `gopls check main.go` per question",
		Target:   reportOnly,
		Bench:    "BenchmarkLSPDiskEditToDiagnostics",
		Check:    speedup(0),
		Note:     "gopls with its preset (diagnosticsDelay 250ms); server start untimed",
	},
}

// allocRatio compares the B/op medians: met when subkit allocates at most limit times the
// baseline's bytes.
func allocRatio(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.stat(sub, "B/op")
		b, ok2 := res.stat(base, "B/op")
		if !ok1 || !ok2 || b == 0 {
			return "", "", "", false, false
		}
		r := s / b
		return group(s) + " B/op", group(b) + " B/op", fmt.Sprintf("B/op ratio %.4f", r), r <= limit, true
	}
}

func timeRatio(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.stat(sub, "ns/op")
		b, ok2 := res.stat(base, "ns/op")
		if !ok1 || !ok2 {
			return "", "", "", false, false
		}
		r := s / b
		return duration(s), duration(b), fmt.Sprintf("time ratio %.2f", r), r <= limit, true
	}
}

// timeUnder meets when the subkit median ns/op is at most limitNs; the measured figure is that
// median, with the speed-up over the baseline.
func timeUnder(limitNs float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.stat(sub, "ns/op")
		b, ok2 := res.stat(base, "ns/op")
		if !ok1 || !ok2 {
			return "", "", "", false, false
		}
		return duration(s), duration(b), fmt.Sprintf("%s (%.1fx faster)", duration(s), b/s), s <= limitNs, true
	}
}

// metricUnder meets when the subkit side's unit stayed under limit in every run; there is no
// baseline.
func metricUnder(unit string, limit float64, shown string) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		xs := res.samples[sub][unit]
		if len(xs) == 0 {
			return "", "", "", false, false
		}
		worst := slices.Max(xs)
		f := fmt.Sprintf("%.1f %s", worst, shown)
		return f, "-", f, worst < limit, true
	}
}

// threadsUnder meets when the subkit side held fewer than limit threads in every run.
func threadsUnder(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.samples[sub]["threads"], len(res.samples[sub]["threads"]) > 0
		b, ok2 := res.stat(base, "threads")
		if !ok1 || !ok2 {
			return "", "", "", false, false
		}
		worst := slices.Max(s)
		return fmt.Sprintf("%.0f threads", worst), fmt.Sprintf("%.0f threads", b),
			fmt.Sprintf("%.0f threads (%.0fx fewer)", worst, b/worst), worst < limit, true
	}
}

// perRequestReport compares the ns/req medians (an op's time over its requests) and always
// meets: a "report" target has no limit.
func perRequestReport(res *results, sub, base string) (string, string, string, bool, bool) {
	s, ok1 := res.stat(sub, "ns/req")
	b, ok2 := res.stat(base, "ns/req")
	if !ok1 || !ok2 {
		return "", "", "", false, false
	}
	return duration(s) + " per request", duration(b) + " per request",
		fmt.Sprintf("time ratio %.2f per request", s/b), true, true
}

// endedEarly adds the still-present counts (iterations whose tree still had a live member right
// after its end was reported) to a check; any on the subkit side misses the row, since the
// timed end then came before the tree was gone.
func endedEarly(check func(*results, string, string) (string, string, string, bool, bool)) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, b, m, met, ok := check(res, sub, base)
		if !ok {
			return s, b, m, met, ok
		}
		ps, haveS := sum(res.samples[sub]["still-present"])
		pb, haveB := sum(res.samples[base]["still-present"])
		if haveS && ps > 0 {
			m += fmt.Sprintf("; a live member was left after the reported end in %.0f iterations", ps)
			met = false
		}
		if haveB && pb > 0 {
			m += fmt.Sprintf("; baseline: in %.0f iterations", pb)
		}
		return s, b, m, met, ok
	}
}

func sum(xs []float64) (float64, bool) {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t, len(xs) > 0
}

func throughputRatio(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.stat(sub, "MB/s")
		b, ok2 := res.stat(base, "MB/s")
		if !ok1 || !ok2 {
			return "", "", "", false, false
		}
		r := s / b
		return fmt.Sprintf("%.0f MB/s", s), fmt.Sprintf("%.0f MB/s", b),
			fmt.Sprintf("throughput ratio %.2f", r), r >= limit, true
	}
}

func bytesPerOp(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, _ string) (string, string, string, bool, bool) {
		s, ok := res.stat(sub, "B/op")
		if !ok {
			return "", "", "", false, false
		}
		fig := fmt.Sprintf("%s B/op", group(s))
		if mbs, ok := res.stat(sub, "MB/s"); ok {
			fig += fmt.Sprintf(" (%.0f MB/s)", mbs)
		}
		return fig, "-", fmt.Sprintf("%s B/op", group(s)), s <= limit, true
	}
}

func exitLatency(limitMs float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, _ string) (string, string, string, bool, bool) {
		s, ok := res.stat(sub, "exit-ms")
		if !ok {
			return "", "", "", false, false
		}
		fig := fmt.Sprintf("median %.2f ms", s)
		if p90, ok := res.stat(sub, "exit-p90-ms"); ok {
			fig += fmt.Sprintf(", p90 %.2f ms", p90)
		}
		return fig, "-", fmt.Sprintf("median %.2f ms", s), s <= limitMs, true
	}
}

func speedup(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.stat(sub, "ns/op")
		b, ok2 := res.stat(base, "ns/op")
		if !ok1 || !ok2 {
			return "", "", "", false, false
		}
		r := b / s
		return duration(s), duration(b), fmt.Sprintf("%.1fx faster", r), r >= limit, true
	}
}

func spawnRate(limit float64) func(*results, string, string) (string, string, string, bool, bool) {
	return func(res *results, sub, base string) (string, string, string, bool, bool) {
		s, ok1 := res.stat(sub, "spawns/s")
		b, ok2 := res.stat(base, "spawns/s")
		if !ok1 || !ok2 {
			return "", "", "", false, false
		}
		// Any run that left descriptors open counts, not the median.
		leftS := slices.Max(append([]float64{0}, res.samples[sub]["fds-left"]...))
		leftB := slices.Max(append([]float64{0}, res.samples[base]["fds-left"]...))
		r := s / b
		fds := "fds back to baseline"
		if leftS > 0 {
			fds = fmt.Sprintf("%.0f fds left open", leftS)
		}
		_, haveFDs := res.stat(sub, "fds-left")
		if !haveFDs {
			fds = "fds not measured"
		}
		return fmt.Sprintf("%.0f spawns/s (fds left: %.0f)", s, leftS),
			fmt.Sprintf("%.0f spawns/s (fds left: %.0f)", b, leftB),
			fmt.Sprintf("spawns/s ratio %.2f; %s", r, fds), r >= limit && leftS == 0 && haveFDs, true
	}
}

// duration formats nanoseconds with three significant digits.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

// group formats an integer-valued figure with thousands separators.
func group(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// host describes the machine the report is generated on (the one the benchmarks ran on).
type host struct {
	CPUs           int
	CPUModel       string
	Memory, Kernel string
	LoadAfter      string
	GoVersion      string
}

func hostInfo() host {
	h := host{CPUs: runtime.NumCPU(), CPUModel: "unknown", Memory: "unknown", Kernel: runtime.GOOS,
		LoadAfter: "unknown", GoVersion: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
					h.Memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = "Linux " + strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		h.LoadAfter = loadavg(string(data))
	}
	return h
}

// loadavg keeps the three load averages of a /proc/loadavg line.
func loadavg(s string) string {
	f := strings.Fields(s)
	if len(f) < 3 {
		return strings.TrimSpace(s)
	}
	return strings.Join(f[:3], " ")
}

func write(w *strings.Builder, res *results, h host, command, in, findingsPath string, findings []byte, now time.Time) {
	count := 0
	for _, units := range res.samples {
		count = max(count, len(units["ns/op"]))
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }

	p("# Benchmarks\n\n")
	p("<!-- Generated by `make bench` (bench/report) from %s. Do not edit: rerun `make bench`; "+
		"hand-written findings go in %s. -->\n\n", in, findingsPath)
	p("subkit side by side with the standard library (and gopsutil), as asked by issue 8. Every row\n")
	p("pairs `BenchmarkXxx/subkit` with `BenchmarkXxx/baseline`, run in the same `go test -bench`\n")
	p("invocation; each figure is the median of the %d runs of that benchmark, and every ratio is\n", count)
	p("formed from two medians of that one run. Nothing in the test suite asserts on time.\n\n")

	p("## Machine and run\n\n")
	p("| | |\n|---|---|\n")
	p("| CPUs (nproc) | %d |\n", h.CPUs)
	cpu := h.CPUModel
	if c := res.config["cpu"]; c != "" && c != cpu {
		cpu += fmt.Sprintf(" (go test reports: %s)", c)
	}
	p("| CPU | %s |\n", cpu)
	p("| Memory | %s |\n", h.Memory)
	p("| Kernel | %s |\n", h.Kernel)
	p("| Go | %s", h.GoVersion)
	if res.procs != "" {
		p(", GOMAXPROCS %s", res.procs)
	}
	p(" |\n")
	if start, err := time.Parse(time.RFC3339, res.config["run-started"]); err == nil {
		p("| Run started | %s |\n", start.UTC().Format("2006-01-02 15:04 MST"))
	} else {
		p("| Report generated | %s (the run's start was not recorded) |\n", now.Format("2006-01-02 15:04 MST"))
	}
	if command != "" {
		p("| Command | `%s` |\n", command)
	}
	load := "when the report was generated: " + h.LoadAfter
	if after := res.config["loadavg-after"]; after != "" {
		load = "after the run: " + loadavg(after)
	}
	if before := res.config["loadavg-before"]; before != "" {
		load = "before the run: " + loadavg(before) + "; " + load
	}
	p("| Load average (1, 5, 15 min) | %s |\n\n", load)

	p("## Results\n\n")
	if len(res.failures) > 0 {
		p("**Benchmarks failed in this run** (their rows lack some samples; see the log in %s): %s\n\n",
			in, "`"+strings.Join(res.failures, "`, `")+"`")
	}
	p("| # | row | baseline | target | subkit (median) | baseline (median) | measured | result |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	var missed []string
	for i, r := range rows {
		sub, base := r.Bench+"/subkit", r.Bench+"/baseline"
		s, b, m, met, ok := r.Check(res, sub, base)
		title := r.Title
		if r.Note != "" {
			title += " (" + r.Note + ")"
		}
		result := "met"
		switch {
		case !ok && r.Pending != "":
			s, b, m, result = "-", "-", "-", r.Pending
		case !ok:
			s, b, m, result = "-", "-", "-", "**no data** (benchmark missing from the results)"
			missed = append(missed, fmt.Sprintf("row %d (%s): no data", i+1, r.Bench))
		case r.Target == reportOnly:
			result = "reported (no target)"
		case !met:
			result = "**MISSED**"
			missed = append(missed, fmt.Sprintf("row %d (%s): %s, target %s", i+1, r.Bench, m, r.Target))
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s |\n", i+1, title, r.Baseline, r.Target, s, b, m, result)
	}
	p("\n")
	if len(missed) == 0 {
		p("Every row with data meets its target in this run.\n\n")
	} else {
		p("**Targets missed in this run:**\n\n")
		for _, m := range missed {
			p("- %s\n", m)
		}
		p("\nSee Findings for the profiles and what would fix each.\n\n")
	}

	p("## Findings\n\n")
	if text := strings.TrimSpace(string(findings)); text != "" {
		p("%s\n\n", text)
	} else {
		p("None recorded.\n\n")
	}

	p("## Every median\n\n")
	p("All metrics of every benchmark in the run: median, range over the runs, and the number of runs.\n\n")
	p("| benchmark | metric | median | min | max | runs |\n|---|---|---|---|---|---|\n")
	for _, name := range res.order {
		units := res.samples[name]
		keys := make([]string, 0, len(units))
		for u := range units {
			keys = append(keys, u)
		}
		slices.SortFunc(keys, func(a, b string) int { return strings.Compare(unitOrder(a), unitOrder(b)) })
		for _, u := range keys {
			xs := units[u]
			p("| %s | %s | %s | %s | %s | %d |\n", name, u, num(median(xs)), num(slices.Min(xs)), num(slices.Max(xs)), len(xs))
		}
	}
}

// unitOrder sorts ns/op first, the standard metrics next, custom ones last.
func unitOrder(u string) string {
	switch u {
	case "ns/op":
		return "0"
	case "MB/s":
		return "1"
	case "B/op":
		return "2"
	case "allocs/op":
		return "3"
	}
	return "4" + u
}

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return group(v)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
