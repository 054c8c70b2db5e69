package posix

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/inspect/linux"
	"github.com/subkit/subkit/procinspect"
)

// census remembers what a cookie sweep needs of every process it has seen.
type census = linux.Census

// rangeMax bounds the pids probed one by one: beyond it, listing /proc costs less.
const rangeMax = 4096

// readGroups lists the processes of the given groups with pids above after (all when after is
// 0). A stat file is read only for a process whose getpgid(2) names one of the groups. When
// the pids handed out since after are few, each is probed directly (getpgid of a pid no one has
// fails at once); otherwise /proc is listed.
func readGroups(groups map[int]bool, after int) ([]procinspect.Proc, error) {
	member := func(pid int) bool {
		pgid, err := unix.Getpgid(pid)
		// A thread id answers getpgid too: only thread-group leaders are processes.
		return err == nil && groups[pgid] && unix.Tgkill(pid, pid, 0) == nil
	}
	if last, ok := lastPid(); ok && after > 0 && last >= after && last-after <= rangeMax {
		var out []procinspect.Proc
		for pid := after + 1; pid <= last; pid++ {
			if !member(pid) {
				continue
			}
			st, err := linux.ReadStat(pid)
			if err != nil {
				continue // gone
			}
			out = append(out, procOf(&st))
		}
		return out, nil
	}
	sts, err := linux.ReadSome(func(pid int) bool { return pid > after && member(pid) })
	if err != nil {
		return nil, err
	}
	procs := make([]procinspect.Proc, len(sts))
	for i := range sts {
		procs[i] = procOf(&sts[i])
	}
	return procs, nil
}

func procOf(st *linux.Stat) procinspect.Proc {
	return procinspect.Proc{
		Identity: procinspect.Identity{Pid: st.Pid, Start: st.StartTime},
		PPid:     st.PPid, Pgid: st.Pgrp, Sid: st.Session, Tpgid: st.Tpgid, Comm: st.Comm,
		Zombie: st.Zombie(),
	}
}

// lastPid is the pid the kernel handed out last in this pid namespace (read with plain system
// calls: it is read once per tree that ends).
func lastPid() (int, bool) {
	fd, err := unix.Open("/proc/sys/kernel/ns_last_pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var buf [24]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n == 0 {
		return 0, false
	}
	for n > 0 && (buf[n-1] == '\n' || buf[n-1] == ' ') {
		n--
	}
	pid, err := strconv.Atoi(string(buf[:n]))
	return pid, err == nil
}
