package sandbox

import (
	"encoding/binary"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompProgram runs the filter in a BPF interpreter on crafted system calls, for what
// a real process cannot easily try: another architecture's table, high bits in a 32-bit
// argument.
func TestSeccompProgram(t *testing.T) {
	info, err := arch.GetInfo("")
	require.NoError(t, err)
	nr := func(name string) uint32 {
		n, ok := info.SyscallNames[name]
		require.True(t, ok, name)
		return uint32(n)
	}
	const (
		allow = uint32(seccomp.ActionAllow)
		eperm = uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
		nosys = uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
		kill  = uint32(seccomp.ActionKillProcess)
	)
	for _, networkOff := range []bool{true, false} {
		filter, err := seccompProgram(networkOff, false)
		require.NoError(t, err)
		insts := make([]bpf.Instruction, len(filter))
		for i, f := range filter {
			insts[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
		}
		vm, err := bpf.NewVM(insts)
		require.NoError(t, err)
		run := func(archID, nr uint32, args ...uint64) uint32 {
			// struct seccomp_data: the kernel loads its words in the machine's order; this
			// interpreter loads them big-endian, so each word is stored big-endian at its
			// little-endian place (the low half of an argument first).
			data := make([]byte, 64)
			binary.BigEndian.PutUint32(data[0:], nr)
			binary.BigEndian.PutUint32(data[4:], archID)
			for i, a := range args {
				binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
				binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
			}
			ret, err := vm.Run(data)
			require.NoError(t, err)
			return uint32(ret)
		}
		native := uint32(info.ID)
		netWant := allow
		if networkOff {
			netWant = eperm
		}
		for _, c := range []struct {
			name string
			got  uint32
			want uint32
		}{
			{"read", run(native, nr("read"), 0), allow},
			{"ptrace", run(native, nr("ptrace"), unix.PTRACE_ATTACH, 1), eperm},
			{"mount", run(native, nr("mount")), eperm},
			{"keyctl", run(native, nr("keyctl")), eperm},
			{"bpf", run(native, nr("bpf")), eperm},
			{"io_uring_setup", run(native, nr("io_uring_setup")), eperm},
			{"clone3", run(native, nr("clone3")), nosys},
			{"unshare user", run(native, nr("unshare"), unix.CLONE_NEWUSER), eperm},
			{"unshare files", run(native, nr("unshare"), unix.CLONE_FILES), allow},
			{"clone thread", run(native, nr("clone"), unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), allow},
			{"clone new user", run(native, nr("clone"), unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
			{"ioctl TCGETS", run(native, nr("ioctl"), 0, unix.TCGETS), allow},
			{"ioctl TIOCSTI", run(native, nr("ioctl"), 0, unix.TIOCSTI), eperm},
			{"ioctl TIOCSTI high bits", run(native, nr("ioctl"), 0, 1<<32|unix.TIOCSTI), eperm},
			{"ioctl TIOCSTI plus a bit", run(native, nr("ioctl"), 0, unix.TIOCSTI|0x100000), allow},
			{"socket unix", run(native, nr("socket"), unix.AF_UNIX, unix.SOCK_STREAM), allow},
			{"socket unix high bits", run(native, nr("socket"), 1<<32|unix.AF_UNIX), netWant},
			{"socket inet", run(native, nr("socket"), unix.AF_INET, unix.SOCK_STREAM), netWant},
			{"socket inet6", run(native, nr("socket"), unix.AF_INET6), netWant},
			{"socket netlink", run(native, nr("socket"), unix.AF_NETLINK), netWant},
			{"socketpair inet", run(native, nr("socketpair"), unix.AF_INET), netWant},
			{"another architecture", run(0x40000003 /* AUDIT_ARCH_I386 */, 102 /* socketcall */), kill},
		} {
			require.Equal(t, c.want, c.got, "%s (network off %v)", c.name, networkOff)
		}
		if info.ID == arch.X86_64.ID {
			require.Equal(t, nosys, run(native, uint32(arch.X32.SeccompMask)|nr("read")), "x32")
		}
	}
}

func TestLikelyDenial(t *testing.T) {
	for _, c := range []struct {
		stderr string
		code   int
		want   string // a word of the line; "" for none
	}{
		{"touch: cannot touch '/etc/x': Permission denied\n", 1, "Permission denied"},
		{"touch: cannot touch '/etc/x': Read-only file system\n", 1, "read-only"},
		{"mv: cannot move 'a' to '/x/a': Invalid cross-device link\n", 1, "rename or link"},
		{"curl: (6) Could not resolve host: example.com\n", 6, "network"},
		{"socket: Operation not permitted\n", 1, "Operation not permitted"},
		{"sh: 0: Cannot fork\n", 2, "process limit"},
		{"bash: fork: retry: Resource temporarily unavailable\n", 254, "process limit"},
		{"", 128 + 25, "file-size"},
		{"", 128 + 24, "CPU-time"},
		{"subkit sandbox: applying Landlock: boom\n", 126, "helper failed"},
		{"Permission denied\n", 0, ""},
		{"all good\n", 1, ""},
		{"\xff\xfe not utf-8 Permission DENIED", 1, "Permission denied"},
		{"curl: (56) CONNECT tunnel failed, response 403\n", 56, "--allow HOST"},
		{"urllib.error.URLError: <urlopen error Tunnel connection failed: 403 Forbidden>\n", 1, "network allow-list"},
	} {
		got := LikelyDenial([]byte(c.stderr), c.code)
		if c.want == "" {
			require.Empty(t, got, c.stderr)
			continue
		}
		require.Contains(t, got, c.want, c.stderr)
		require.NotContains(t, got, "\n")
	}

	// A Report names the hosts its allow-list refused, when the program failed.
	rep := &Report{NetworkRefused: []string{"pypi.org:443 is not in the network allow-list (add --allow pypi.org) (2 times)"}}
	require.Equal(t, "sandbox: the network allow-list refused pypi.org:443; allow a host with --allow HOST (Policy.Allow)",
		rep.LikelyDenial([]byte("pip: error\n"), 1))
	require.Empty(t, rep.LikelyDenial(nil, 0))
	require.Contains(t, (&Report{}).LikelyDenial([]byte("Read-only file system"), 1), "read-only")
	require.Empty(t, (*Report)(nil).LikelyDenial([]byte("Read-only file system"), 1))
}
