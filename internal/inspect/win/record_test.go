package win

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A walk as Windows gives it: the idle process, System, a protected process, a process that
// exits before it is opened, one whose pid is reused after the walk, a zombie.
func TestAssemble(t *testing.T) {
	const taken = 134_000_000_000_000_000
	denied := fmt.Errorf("OpenProcess pid 4: %w", errAccessDenied)
	entries := []Entry{
		{Pid: 0, PPid: 0, Threads: 8, Exe: "[System Process]"},
		{Pid: 4, PPid: 0, Threads: 200, Exe: "System"},
		{Pid: 600, PPid: 500, Threads: 3, Exe: "explorer.exe"},
		{Pid: 604, PPid: 600, Threads: 1, Exe: "gone.exe"},
		{Pid: 608, PPid: 600, Threads: 1, Exe: "reused.exe"},
		{Pid: 612, PPid: 600, Threads: 0, Exe: "exited.exe"},
	}
	times := map[int]uint64{600: taken - 1000, 608: taken + 1, 612: taken - 10}
	var asked []int
	recs, err := Assemble(context.Background(), entries, taken, func(pid int) (uint64, error) {
		asked = append(asked, pid)
		switch pid {
		case 4:
			return 0, denied
		case 604:
			return 0, fmt.Errorf("OpenProcess pid 604: %w", ErrNotFound)
		}
		return times[pid], nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int{4, 600, 604, 608, 612}, asked, "pid 0 is never opened")
	assert.Equal(t, []Record{
		{Pid: 0, PPid: 0, Threads: 8, StartErr: ErrNoObject, Comm: "[System Process]"},
		{Pid: 4, PPid: 0, Threads: 200, StartErr: denied, Comm: "System"},
		{Pid: 600, PPid: 500, Threads: 3, Start: taken - 1000, Comm: "explorer.exe"},
		{Pid: 612, PPid: 600, Threads: 0, Start: taken - 10, Comm: "exited.exe"},
	}, recs)
	assert.ErrorIs(t, recs[1].StartErr, fs.ErrPermission)
	assert.False(t, recs[0].Zombie(), "the idle process is no zombie")
	assert.False(t, recs[2].Zombie())
	assert.True(t, recs[3].Zombie())
}

// errAccessDenied stands for ERROR_ACCESS_DENIED on any OS: like that errno on Windows, it
// is an fs.ErrPermission.
var errAccessDenied = permissionError{}

type permissionError struct{}

func (permissionError) Error() string        { return "Access is denied." }
func (permissionError) Is(target error) bool { return target == fs.ErrPermission }

func TestAssembleCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	recs, err := Assemble(ctx, []Entry{{Pid: 8}, {Pid: 12}, {Pid: 16}}, 100, func(int) (uint64, error) {
		n++
		cancel()
		return 1, nil
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, recs)
	assert.Equal(t, 1, n, "no open after the context is done")
}

func TestPick(t *testing.T) {
	recs := []Record{{Pid: 8, Comm: "a.exe"}, {Pid: 12, Comm: "b.exe"}}
	r, err := Pick(recs, 12)
	require.NoError(t, err)
	assert.Equal(t, "b.exe", r.Comm)
	_, err = Pick(recs, 16)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "pid 16")
}

func TestJudge(t *testing.T) {
	boom := errors.New("GetProcessTimes: boom")
	cases := []struct {
		name    string
		start   uint64
		err     error
		created uint64
		exited  bool
		want    bool
		wantErr error
	}{
		{"same, running", 500, nil, 500, false, true, nil},
		{"same, exited and held", 500, nil, 500, true, false, nil},
		{"pid reused", 500, nil, 501, false, false, nil},
		{"gone", 500, fmt.Errorf("OpenProcess: %w", ErrNotFound), 0, false, false, nil},
		{"cannot be opened", 500, fmt.Errorf("OpenProcess: %w", errAccessDenied), 0, false, false, fs.ErrPermission},
		{"times unreadable", 500, boom, 0, false, false, boom},
		{"unknown start never matches", 0, nil, 0, false, false, nil},
	}
	for _, c := range cases {
		got, err := Judge(c.start, c.err, c.created, c.exited)
		assert.Equal(t, c.want, got, c.name)
		if c.wantErr == nil {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorIs(t, err, c.wantErr, c.name)
		}
	}
}
