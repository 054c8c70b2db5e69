package linux

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real stat lines, as the kernel writes them (a sleep, a sleep started with an empty
// environment, kthreadd and a kworker).
const (
	sleepLine    = "28349 (sleep) S 28343 28349 1075 34816 28349 4194304 94 0 0 0 0 0 0 0 20 0 1 0 88215 2412544 384 18446744073709551615 94813573124096 94813573142825 140734071709728 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94813573157872 94813573159008 94813592117248 140734071712260 140734071712270 140734071712270 140734071713769 0\n"
	emptyEnvLine = "28360 (sleep) S 28343 28360 1075 34816 28349 4194304 94 0 0 0 0 0 0 0 20 0 1 0 88216 2412544 384 18446744073709551615 94813573124096 94813573142825 140734071709728 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94813573157872 94813573159008 94813592117248 140723569139683 140723569139693 140723569139693 140723569139693 0\n"
	kthreaddLine = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 24 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	kworkerLine  = "84 (kworker/u8:3-events_unbound) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 18446744073709551615 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
)

func TestParseBrief(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Brief
	}{
		{"process", sleepLine, Brief{Pid: 28349, State: 'S', PPid: 28343, Pgrp: 28349, Flags: 4194304, StartTime: 88215,
			EnvStart: 140734071712270, EnvEnd: 140734071713769}},
		{"empty environment", emptyEnvLine, Brief{Pid: 28360, State: 'S', PPid: 28343, Pgrp: 28360, Flags: 4194304, StartTime: 88216,
			EnvStart: 140723569139693, EnvEnd: 140723569139693}},
		{"kthreadd", kthreaddLine, Brief{Pid: 2, State: 'S', Flags: 2129984, StartTime: 24}},
		{"kworker", kworkerLine, Brief{Pid: 84, State: 'I', PPid: 2, Flags: 69238880, StartTime: 18446744073709551615}},
		{"comm that mimics the field boundary", "79 (x) R 1 2 3 (y) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n",
			Brief{Pid: 79, State: 'Z', PPid: 1, Pgrp: 2, Flags: 6, StartTime: 19}},
		{"exactly 22 fields without newline", "85 (sh) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19",
			Brief{Pid: 85, State: 'R', PPid: 1, Pgrp: 2, Flags: 6, StartTime: 19}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBrief([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestBriefPredicates(t *testing.T) {
	parse := func(s string) Brief {
		b, err := ParseBrief([]byte(s))
		require.NoError(t, err)
		return b
	}
	sleep, empty, kthreadd, kworker := parse(sleepLine), parse(emptyEnvLine), parse(kthreaddLine), parse(kworkerLine)

	assert.False(t, sleep.KernelThread())
	assert.False(t, empty.KernelThread())
	assert.True(t, kthreadd.KernelThread(), "kthreadd has parent 0, and PF_KTHREAD")
	assert.True(t, kworker.KernelThread())

	assert.True(t, sleep.EnvReady())
	assert.True(t, empty.EnvReady(), "an empty environment is in place")
	assert.Equal(t, empty.EnvStart, empty.EnvEnd)
	assert.False(t, kthreadd.EnvReady())

	assert.False(t, sleep.Zombie())
	assert.True(t, Brief{State: 'Z'}.Zombie())
	assert.True(t, Brief{State: 'X'}.Zombie())
}

func TestParseBriefMalformed(t *testing.T) {
	tests := []struct {
		name, in, wantMsg string
	}{
		{"empty", "", "no '('"},
		{"unclosed comm", "12 (sh S 1 2 3", "no ')'"},
		{"zero pid", "0 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 1 (pid)"},
		{"truncated", "12 (sh) S 1 2 3 4", "has 7 fields, want at least 22"},
		{"long state", "12 (sh) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 3 (state)"},
		{"bad pgrp", "12 (sh) S 1 x 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 5 (pgrp)"},
		{"negative flags", "12 (sh) S 1 2 3 4 5 -6 7 8 9 10 11 12 13 14 15 16 17 18 19", "field 9 (flags)"},
		{"bad starttime", "12 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 1x", "field 22 (starttime)"},
		{"bad env_end", "12 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 " +
			"23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 -51", "field 51 (env_end)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBrief([]byte(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestParseBriefAllocatesNothing(t *testing.T) {
	in := []byte(sleepLine)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ParseBrief(in); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// FuzzParseBrief checks that ParseBrief never panics, wraps ErrMalformed, and agrees with
// ParseStat on every line both accept.
func FuzzParseBrief(f *testing.F) {
	for _, s := range []string{sleepLine, emptyEnvLine, kthreaddLine, kworkerLine,
		"85 (sh) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "12 (sh) S 1 2 3 4", ")(", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		br, err := ParseBrief(b)
		st, serr := ParseStat(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if br.Pid <= 0 {
			t.Fatalf("accepted non-positive pid %d", br.Pid)
		}
		if serr != nil {
			return // fields ParseStat reads and ParseBrief does not (session, tty, tpgid) are bad
		}
		if br.Pid != st.Pid || br.State != st.State || br.PPid != st.PPid || br.Pgrp != st.Pgrp || br.StartTime != st.StartTime {
			t.Fatalf("ParseBrief %+v disagrees with ParseStat %+v", br, st)
		}
	})
}
