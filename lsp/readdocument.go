package lsp

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/subkit/subkit/subprocess"
)

// ErrNotRegular: ReadDocument was given a path that is not a regular file: a symbolic link, a
// FIFO, a device, a directory. It is not read: in a workspace that confined programs write to,
// such a path may have been put there to make this process read what they may not (a link to
// a secret) or to block it (a FIFO no one writes). Open a link's target by its own path.
var ErrNotRegular = errors.New("not a regular file")

// ReadDocument reads the text of the file at path for a document, at most max bytes of it (0
// means 64 MiB, what one message can carry by default). The file must be a regular file:
// path is opened without following a symbolic link as its last component and without waiting
// (O_NOFOLLOW and O_NONBLOCK where the system has them), and what was opened is checked before
// anything is read. Errors wrap ErrNotRegular, or the system's error (fs.ErrNotExist, ...), or
// say the file is larger than max.
func ReadDocument(path string, max int64) ([]byte, error) {
	if max <= 0 {
		max = defaultMaxFrameBytes
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		if isSymlinkRefusal(err) {
			return nil, newError("read document", path, ErrNotRegular, errors.New("a symbolic link"))
		}
		return nil, newError("read document", path, nil, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, newError("read document", path, nil, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, newError("read document", path, ErrNotRegular, errors.New("a "+kind(fi.Mode())))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, newError("read document", path, nil, err)
	}
	if int64(len(data)) > max {
		return nil, &Error{Op: "read document", Name: path, Kind: subprocess.ErrLimit,
			Err: fmt.Errorf("larger than %d bytes", max), Hint: "raise Config.MaxFrameBytes to open it"}
	}
	return data, nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "file of mode " + m.Type().String()
}
