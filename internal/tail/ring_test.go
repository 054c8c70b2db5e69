package tail

import (
	"bytes"
	"testing"
)

// model is the obvious implementation: keep the whole stream.
type model struct{ all []byte }

func (m *model) check(t testing.TB, r *Ring, from int64, max int) {
	t.Helper()
	got, at := r.ReadAt(from, max)
	start := int64(len(m.all)) - int64(min(len(m.all), r.Limit()))
	wantAt := max64(from, start)
	var want []byte
	if wantAt < int64(len(m.all)) {
		want = m.all[wantAt:]
		if max > 0 && len(want) > max {
			want = want[:max]
		}
	}
	if at != wantAt || !bytes.Equal(got, want) {
		t.Fatalf("ReadAt(%d,%d) = %q@%d, want %q@%d (limit %d total %d)", from, max, got, at, want, wantAt, r.Limit(), len(m.all))
	}
	if r.Total() != int64(len(m.all)) {
		t.Fatalf("Total = %d, want %d", r.Total(), len(m.all))
	}
	if tailWant := m.all[start:]; !bytes.Equal(r.Bytes(), tailWant) {
		t.Fatalf("Bytes = %q, want %q", r.Bytes(), tailWant)
	}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func TestRingAgainstModel(t *testing.T) {
	for _, limit := range []int{0, 1, 3, 7, 64} {
		r, m := New(limit), &model{}
		for i, w := range []string{"a", "bc", "defgh", "", "ijklmnopqrstuvwxyz0123456789", "x", "yz"} {
			r.Write([]byte(w))
			m.all = append(m.all, w...)
			for from := int64(0); from <= int64(len(m.all))+1; from++ {
				for _, mx := range []int{0, 1, 2, 5} {
					m.check(t, r, from, mx)
				}
			}
			if cap(r.buf) > limit {
				t.Fatalf("step %d: buffer cap %d exceeds limit %d", i, cap(r.buf), limit)
			}
		}
	}
}

func FuzzRing(f *testing.F) {
	f.Add(5, []byte("hello world, this is a stream"), uint8(3), int64(2), 4)
	f.Add(1, []byte("ab"), uint8(1), int64(0), 0)
	f.Add(64, []byte{0xff, 0, 1}, uint8(7), int64(100), -1)
	f.Fuzz(func(t *testing.T, limit int, data []byte, chunk uint8, from int64, max int) {
		if limit < 0 || limit > 1<<12 || from < -1 {
			t.Skip()
		}
		r, m := New(limit), &model{}
		step := int(chunk) + 1
		for len(data) > 0 {
			n := min(step, len(data))
			r.Write(data[:n])
			m.all = append(m.all, data[:n]...)
			data = data[n:]
			m.check(t, r, max64(from, 0), max)
		}
		if cap(r.buf) > limit {
			t.Fatalf("buffer cap %d exceeds limit %d", cap(r.buf), limit)
		}
	})
}
