package linux

import (
	"fmt"
)

// PFKthread is the PF_KTHREAD bit of the flags field (9) of /proc/<pid>/stat: the task is a
// kernel thread.
const PFKthread = 0x00200000

// Brief is what a filter over many processes needs from one /proc/<pid>/stat line: identity,
// group, the kernel-thread flag and where the environment of the current program lies. Unlike
// Stat it holds no string, so parsing it allocates nothing.
type Brief struct {
	Pid       int    // (1) process id
	State     byte   // (3) state letter, as in Stat
	PPid      int    // (4) parent process id
	Pgrp      int    // (5) process group id
	Flags     uint64 // (9) PF_* flags of the task
	StartTime uint64 // (22) start time in clock ticks since boot
	// EnvStart and EnvEnd are fields (50) and (51): the addresses of the environment block of
	// the program the process runs. Both are 0 for a kernel thread, for a process whose
	// address space is gone or not set up yet (the middle of execve), for a reader the
	// kernel does not let look at the process, and on kernels older than 3.5 (which lack
	// the fields).
	EnvStart, EnvEnd uint64
}

// Zombie reports whether the process has exited and waits to be reaped (state 'Z'), or is
// being torn down (state 'X').
func (b Brief) Zombie() bool { return b.State == 'Z' || b.State == 'X' }

// KernelThread reports whether the process is a kernel thread (PF_KTHREAD). The flag is set by
// the kernel on every kernel thread and on nothing else, in every pid namespace; a parent pid of
// 2 is no substitute: kthreadd itself has parent 0, and inside a pid namespace pid 2 is an
// ordinary process whose children are ordinary too.
func (b Brief) KernelThread() bool { return b.Flags&PFKthread != 0 }

// EnvReady reports whether the environment block of the process's current program is in place
// (EnvEnd is set). It is false in the middle of execve, between the switch to the new address
// space and the set-up of the new stack, which is when /proc/<pid>/environ reads as empty
// though the new program has an environment. A process started with an empty environment has
// EnvReady true and EnvStart == EnvEnd.
func (b Brief) EnvReady() bool { return b.EnvEnd != 0 }

// Field positions (1-based, as in proc(5)) that ParseBrief reads besides those of ParseStat.
const (
	fieldFlags    = 9
	fieldEnvStart = 50
	fieldEnvEnd   = 51
)

// ParseBrief parses the contents of /proc/<pid>/stat into a Brief. The rules are those of
// ParseStat (comm ends at the last ')'; fields after the last one read are ignored), and it
// needs the fields up to starttime (22); EnvStart and EnvEnd are left 0 when the line stops
// before them. Malformed input gives an error wrapping ErrMalformed.
func ParseBrief(b []byte) (Brief, error) {
	var br Brief
	pid, _, rest, err := splitStat(b)
	if err != nil {
		return br, err
	}
	br.Pid = pid

	for field := 3; field <= fieldEnvEnd; field++ {
		i := 0
		for i < len(rest) && (rest[i] == ' ' || rest[i] == '\n') {
			i++
		}
		rest = rest[i:]
		if len(rest) == 0 {
			if field <= fieldStartTime {
				return br, malformed(fmt.Sprintf("has %d fields, want at least %d", field-1, fieldStartTime), b)
			}
			return br, nil
		}
		j := 0
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		tok := rest[:j]
		rest = rest[j:]

		switch field {
		case fieldState:
			if len(tok) != 1 {
				return br, malformed("field 3 (state) is not one letter", tok)
			}
			br.State = tok[0]
		case fieldPPid, fieldPgrp:
			v, ok := parseInt(tok)
			if !ok {
				return br, malformed(fmt.Sprintf("field %d (%s) is not an integer", field, fieldName(field)), tok)
			}
			if field == fieldPPid {
				br.PPid = v
			} else {
				br.Pgrp = v
			}
		case fieldFlags, fieldStartTime, fieldEnvStart, fieldEnvEnd:
			v, ok := parseUint(tok)
			if !ok {
				return br, malformed(fmt.Sprintf("field %d (%s) is not an unsigned integer", field, briefFieldName(field)), tok)
			}
			switch field {
			case fieldFlags:
				br.Flags = v
			case fieldStartTime:
				br.StartTime = v
			case fieldEnvStart:
				br.EnvStart = v
			case fieldEnvEnd:
				br.EnvEnd = v
			}
		}
	}
	return br, nil
}

func briefFieldName(field int) string {
	switch field {
	case fieldFlags:
		return "flags"
	case fieldStartTime:
		return "starttime"
	case fieldEnvStart:
		return "env_start"
	case fieldEnvEnd:
		return "env_end"
	}
	return "?"
}
