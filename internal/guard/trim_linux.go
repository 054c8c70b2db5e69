package guard

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// trimFilePages drops from the guard's page tables the pages of its read-only file mappings
// (the binary's code and constants, the C library's) that it mapped while starting: the
// package initialisation of a whole kit binary, and the kernel's fault-around, which maps
// the page-cache neighbours of every page touched. The guard then maps again, from the page
// cache, only the pages it goes on using. The pages stay in the page cache (the host, which is
// usually the same binary, maps most of them anyway); what falls is the guard's resident set.
//
// Only mappings that cannot hold a private copy of a page are dropped: not writable, backed
// by a file, and with no anonymous page (a relocated, then write-protected, RELRO page would
// be one), so every page dropped reads back the same from its file. A mapping it cannot parse
// is left alone. It returns the bytes dropped, for tests.
func trimFilePages() int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0
	}
	defer f.Close()
	type mapping struct {
		start, end uint64
		ok         bool // read-only, file-backed, and so far no anonymous page
	}
	var maps []mapping
	cur := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.IndexByte(line, ' '); i > 0 && bytes.IndexByte(line[:i], '-') > 0 && !bytes.HasSuffix(line[:i], []byte(":")) {
			// A mapping's header: start-end perms offset dev inode [path].
			fields := bytes.Fields(line)
			lo, hi, _ := bytes.Cut(fields[0], []byte("-"))
			start, err1 := strconv.ParseUint(string(lo), 16, 64)
			end, err2 := strconv.ParseUint(string(hi), 16, 64)
			m := mapping{start: start, end: end}
			m.ok = err1 == nil && err2 == nil && len(fields) >= 6 && len(fields[1]) == 4 &&
				fields[1][0] == 'r' && fields[1][1] == '-' && fields[1][3] == 'p' &&
				string(fields[4]) != "0" && bytes.HasPrefix(fields[5], []byte("/"))
			maps = append(maps, m)
			cur = len(maps) - 1
			continue
		}
		if cur < 0 {
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("Anonymous:")); ok {
			if string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))) != "0" {
				maps[cur].ok = false
			}
		}
	}
	if sc.Err() != nil {
		return 0
	}
	dropped := 0
	for _, m := range maps {
		if !m.ok || m.end <= m.start {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(m.start), uintptr(m.end-m.start), unix.MADV_DONTNEED); errno == 0 {
			dropped += int(m.end - m.start)
		}
	}
	return dropped
}

// trim returns the heap the guard does not use to the system (a collection, once) and drops
// the file pages it does not use (trimFilePages). The guard calls it once started, when the
// kit's package initialisation has left its garbage and touched much of the binary, and again
// whenever it turns idle after a burst of trees.
func trim() {
	debug.FreeOSMemory()
	trimFilePages()
}
