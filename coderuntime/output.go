package coderuntime

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/subkit/subkit/subprocess"
)

// maxErrorFile bounds the error file read back from a run. The preludes cap what they write
// well below it; a bigger file was not written by them and is ignored.
const maxErrorFile = 1 << 20

// output converts a collected stream. A truncated tail loses the continuation bytes of a
// character cut at the truncation edge (at most utf8.UTFMax-1 of them); everything else is
// kept byte for byte, invalid UTF-8 included.
func output(r subprocess.StreamResult) Output {
	return Output{
		Tail: string(trimCut(r.Tail, r.Truncated)), TotalBytes: r.TotalBytes,
		Truncated: r.Truncated, SpillPath: r.SpillPath,
	}
}

func trimCut(tail []byte, truncated bool) []byte {
	if !truncated {
		return tail
	}
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return tail
}

// readCodeError reads the error file a prelude wrote, or returns nil when there is none. The
// work directory's prefix is cut from file paths so they read main.py, main.js.
func readCodeError(path string, workDirs []string) (*CodeError, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxErrorFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxErrorFile {
		return nil, errors.New("error file larger than 1 MiB: not the prelude's")
	}
	var ce CodeError
	if err := json.Unmarshal(data, &ce); err != nil {
		return nil, err
	}
	if ce.Name == "" {
		return nil, errors.New("error file names no exception")
	}
	for _, d := range workDirs {
		ce.Value = strings.ReplaceAll(ce.Value, d, "")
		ce.Traceback = strings.ReplaceAll(ce.Traceback, d, "")
	}
	return &ce, nil
}
