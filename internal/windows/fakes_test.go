package windows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// calls records the OS calls a test made, in order, as short strings.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf(format, a...))
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

func (c *calls) has(prefix string) bool {
	for _, s := range c.list() {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// fakeSys is a scripted Sys. Zero fields mean success.
type fakeSys struct {
	c *calls

	startErr     error
	start        uint64 // the leader's creation time
	createJobErr error
	job          *fakeJob
	resumeErr    error
	exited       bool
	exitedErr    error
	ctrlBreakErr error
	openErr      error
	openStart    uint64 // creation time of whatever process has the pid now
	openStartErr error
	opened       *fakeProcess
}

func newFakeSys() (*fakeSys, *calls) {
	c := &calls{}
	return &fakeSys{c: c, start: 1000, openStart: 1000, job: &fakeJob{c: c, active: []int{1}}}, c
}

func (s *fakeSys) CreateJob() (Job, error) {
	s.c.add("CreateJob")
	if s.createJobErr != nil {
		return nil, s.createJobErr
	}
	return s.job, nil
}

func (s *fakeSys) ProcessStart(h uintptr) (uint64, error) {
	s.c.add("ProcessStart %d", h)
	return s.start, s.startErr
}

func (s *fakeSys) Resume(h uintptr) error {
	s.c.add("Resume %d", h)
	return s.resumeErr
}

func (s *fakeSys) Exited(h uintptr) (bool, error) {
	s.c.add("Exited %d", h)
	return s.exited, s.exitedErr
}

func (s *fakeSys) OpenProcess(pid int) (Process, error) {
	s.c.add("OpenProcess %d", pid)
	if s.openErr != nil {
		return nil, s.openErr
	}
	s.opened = &fakeProcess{c: s.c, start: s.openStart, startErr: s.openStartErr}
	return s.opened, nil
}

func (s *fakeSys) CtrlBreak(pgid int) error {
	s.c.add("CtrlBreak %d", pgid)
	return s.ctrlBreakErr
}

// fakeJob reports active[i] on the i-th probe (the last value repeats).
type fakeJob struct {
	c            *calls
	assignErr    error
	terminateErr error
	active       []int
	activeErr    error
	probes       int
	closeErr     error
	closed       bool
}

func (j *fakeJob) Assign(h uintptr) error {
	j.c.add("Assign %d", h)
	return j.assignErr
}

func (j *fakeJob) Terminate(code uint32) error {
	j.c.add("TerminateJob %d", code)
	if j.terminateErr == nil {
		j.active = []int{0}
		j.probes = 0
	}
	return j.terminateErr
}

func (j *fakeJob) ActiveProcesses() (int, error) {
	j.c.add("ActiveProcesses")
	if j.closed {
		return 0, errors.New("fake: job used after Close")
	}
	if j.activeErr != nil {
		return 0, j.activeErr
	}
	n := j.active[min(j.probes, len(j.active)-1)]
	j.probes++
	return n, nil
}

func (j *fakeJob) Close() error {
	j.c.add("CloseJob")
	j.closed = true
	return j.closeErr
}

type fakeProcess struct {
	c        *calls
	start    uint64
	startErr error
	closed   bool
}

func (p *fakeProcess) Start() (uint64, error) {
	p.c.add("ProcessStart(opened)")
	return p.start, p.startErr
}

func (p *fakeProcess) Close() error {
	p.c.add("CloseProcess")
	p.closed = true
	return nil
}

// fakeLeader hands out handle 7 until it has been waited for.
type fakeLeader struct {
	c       *calls
	waited  bool
	killErr error
}

const fakeHandle = 7

func (l *fakeLeader) WithHandle(f func(uintptr)) error {
	if l.waited {
		return errors.New("fake: process already waited for")
	}
	f(fakeHandle)
	return nil
}

func (l *fakeLeader) Kill() error {
	l.c.add("KillLeader")
	return l.killErr
}

// fakeRunner plays taskkill.
type fakeRunner struct {
	c    *calls
	out  string
	code int
	err  error
	// during is called while "taskkill runs", to see what is held open at that moment.
	during func()
}

func (r *fakeRunner) Run(ctx context.Context, args []string) ([]byte, int, error) {
	r.c.add("taskkill %s", strings.Join(args, " "))
	if _, ok := ctx.Deadline(); !ok {
		return nil, -1, errors.New("fake: taskkill run without a deadline")
	}
	if r.during != nil {
		r.during()
	}
	return []byte(r.out), r.code, r.err
}

const leaderPid = 4242

// newTree attaches a fake leader with sys and a runner that plays taskkill.
func newTree(sys *fakeSys, c *calls, r *fakeRunner) (*Tree, *fakeLeader) {
	l := &fakeLeader{c: c}
	r.c = c
	return attach(l, leaderPid, Config{Sys: sys, Runner: r}), l
}
