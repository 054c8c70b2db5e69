package coderuntime

import (
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/subkit/subkit/internal/utf8bridge"
	"github.com/subkit/subkit/subprocess"
)

// maxErrorFile bounds the error report read back from a run. The preludes cap what they write
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
	return utf8bridge.TrimStart(tail)
}

// readCodeError reads the error report a prelude wrote (see openReport) from its start, or
// returns nil when it is empty. The work directory's prefix is cut from file paths so they
// read main.py, main.js.
func readCodeError(report io.ReaderAt, workDirs []string) (*CodeError, error) {
	data, err := io.ReadAll(io.NewSectionReader(report, 0, maxErrorFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	if len(data) > maxErrorFile {
		return nil, errors.New("error report larger than 1 MiB: not the prelude's")
	}
	var ce CodeError
	if err := json.Unmarshal(data, &ce); err != nil {
		return nil, err
	}
	if ce.Name == "" {
		return nil, errors.New("error report names no exception")
	}
	for _, d := range workDirs {
		ce.Value = strings.ReplaceAll(ce.Value, d, "")
		ce.Traceback = strings.ReplaceAll(ce.Traceback, d, "")
	}
	return &ce, nil
}
