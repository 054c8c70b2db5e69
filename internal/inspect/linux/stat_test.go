package linux

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tail is the part of a real stat line after starttime (field 22), so the
// cases below look like what the kernel writes.
const tail = " 3133440 388 18446744073709551615 93839515684864 93839515704745 140728285561264 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 93839515720752 93839515722368 93839646904320 140728285567486 140728285567506 140728285567506 140728285569003 0\n"

// line builds a stat line: pid, comm, then fields 3..22.
func line(pid, comm, mid string) string {
	return pid + " (" + comm + ") " + mid + tail
}

func TestParseStat(t *testing.T) {
	const mid = "S 9405 9405 1760 34816 9411 4194304 100 0 0 0 0 0 0 0 20 0 1 0 42199"
	tests := []struct {
		name string
		in   string
		want Stat
	}{
		{
			name: "plain",
			in:   line("9408", "cat", mid),
			want: Stat{Pid: 9408, Comm: "cat", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "init without tty",
			in:   "1 (process_api) S 0 0 0 0 -1 4194560 15549 270745 0 148 75 177 989 744 10 -10 13 0 19 38752256 2337 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			want: Stat{Pid: 1, Comm: "process_api", State: 'S', PPid: 0, Pgrp: 0, Session: 0, TtyNr: 0, Tpgid: -1, StartTime: 19},
		},
		{
			name: "comm with spaces",
			in:   line("77", "Web Content", mid),
			want: Stat{Pid: 77, Comm: "Web Content", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "comm with close paren",
			in:   line("78", "a)b", mid),
			want: Stat{Pid: 78, Comm: "a)b", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "comm that mimics the field boundary",
			in:   line("79", "x) R 1 2 3 (y", mid),
			want: Stat{Pid: 79, Comm: "x) R 1 2 3 (y", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "comm of parens only",
			in:   line("80", ")()(", mid),
			want: Stat{Pid: 80, Comm: ")()(", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "empty comm",
			in:   line("81", "", mid),
			want: Stat{Pid: 81, Comm: "", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "comm with newline",
			in:   line("82", "a\nb", mid),
			want: Stat{Pid: 82, Comm: "a\nb", State: 'S', PPid: 9405, Pgrp: 9405, Session: 1760, TtyNr: 34816, Tpgid: 9411, StartTime: 42199},
		},
		{
			name: "zombie",
			in:   line("83", "sleep", "Z 1 83 83 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 123456789"),
			want: Stat{Pid: 83, Comm: "sleep", State: 'Z', PPid: 1, Pgrp: 83, Session: 83, TtyNr: 0, Tpgid: -1, StartTime: 123456789},
		},
		{
			name: "kernel thread with long comm",
			in:   line("84", "kworker/u8:3-events_unbound", "I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 18446744073709551615"),
			want: Stat{Pid: 84, Comm: "kworker/u8:3-events_unbound", State: 'I', PPid: 2, Pgrp: 0, Session: 0, TtyNr: 0, Tpgid: -1, StartTime: 18446744073709551615},
		},
		{
			name: "exactly 22 fields without newline",
			in:   "85 (sh) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
			want: Stat{Pid: 85, Comm: "sh", State: 'R', PPid: 1, Pgrp: 2, Session: 3, TtyNr: 4, Tpgid: 5, StartTime: 19},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want.State == 'Z', got.Zombie())
		})
	}
}

func TestParseStatMalformed(t *testing.T) {
	const mid = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19"
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "no '('"},
		{"no comm", "12 S 1 2 3", "no '('"},
		{"unclosed comm", "12 (sh S 1 2 3", "no ')'"},
		{"close before open", "12 )sh( S 1", "no ')'"},
		{"missing pid", "(sh) " + mid, "field 1 (pid)"},
		{"negative pid", "-3 (sh) " + mid, "field 1 (pid)"},
		{"zero pid", "0 (sh) " + mid, "field 1 (pid)"},
		{"pid not a number", "1x (sh) " + mid, "field 1 (pid)"},
		{"truncated", "12 (sh) S 1 2 3 4", "has 7 fields, want at least 22"},
		{"nothing after comm", "12 (sh)", "has 2 fields"},
		{"long state", "12 (sh) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 3 (state)"},
		{"bad ppid", "12 (sh) S x 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 4 (ppid)"},
		{"bad tpgid", "12 (sh) S 1 2 3 4 -- 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 8 (tpgid)"},
		{"ppid overflow", "12 (sh) S 99999999999999999999 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 4 (ppid)"},
		{"negative starttime", "12 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -19", "field 22 (starttime)"},
		{"starttime overflow", "12 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 18446744073709551616", "field 22 (starttime)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStat([]byte(tc.in))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrMalformed), "error %v should wrap ErrMalformed", err)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestParseStatLongInputErrorIsBounded(t *testing.T) {
	_, err := ParseStat([]byte("1 (" + strings.Repeat("x", 10000)))
	require.ErrorIs(t, err, ErrMalformed)
	assert.Less(t, len(err.Error()), 300)
}

func TestParseStatAllocatesOnlyComm(t *testing.T) {
	in := []byte(line("9408", "cat", "S 9405 9405 1760 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 42199"))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ParseStat(in); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 1.0)
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(line("9408", "cat", "S 9405 9405 1760 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 42199")))
	f.Add([]byte(line("79", "x) R 1 2 3 (y", "Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19")))
	f.Add([]byte("1 (process_api) S 0 0 0 0 -1 4194560 15549 270745 0 148 75 177 989 744 10 -10 13 0 19\n"))
	f.Add([]byte("12 (sh) S 1 2 3 4"))
	f.Add([]byte("-9223372036854775808 (a) S -9223372036854775808 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551615"))
	f.Add([]byte(")("))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStat(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if st.Pid <= 0 {
			t.Fatalf("accepted non-positive pid %d", st.Pid)
		}
		if len(st.Comm) >= len(b) {
			t.Fatalf("comm %q longer than input", st.Comm)
		}
	})
}
