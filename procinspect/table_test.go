package procinspect_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
)

func pr(pid int, start uint64, ppid, pgid, sid int) procinspect.Proc {
	return procinspect.Proc{Identity: procinspect.Identity{Pid: pid, Start: start}, PPid: ppid, Pgid: pgid, Sid: sid}
}

func pids(ps []procinspect.Proc) []int {
	out := []int{}
	for _, p := range ps {
		out = append(out, p.Pid)
	}
	return out
}

// fixture:
//
//	1 init (start 1)
//	├── 100 shell (start 500), session 100
//	│   ├── 110 job leader (start 600), group 110
//	│   │   ├── 111 (start 610)
//	│   │   │   └── 112 (start 700)
//	│   │   └── 113 (start 400)   stale: started before its "parent" 110
//	│   │       └── 114 (start 800)  below a stale link, excluded too
//	│   └── 120 (start 900)
//	└── 200 other session (start 50)
//	    └── 210 (start 60)
func fixture() *procinspect.Table {
	return procinspect.NewTable([]procinspect.Proc{
		pr(210, 60, 200, 200, 200),
		pr(1, 1, 0, 1, 1),
		pr(100, 500, 1, 100, 100),
		pr(110, 600, 100, 110, 100),
		pr(111, 610, 110, 110, 100),
		pr(112, 700, 111, 110, 100),
		pr(113, 400, 110, 110, 100),
		pr(114, 800, 113, 110, 100),
		pr(120, 900, 100, 100, 100),
		pr(200, 50, 1, 200, 200),
	})
}

func TestIdentityString(t *testing.T) {
	assert.Equal(t, "1234@98765", procinspect.Identity{Pid: 1234, Start: 98765}.String())
	assert.Equal(t, "0@0", procinspect.Identity{}.String())
	assert.Equal(t, "7@18446744073709551615", procinspect.Identity{Pid: 7, Start: ^uint64(0)}.String())
}

func TestTableProcsSortedAndCopied(t *testing.T) {
	tab := fixture()
	got := tab.Procs()
	assert.Equal(t, []int{1, 100, 110, 111, 112, 113, 114, 120, 200, 210}, pids(got))
	got[0].Pid = 999
	assert.Equal(t, 1, tab.Procs()[0].Pid, "Procs must return a copy")
}

func TestNewTableCopiesInputAndLastDuplicateWins(t *testing.T) {
	in := []procinspect.Proc{pr(5, 1, 1, 5, 5), pr(5, 2, 1, 5, 5), pr(3, 1, 1, 3, 3)}
	tab := procinspect.NewTable(in)
	in[1].Start = 77
	p, ok := tab.Get(5)
	require.True(t, ok)
	assert.Equal(t, uint64(2), p.Start)
	assert.Equal(t, []int{3, 5}, pids(tab.Procs()))
}

func TestTableGet(t *testing.T) {
	tab := fixture()
	p, ok := tab.Get(111)
	require.True(t, ok)
	assert.Equal(t, procinspect.Identity{Pid: 111, Start: 610}, p.Identity)
	_, ok = tab.Get(4242)
	assert.False(t, ok)
}

func TestTableChildren(t *testing.T) {
	tab := fixture()
	assert.Equal(t, []int{111}, pids(tab.Children(procinspect.Identity{Pid: 110, Start: 600})),
		"113 started before 110 and is not its child")
	assert.Equal(t, []int{110, 120}, pids(tab.Children(procinspect.Identity{Pid: 100, Start: 500})))
	assert.Empty(t, tab.Children(procinspect.Identity{Pid: 100, Start: 1000}),
		"a later holder of pid 100 has none of these children")
	assert.Equal(t, []int{1}, pids(tab.Children(procinspect.Identity{Pid: 0, Start: 0})))
}

func TestTableDescendants(t *testing.T) {
	tab := fixture()
	assert.Equal(t, []int{110, 120, 111, 112}, pids(tab.Descendants(procinspect.Identity{Pid: 100, Start: 500})),
		"breadth-first; 113 (started before its parent) and 114 below it are fenced out")
	assert.Equal(t, []int{111, 112}, pids(tab.Descendants(procinspect.Identity{Pid: 110, Start: 600})))
	assert.Empty(t, tab.Descendants(procinspect.Identity{Pid: 112, Start: 700}))
	assert.Equal(t, []int{210}, pids(tab.Descendants(procinspect.Identity{Pid: 200, Start: 50})))
}

func TestTableDescendantsRootMustMatch(t *testing.T) {
	tab := fixture()
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: 100, Start: 499}), "start mismatch")
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: 100, Start: 501}), "start mismatch")
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: 4242, Start: 1}), "absent root")
}

func TestTableDescendantsToleratesCycles(t *testing.T) {
	// Impossible on a real system, but a fixture may hold one.
	tab := procinspect.NewTable([]procinspect.Proc{
		pr(10, 5, 11, 10, 10),
		pr(11, 5, 10, 10, 10),
		pr(12, 5, 12, 10, 10), // its own parent
	})
	assert.Equal(t, []int{11}, pids(tab.Descendants(procinspect.Identity{Pid: 10, Start: 5})))
	assert.Empty(t, tab.Descendants(procinspect.Identity{Pid: 12, Start: 5}))
}

func TestTableSessionAndGroup(t *testing.T) {
	tab := fixture()
	assert.Equal(t, []int{100, 110, 111, 112, 113, 114, 120}, pids(tab.Session(100)))
	assert.Equal(t, []int{200, 210}, pids(tab.Session(200)))
	assert.Equal(t, []int{110, 111, 112, 113, 114}, pids(tab.Group(110)))
	assert.Equal(t, []int{100, 120}, pids(tab.Group(100)))
	assert.Empty(t, tab.Session(4242))
	assert.Empty(t, tab.Group(4242))
}

func TestNilTable(t *testing.T) {
	var tab *procinspect.Table
	assert.Empty(t, tab.Procs())
	_, ok := tab.Get(1)
	assert.False(t, ok)
	assert.Empty(t, tab.Children(procinspect.Identity{Pid: 1}))
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: 1}))
	assert.Empty(t, tab.Session(1))
	assert.Empty(t, tab.Group(1))
}

func TestEmptyTable(t *testing.T) {
	tab := procinspect.NewTable(nil)
	assert.Empty(t, tab.Procs())
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: 1}))
}
