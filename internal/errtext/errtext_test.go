package errtext

import (
	"errors"
	"testing"
)

func TestFormat(t *testing.T) {
	kind, cause := errors.New("not found"), errors.New("stat x: no such file")
	for _, c := range []struct {
		got, want string
	}{
		{Format("pkg", "spawn", "x", kind, cause, "check it"), "pkg: spawn x: not found: stat x: no such file (check it)"},
		{Format("pkg", "spawn", "", nil, cause, ""), "pkg: spawn: stat x: no such file"},
		{Format("pkg", "close", "", kind, errors.New("not found"), ""), "pkg: close: not found"},
		{Format("pkg", "close", "", nil, nil, ""), "pkg: close"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if got := Unwrap(nil, cause); len(got) != 1 || got[0] != cause {
		t.Errorf("Unwrap(nil, cause) = %v", got)
	}
	if got := Unwrap(kind, cause); len(got) != 2 {
		t.Errorf("Unwrap(kind, cause) = %v", got)
	}
}
