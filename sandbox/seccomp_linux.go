package sandbox

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The namespace flags of clone(2) and unshare(2). CLONE_NEWTIME (0x80) is unshare's only:
// in clone's flags those bits are the exit signal.
const (
	cloneNewNamespaces   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNewNamespaces = cloneNewNamespaces | unix.CLONE_NEWTIME
)

// deniedSyscalls fail with EPERM in every confined program: they reach around the filesystem
// rules (ptrace and process_vm_* into other processes, open_by_handle_at past the paths,
// io_uring past this filter), change the mounts, or reach the kernel's shared state
// (keyrings, bpf, perf, modules, kexec, reboot, swap).
func deniedSyscalls() []string {
	return []string{
		"ptrace", "process_vm_readv", "process_vm_writev",
		"mount", "umount2", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
		"pivot_root", "chroot", "setns",
		"keyctl", "add_key", "request_key",
		"bpf", "perf_event_open", "open_by_handle_at",
		"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
	}
}

// seccompPolicy is the filter of a confined program: deniedSyscalls, new namespaces
// (unshare, clone with CLONE_NEW*; clone3, whose flags a filter cannot read, fails with ENOSYS
// so that callers fall back to clone), TIOCSTI (typing into the terminal), with the network
// off every socket but AF_UNIX, and with gate every connect(2) handed to the connectGate.
func seccompPolicy(info *arch.Info, networkOff, gate bool) seccomp.Policy {
	var names []string
	for _, n := range deniedSyscalls() {
		if _, ok := info.SyscallNames[n]; ok { // not every architecture has every call
			names = append(names, n)
		}
	}
	lo32 := func(arg uint32, v uint64) []seccomp.Condition {
		// The low 32 bits of the argument equal v, whatever the high ones: the kernel reads an
		// int (or ioctl's unsigned int) there. One condition per bit of v plus one for the
		// other bits, since the library's Equal compares all 64.
		var cs []seccomp.Condition
		for bit := uint64(1); bit < 1<<32; bit <<= 1 {
			if v&bit != 0 {
				cs = append(cs, seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: bit})
			}
		}
		return append(cs, seccomp.Condition{Argument: arg, Operation: seccomp.BitsNotSet, Value: 0xffffffff &^ v})
	}
	with := []seccomp.NameWithConditions{
		{Name: "unshare", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: unshareNewNamespaces}}},
		{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNewNamespaces}}},
		{Name: "ioctl", Conditions: lo32(1, unix.TIOCSTI)},
	}
	if networkOff {
		// Any other family, whatever the high bits say (a NotEqual on all 64 bits refuses
		// AF_UNIX with junk above it too).
		with = append(with,
			seccomp.NameWithConditions{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
			seccomp.NameWithConditions{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
		)
	}
	groups := []seccomp.SyscallGroup{
		{Action: seccomp.ActionErrno, Names: names},
		{Action: seccomp.ActionErrno, NamesWithCondtions: with},
		{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
	}
	if gate {
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.ActionUserNotify, Names: []string{"connect"}})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
}

// seccompProgram assembles the filter. The library lets a system call of another
// architecture (int 0x80 from an x86-64 process: the i386 table, where socketcall(2) does all
// of socket's work) through to its default action, allow here; the program starts by killing
// any process that makes one.
func seccompProgram(networkOff, gate bool) ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	pol := seccompPolicy(info, networkOff, gate)
	body, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assembling the filter: %w", err)
	}
	const archOffset = 4 // seccomp_data.arch
	insts := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}, body...)
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assembling the filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// loadSeccomp installs the filter on the calling thread (locked, and the one that will exec).
// NO_NEW_PRIVS must be set already. With gate it returns the filter's notification listener,
// for the connectGate; else -1.
func loadSeccomp(networkOff, gate bool) (int, error) {
	filter, err := seccompProgram(networkOff, gate)
	if err != nil {
		return -1, err
	}
	var flags uintptr
	if gate {
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if !gate {
		return -1, nil
	}
	return int(fd), nil
}
