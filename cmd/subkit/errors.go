package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/subkit/subkit/subprocess"
)

type errorOutput struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// reportError says why command could not run: {"error":{"kind","message"}} under --json,
// else a message on stderr (with a pointer to the usage for bad flags). It returns code.
func reportError(stdout, stderr io.Writer, asJSON bool, command, kind string, code int, err error) int {
	if asJSON {
		var out errorOutput
		out.Error.Kind, out.Error.Message = kind, err.Error()
		writeJSON(stdout, out)
		return code
	}
	fmt.Fprintf(stderr, "subkit: %v\n", err)
	if code == exitUsage {
		fmt.Fprintf(stderr, "run \"subkit %s -h\" for usage\n", command)
	}
	return code
}

// startFailure maps an error from starting a program (the Service's kinds, which the bash
// executor, the lsp client and the code runtime pass on) to the error kind and exit status
// every command uses.
func startFailure(err error) (kind string, code int) {
	switch {
	case errors.Is(err, subprocess.ErrNotFound):
		return "not_found", exitNotFound
	case errors.Is(err, subprocess.ErrPermission):
		return "permission", exitNotExec
	case errors.Is(err, subprocess.ErrInvalid):
		return "invalid", exitUsage
	case errors.Is(err, subprocess.ErrUnsupported):
		return "unsupported", exitFailure
	}
	return "internal", exitFailure
}

// noteTruncated tells on stderr that a stream's tail is not the whole stream, and where the
// whole stream is when a spill file kept it.
func noteTruncated(w io.Writer, stream string, truncated bool, shown int, total int64, spill string) {
	if !truncated {
		return
	}
	fmt.Fprintf(w, "\n[subkit: %s truncated: showing the last %d of %d bytes", stream, shown, total)
	if spill != "" {
		fmt.Fprintf(w, "; the whole stream is in %s", spill)
	}
	fmt.Fprintln(w, "]")
}

// checkDir refuses a --dir that is not an existing directory: bad usage, not a program that
// was not found.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--dir %s is not a directory", dir)
	}
	return nil
}

// readStdinFile reads the bytes that --stdin-file names: the file, or stdin for "-".
func readStdinFile(name string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("--stdin-file: %w", err)
	}
	return data, nil
}

// parseFlags parses args with fs. For -h it prints usage and the flags to stdout and reports
// help, which ends the command with status 0.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) (help bool, err error) {
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fmt.Fprint(stdout, "\n"+exitStatusText)
		return true, nil
	}
	return false, err
}
