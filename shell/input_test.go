package shell

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The watch's decisions, with a fake probe and a fake clock: no wait is believed before the
// output has been quiet for the settle and two probes agree; output or typing starts over; a
// group that does not read the terminal is probed with a growing back-off; a platform without
// probes turns the watch off.
func TestInputWatch(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var calls int
	result := probe{blocked: true, sig: "a"}
	inspect := func(context.Context) (probe, error) { calls++; return result, nil }

	w := inputWatch{settle: 100 * time.Millisecond}
	w.reset(at(0), 10)
	p, next := w.look(ctx, at(10), 10, time.Time{}, inspect)
	assert.Nil(t, p)
	assert.Equal(t, 40*time.Millisecond, next, "the first probe at half the settle")
	assert.Zero(t, calls)

	p, next = w.look(ctx, at(50), 10, time.Time{}, inspect)
	assert.Nil(t, p, "one probe is not enough")
	assert.Equal(t, 50*time.Millisecond, next)
	p, _ = w.look(ctx, at(100), 10, time.Time{}, inspect)
	require.NotNil(t, p, "two probes agree over the settle")
	p, _ = w.look(ctx, at(5000), 10, time.Time{}, inspect)
	assert.NotNil(t, p, "a later look confirms at once")

	// Output arrived (at 5010): the quiet starts over from when it came.
	p, next = w.look(ctx, at(5020), 11, at(5010), inspect)
	assert.Nil(t, p)
	assert.Equal(t, 40*time.Millisecond, next)
	p, _ = w.look(ctx, at(5060), 11, at(5010), inspect)
	assert.Nil(t, p)
	result.sig = "b" // it ran in between
	p, _ = w.look(ctx, at(5110), 11, at(5010), inspect)
	assert.Nil(t, p, "the two probes disagree")
	p, _ = w.look(ctx, at(5135), 11, at(5010), inspect)
	assert.NotNil(t, p)

	// Weak evidence takes four settles.
	result.weak = true
	w.reset(at(6000), 11)
	w.look(ctx, at(6050), 11, time.Time{}, inspect)
	p, next = w.look(ctx, at(6100), 11, time.Time{}, inspect)
	assert.Nil(t, p)
	assert.Equal(t, 300*time.Millisecond, next)
	p, _ = w.look(ctx, at(6400), 11, time.Time{}, inspect)
	assert.NotNil(t, p)

	// Not reading the terminal: probed again with a back-off that grows to a second.
	result = probe{}
	w.reset(at(7000), 11)
	var nexts []time.Duration
	now := at(7050)
	for i := 0; i < 8; i++ {
		p, next = w.look(ctx, now, 11, time.Time{}, inspect)
		assert.Nil(t, p)
		nexts = append(nexts, next)
		now = now.Add(next)
	}
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
		400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second, time.Second}, nexts)

	// No probes on this platform: the watch turns itself off.
	w.reset(at(9000), 11)
	p, next = w.look(ctx, at(9100), 11, time.Time{}, func(context.Context) (probe, error) { return probe{}, errNoProbe })
	assert.Nil(t, p)
	assert.Zero(t, next)
	assert.True(t, w.noProbe)

	// A failed probe counts as not waiting.
	w = inputWatch{settle: 100 * time.Millisecond}
	w.reset(at(0), 0)
	p, _ = w.look(ctx, at(60), 0, time.Time{}, func(context.Context) (probe, error) { return probe{}, errors.New("boom") })
	assert.Nil(t, p)
	assert.False(t, w.noProbe)
}

func TestLastLine(t *testing.T) {
	assert.Equal(t, ">>> ", lastLine("2\n>>> "))
	assert.Equal(t, "", lastLine("done\n"))
	long := string(make([]byte, 300)) + "é"
	assert.LessOrEqual(t, len(lastLine(long)), 256)
}

// Input typed to a group that has not run since is unread, however blocked the group looks:
// no wait is believed until a probe shows that it ran. A part of a line in line mode wakes
// nobody, so it changes nothing.
func TestInputWatchTypedUnread(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	result := probe{blocked: true, sig: "a", wait: InputWait{ModesKnown: true, LineMode: true}}
	inspect := func(context.Context) (probe, error) { return result, nil }

	w := inputWatch{settle: 100 * time.Millisecond}
	w.typing(ctx, []byte("ls\n"), inspect)
	w.reset(at(0), 10)
	w.look(ctx, at(50), 10, time.Time{}, inspect)
	p, next := w.look(ctx, at(100), 10, time.Time{}, inspect)
	assert.Nil(t, p, "the group has not run since the line was typed")
	assert.Equal(t, 25*time.Millisecond, next)
	p, _ = w.look(ctx, at(1000), 10, time.Time{}, inspect)
	assert.Nil(t, p, "still not")

	result.sig = "b" // it ran: it read the line, and blocks again
	p, _ = w.look(ctx, at(1025), 10, time.Time{}, inspect)
	assert.Nil(t, p, "one probe since it ran")
	p, _ = w.look(ctx, at(1075), 10, time.Time{}, inspect)
	assert.NotNil(t, p)

	w.typing(ctx, []byte("par"), inspect)
	assert.Empty(t, w.typed, "part of a line in line mode")
	result.wait.LineMode = false
	w.typing(ctx, []byte("k"), inspect)
	assert.Equal(t, "b", w.typed, "a key without line mode")

	w.typing(ctx, []byte("x\n"), func(context.Context) (probe, error) { return probe{}, errNoProbe })
	assert.True(t, w.noProbe)
	assert.Empty(t, w.typed)
}
