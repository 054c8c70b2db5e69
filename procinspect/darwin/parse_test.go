package darwin

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func utcSeconds(t *testing.T, lstart string) uint64 {
	t.Helper()
	ts, err := time.Parse("Mon Jan _2 15:04:05 2006 MST", lstart+" UTC")
	require.NoError(t, err)
	return uint64(ts.Unix())
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

func TestParseFixture(t *testing.T) {
	recs, err := Parse(readFixture(t, "ps_axww.txt"))
	require.NoError(t, err)
	require.Len(t, recs, 19)

	byPid := map[int]Record{}
	for _, r := range recs {
		byPid[r.Pid] = r
		assert.Equal(t, -1, r.Sid, "Parse leaves Sid unknown")
	}

	assert.Equal(t, Record{
		Pid: 1, PPid: 0, Pgid: 1, Sid: -1, Tpgid: 0, Tty: 0, State: "Ss",
		Start: utcSeconds(t, "Mon Nov  3 08:14:22 2025"), Comm: "/sbin/launchd",
	}, byPid[1], "launchd, single-digit day padded with a space")
	assert.Equal(t, uint64(1762157662), byPid[1].Start)

	chrome := byPid[1822]
	assert.Equal(t, "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome", chrome.Comm)
	assert.Equal(t, utcSeconds(t, "Thu Nov 13 09:02:44 2025"), chrome.Start, "two-digit day")
	renderer := byPid[1834]
	assert.Equal(t, 1822, renderer.PPid)
	assert.Equal(t, 1822, renderer.Pgid)
	assert.True(t, strings.HasSuffix(renderer.Comm, "/Google Chrome Helper (Renderer).app/Contents/MacOS/Google Chrome Helper (Renderer)"), renderer.Comm)

	assert.Equal(t, "(mds_stores)", byPid[93].Comm, "short name when ps may not read the arguments")

	sleep := byPid[2212]
	assert.Equal(t, uint64(16<<24), sleep.Tty, "ttys000 is major 16, minor 0")
	assert.Equal(t, 2212, sleep.Tpgid)
	assert.Equal(t, "S+", sleep.State)
	assert.False(t, sleep.Zombie())
	assert.Equal(t, uint64(16<<24|1), byPid[3311].Tty, "ttys001 is 16/1")
	assert.Equal(t, "-bash", byPid[3311].Comm)

	z := byPid[2215]
	assert.True(t, z.Zombie())
	assert.Equal(t, "(sleep)", z.Comm)

	assert.Equal(t, "/Users/dev/Library/Application Support/Code/User/globalStorage/server with spaces/bin/lang server", byPid[41234].Comm)
	py := byPid[98765]
	assert.Equal(t, 41234, py.PPid)
	assert.Equal(t, "SNs", py.State)
	assert.Equal(t, "/usr/bin/python3", py.Comm, "trailing blanks trimmed")
	assert.Equal(t, utcSeconds(t, "Sun Nov 16 07:01:00 2025"), py.Start)
}

func TestParseSkipsHeaderAndBlankLines(t *testing.T) {
	in := append(readFixture(t, "ps_header.txt"), "\n\n"...)
	recs, err := Parse(in)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, 1, recs[0].Pid)
	assert.Equal(t, 88, recs[1].Pid)
}

func TestParseCRLFAndNoFinalNewline(t *testing.T) {
	recs, err := Parse([]byte("    1     0     1    0   ?? Ss   Mon Nov  3 08:14:22 2025     /sbin/launchd\r\n  2 1 2 0 ?? S Mon Nov  3 08:14:23 2025 x"))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, "/sbin/launchd", recs[0].Comm)
	assert.Equal(t, "x", recs[1].Comm)
}

func TestParseEmpty(t *testing.T) {
	recs, err := Parse(nil)
	require.NoError(t, err)
	assert.Empty(t, recs)
}

func TestParseMalformed(t *testing.T) {
	const good = "    1     0     1    0   ?? Ss   Mon Nov  3 08:14:22 2025     /sbin/launchd\n"
	tests := []struct {
		name, line, want string
	}{
		{"truncated", "   12     1    12", "3 fields, want at least 11"},
		{"lstart cut", "   12     1    12    0   ?? S    Mon Nov  3", "9 fields"},
		{"pid not a number", "   1x     1    12    0   ?? S    Mon Nov  3 08:14:22 2025 a", "pid \"1x\""},
		{"negative ppid", "   12    -1    12    0   ?? S    Mon Nov  3 08:14:22 2025 a", "ppid \"-1\""},
		{"bad tdev", "   12     1    12    0   tty S    Mon Nov  3 08:14:22 2025 a", "tdev \"tty\""},
		{"tdev major too big", "   12     1    12    0 999/1 S    Mon Nov  3 08:14:22 2025 a", "tdev \"999/1\""},
		{"bad month", "   12     1    12    0   ?? S    Mon Foo  3 08:14:22 2025 a", "lstart \"Mon Foo 3 08:14:22 2025\""},
		{"localized date", "   12     1    12    0   ?? S    lun  3 nov 08:14:22 2025 a", "lstart"},
		{"bad time", "   12     1    12    0   ?? S    Mon Nov  3 8h14 2025 a", "lstart"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(good + tc.line + "\n" + good))
			require.Error(t, err)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "%T", err)
			assert.Equal(t, 2, pe.Line)
			assert.Equal(t, tc.line, pe.Text)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.Contains(t, err.Error(), "ps output line 2")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseErrorTextIsBounded(t *testing.T) {
	_, err := Parse([]byte("1 2 " + strings.Repeat("x", 5000)))
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Len(t, pe.Text, 200)
}

func TestArgs(t *testing.T) {
	assert.Equal(t, []string{"-axww", "-o", Columns}, Args())
	assert.Equal(t, []string{"-ww", "-o", Columns, "-p", "12,345"}, Args(12, 345))
	assert.Equal(t, []string{"LC_ALL=C", "TZ=UTC0"}, Env())
	assert.True(t, strings.HasSuffix(Columns, ",comm="), "comm must be the last column")
}

func FuzzParse(f *testing.F) {
	f.Add(readFixtureF(f, "ps_axww.txt"))
	f.Add(readFixtureF(f, "ps_header.txt"))
	f.Add([]byte("    1     0     1    0   ?? Ss   Mon Nov  3 08:14:22 2025     /sbin/launchd\n"))
	f.Add([]byte(" 2212  2211  2212 2212 16/0 S+   Fri Nov 14 10:31:17 2025     sleep"))
	f.Add([]byte("1 2 3 4 255/16777215 Z Mon Jan 1 00:00:00 1970"))
	f.Add([]byte("PID\n1"))
	f.Add([]byte("\r\n\t \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Parse(b)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not a *ParseError wrapping ErrMalformed", err)
			}
			if len(pe.Text) > 200 || pe.Line < 1 {
				t.Fatalf("bad ParseError %+v", pe)
			}
			return
		}
		for _, r := range recs {
			if r.Pid < 0 || r.PPid < 0 || r.Pgid < 0 || r.Sid != -1 {
				t.Fatalf("bad record %+v", r)
			}
		}
	})
}

func readFixtureF(f *testing.F, name string) []byte {
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
