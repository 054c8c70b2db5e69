package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The sizes of the private file systems a namespaced program gets. tmpfs pages are memory: the
// caps keep a program from filling the host's memory through them.
const (
	privateTmpSize = 256 << 20 // /tmp and /var/tmp
	privateRunSize = 1 << 20   // /run and $XDG_RUNTIME_DIR: empty, read-only once built
	privateShmSize = 64 << 20  // /dev/shm, as a container's default
)

// mountKind is what one mountOp does.
type mountKind string

const (
	mountTmpfs    mountKind = "tmpfs"     // a fresh tmpfs at Dst (Size bytes, Mode); Mode 01777 ones are writable
	mountBind     mountKind = "bind"      // Src bound at Dst, writable
	mountROBind   mountKind = "ro-bind"   // Src bound at Dst, read-only
	mountHideDir  mountKind = "hide-dir"  // an empty tmpfs of mode 0000, read-only, over Dst
	mountHideFile mountKind = "hide-file" // /dev/null bound read-only over Dst
	mountDev      mountKind = "dev"       // a minimal /dev: a few devices, a devpts of its own, a private shm
	mountProc     mountKind = "proc"      // the program's own /proc, read-only
)

// mountOp is one step of the program's view of the file system, in a new mount namespace on
// top of the host's / made read-only. The same list is built by the helper (the namespaces
// backend) or handed to bwrap as its arguments.
type mountOp struct {
	Kind mountKind `json:"k"`
	Src  string    `json:"s,omitempty"`
	Dst  string    `json:"d"`
	Size int64     `json:"n,omitempty"`
	Mode uint32    `json:"m,omitempty"`
	Dir  bool      `json:"dir,omitempty"`  // binds: the source is a directory
	Link bool      `json:"link,omitempty"` // binds: the source is a symbolic link, bound itself (not bwrap)
	Opt  bool      `json:"opt,omitempty"`  // binds: skipped when the source is gone by then
}

// mountPlan is the view of r: private /tmp, /var/tmp, /run and $XDG_RUNTIME_DIR (no host
// socket, no other program's files), a minimal /dev, the program's own /proc, then, outermost
// first, the program and its directory where a private file system covered them, the resolver
// configuration, the allowed sockets, the writable roots, the hidden paths and the protected
// paths, with what pins them (see resolved.pin). Nothing is bound beneath a hidden path. keep are more files to keep where a private file system covers them (bwrap's helper).
func mountPlan(r *resolved, keep ...string) []mountOp {
	var ops []mountOp
	var covered []string
	cover := func(dir string, size int64, mode uint32) {
		if dir == "" || !filepath.IsAbs(dir) || !isRealDir(dir) || beneathAny(dir, covered) {
			return
		}
		covered = append(covered, dir)
		ops = append(ops, mountOp{Kind: mountTmpfs, Dst: dir, Size: size, Mode: mode})
	}
	cover("/tmp", privateTmpSize, 0o1777)
	cover("/var/tmp", privateTmpSize, 0o1777)
	cover("/run", privateRunSize, 0o755)
	cover(envValue(r.prog.Env, "XDG_RUNTIME_DIR"), privateRunSize, 0o700)
	ops = append(ops, mountOp{Kind: mountDev, Dst: "/dev"}, mountOp{Kind: mountProc, Dst: "/proc"})

	// What the program needs of a covered place, kept read-only: the program, its
	// directory, the resolver's configuration (often a link into /run), and keep.
	keep = append(slices.Clip(keep), r.prog.Path)
	keep = append(keep, r.prog.Readable...)
	if !r.inWritable(r.prog.Dir) {
		keep = append(keep, r.prog.Dir)
	}
	if conf, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		keep = append(keep, conf)
	}
	var binds []mountOp
	for _, p := range keep {
		if !slices.ContainsFunc(covered, func(c string) bool { return within(p, c) }) ||
			slices.ContainsFunc(binds, func(op mountOp) bool { return op.Dst == p }) {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			binds = append(binds, mountOp{Kind: mountROBind, Src: p, Dst: p, Dir: fi.IsDir(), Opt: true})
		}
	}
	for _, s := range r.sockets {
		binds = append(binds, mountOp{Kind: mountROBind, Src: s, Dst: s})
	}
	for _, w := range r.writable {
		fi, err := os.Stat(w)
		binds = append(binds, mountOp{Kind: mountBind, Src: w, Dst: w, Dir: err == nil && fi.IsDir()})
	}
	hidden := func(p string) bool {
		return slices.ContainsFunc(r.hidden, func(h pathEntry) bool { return p == h.Path || within(p, h.Path) })
	}
	for _, p := range r.pinned {
		if !hidden(p.Path) && !slices.ContainsFunc(r.protected, func(x pathEntry) bool { return x.Path == p.Path }) {
			binds = append(binds, mountOp{Kind: mountBind, Src: p.Path, Dst: p.Path, Dir: p.Dir, Link: p.Link})
		}
	}
	for _, h := range r.hidden {
		k := mountHideFile
		if h.Dir {
			k = mountHideDir
		}
		binds = append(binds, mountOp{Kind: k, Dst: h.Path})
	}
	for _, p := range r.protected {
		if !hidden(p.Path) {
			binds = append(binds, mountOp{Kind: mountROBind, Src: p.Path, Dst: p.Path, Dir: p.Dir})
		}
	}
	slices.SortStableFunc(binds, func(a, b mountOp) int {
		return cmp.Or(cmp.Compare(strings.Count(a.Dst, "/"), strings.Count(b.Dst, "/")), strings.Compare(a.Dst, b.Dst))
	})
	return append(ops, binds...)
}

// privateWritable are the private file systems of ops a program may write in: /tmp, /var/tmp
// and /dev/shm.
func privateWritable(ops []mountOp) []string {
	var out []string
	for _, op := range ops {
		switch {
		case op.Kind == mountTmpfs && op.Mode&0o1777 == 0o1777:
			out = append(out, op.Dst)
		case op.Kind == mountDev:
			out = append(out, filepath.Join(op.Dst, "shm"))
		}
	}
	return out
}

func isRealDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// bwrapMountArgs renders ops as bwrap's arguments, after its read-only bind of /.
func bwrapMountArgs(ops []mountOp) []string {
	var args, late []string // late: made read-only once what lies beneath is in place
	for _, op := range ops {
		switch op.Kind {
		case mountTmpfs:
			args = append(args, "--size", strconv.FormatInt(op.Size, 10), "--perms", fmt.Sprintf("%04o", op.Mode), "--tmpfs", op.Dst)
			if op.Mode&0o1777 != 0o1777 {
				late = append(late, "--remount-ro", op.Dst)
			}
		case mountDev:
			args = append(args, "--dev", op.Dst, "--size", strconv.Itoa(privateShmSize), "--perms", "1777", "--tmpfs", filepath.Join(op.Dst, "shm"))
		case mountProc:
			args = append(args, "--proc", op.Dst, "--remount-ro", op.Dst)
		case mountBind:
			if !op.Link { // bwrap follows links: the Report says a link is not pinned
				args = append(args, "--bind", op.Src, op.Dst)
			}
		case mountROBind:
			args = append(args, "--ro-bind", op.Src, op.Dst)
		case mountHideDir:
			args = append(args, "--perms", "0000", "--tmpfs", op.Dst)
			late = append(late, "--remount-ro", op.Dst)
		case mountHideFile:
			args = append(args, "--ro-bind", "/dev/null", op.Dst)
		}
	}
	return append(args, late...)
}

// devices are the device nodes of the minimal /dev, bound from the host's.
var devices = [...]string{"null", "zero", "full", "random", "urandom", "tty"}

// buildMounts makes the program's view of the file system in this process's mount namespace
// (new, and owned by its user namespace): / read-only, then ops in order. Every bind's source
// is cloned first, so that a private file system laid over a source's directory later does not
// hide it. pidMax, when set, is written to the new /proc's kernel.pid_max before /proc is made
// read-only.
func buildMounts(ops []mountOp, pidMax int) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	clone := func(src string, attr uint64, flags uint) (int, error) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|flags)
		if err != nil {
			return -1, fmt.Errorf("cloning %s: %w", src, err)
		}
		fds = append(fds, fd)
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attr}); err != nil {
			return -1, fmt.Errorf("setting the flags of %s: %w", src, err)
		}
		return fd, nil
	}
	clones := make([]int, len(ops))
	var devFds [len(devices)]int
	for i, op := range ops {
		var err error
		switch op.Kind {
		case mountBind:
			var flags uint
			if op.Link {
				flags = unix.AT_SYMLINK_NOFOLLOW // the link itself, bound onto itself (move_mount does not follow it either)
			}
			clones[i], err = clone(op.Src, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, flags)
		case mountROBind:
			clones[i], err = clone(op.Src, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0)
			if op.Opt && errors.Is(err, unix.ENOENT) {
				clones[i], err = -1, nil // the program or its directory, gone: its exec fails as it would have
			}
		case mountHideFile:
			clones[i], err = clone("/dev/null", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0)
		case mountDev:
			for j, d := range devices {
				if devFds[j], err = clone("/dev/"+d, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, 0); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
		return fmt.Errorf("making / read-only: %w", err)
	}
	var readOnly []string // made read-only once everything beneath them is in place
	for i, op := range ops {
		var err error
		switch op.Kind {
		case mountTmpfs:
			err = mountTmpfsAt(op.Dst, op.Size, op.Mode, unix.MS_NOSUID|unix.MS_NODEV)
			if op.Mode&0o1777 != 0o1777 {
				readOnly = append(readOnly, op.Dst)
			}
		case mountHideDir:
			if err = mountTmpfsAt(op.Dst, 4096, 0, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err == nil {
				readOnly = append(readOnly, op.Dst)
			}
		case mountBind, mountROBind, mountHideFile:
			if clones[i] >= 0 {
				err = moveMount(clones[i], op.Dst, op.Dir)
			}
		case mountDev:
			err = buildDev(op.Dst, devFds[:])
			readOnly = append(readOnly, op.Dst)
		case mountProc:
			if err = unix.Mount("proc", op.Dst, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err == nil && pidMax > 0 {
				err = os.WriteFile(filepath.Join(op.Dst, "sys/kernel/pid_max"), []byte(strconv.Itoa(pidMax)), 0)
			}
			readOnly = append(readOnly, op.Dst)
		default:
			err = fmt.Errorf("unknown mount %q", op.Kind)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", op.Kind, op.Dst, err)
		}
	}
	for _, p := range readOnly {
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("making %s read-only: %w", p, err)
		}
	}
	// The working directory still refers to the host's view (a directory a private /tmp now
	// covers, say): leave it for the new one's root.
	return os.Chdir("/")
}

func mountTmpfsAt(dst string, size int64, mode uint32, flags uintptr) error {
	if err := mountpoint(dst, true); err != nil {
		return err
	}
	return unix.Mount("tmpfs", dst, "tmpfs", flags, fmt.Sprintf("size=%d,mode=%04o", size, mode))
}

// moveMount attaches the detached mount fd at dst, making dst first where it is missing.
func moveMount(fd int, dst string, dir bool) error {
	if err := mountpoint(dst, dir); err != nil {
		return err
	}
	return unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// mountpoint makes dst (a directory, or an empty file) and its parents where they are missing:
// within a private file system laid over its ancestor.
func mountpoint(dst string, dir bool) error {
	if _, err := os.Lstat(dst); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if dir {
		return os.Mkdir(dst, 0o755)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// buildDev makes the minimal /dev at dev: the devices bound from the host's (devFds, in the
// order of devices), a devpts instance of its own (so no other terminal of the host can be
// opened), a private shm, and the usual links.
func buildDev(dev string, devFds []int) error {
	if err := mountTmpfsAt(dev, 1<<20, 0o755, unix.MS_NOSUID|unix.MS_NOEXEC); err != nil {
		return err
	}
	for i, d := range devices {
		if err := moveMount(devFds[i], filepath.Join(dev, d), false); err != nil {
			return err
		}
	}
	pts := filepath.Join(dev, "pts")
	if err := mountpoint(pts, true); err != nil {
		return err
	}
	if err := unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("devpts: %w", err)
	}
	if err := mountTmpfsAt(filepath.Join(dev, "shm"), privateShmSize, 0o1777, unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	for link, target := range map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, link)); err != nil {
			return err
		}
	}
	return nil
}
