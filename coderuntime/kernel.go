package coderuntime

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/subprocess"
)

// Bounds of a kernel's bookkeeping.
const (
	// followTail is the tail the Service keeps of each of the interpreter's streams: how far
	// the output may run ahead of the follower that splits it into cells before bytes are
	// lost (counted, never silently).
	followTail = 1 << 20
	// followChunk is the most one read of a stream takes.
	followChunk = 256 << 10
	// maxResults and maxResultBytes bound the results one Execution keeps; more are counted
	// in ResultsDropped.
	maxResults     = 1000
	maxResultBytes = 64 << 20
	// maxBackgroundErrors bounds the background errors one Execution keeps; more are counted
	// in BackgroundErrorsDropped.
	maxBackgroundErrors = 100
)

// kernel is one interpreter process running a session driver, and its control channel.
type kernel struct {
	lang    Language
	h       *subprocess.Handle
	conn    net.Conn
	log     *slog.Logger
	grace   time.Duration
	version string

	writeMu sync.Mutex

	mu      sync.Mutex
	count   int        // cells sent
	cell    *cellState // the cell running, or nil
	pending [2]*streamBuf
	pendRes resultSet
	pendBg  backgroundSet
	probes  map[string]chan struct{}
	budgets [2]int

	dead        chan struct{} // closed when the control channel has ended
	deadErr     error         // why, set before dead is closed
	streamsDone chan struct{} // closed when both stream followers have returned
	stopFollow  chan struct{} // closed to make the followers return, should their streams never end
	wg          sync.WaitGroup

	stopOnce sync.Once
	stopErr  error
	exit     ExitStatus
}

// cellState is one cell being run: what the reader and the followers gather for it.
type cellState struct {
	id, nonce string
	count     int
	cb        Callbacks

	// Guarded by the kernel's mu.
	out        [2]*streamBuf
	marked     [2]bool // the stream's end marker was seen: what follows is not the cell's
	results    resultSet
	background backgroundSet
	reply      *message
	replied    chan struct{} // closed when the driver said done
	started    chan struct{} // closed when the driver said the cell's code is about to run (python3)
	syncDone   chan struct{} // closed when the driver said the cell's synchronous part ended (node)
	changed    chan struct{} // signalled (capacity 1) when a marker is seen

	// The callbacks run one at a time, never after the cell is closed.
	cbMu   sync.Mutex
	closed bool
	carry  [2][]byte // the start of a UTF-8 character the next chunk completes
}

// resultSet is a bounded list of results.
type resultSet struct {
	list    []CellResult
	bytes   int
	dropped int
}

func (rs *resultSet) add(r CellResult) bool {
	n := 0
	for k, v := range r.MIME {
		n += len(k) + len(v)
	}
	if len(rs.list) >= maxResults || rs.bytes+n > maxResultBytes {
		rs.dropped++
		return false
	}
	rs.list = append(rs.list, r)
	rs.bytes += n
	return true
}

// backgroundSet is a bounded list of background errors.
type backgroundSet struct {
	list    []BackgroundError
	dropped int
}

func (bs *backgroundSet) add(e BackgroundError) bool {
	if len(bs.list) >= maxBackgroundErrors {
		bs.dropped++
		return false
	}
	bs.list = append(bs.list, e)
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// startKernel spawns the interpreter with the driver, accepts its connection on the control
// socket and checks its hello. ctx and startTimeout bound the whole of it.
func (s *procSession) startKernel(ctx context.Context) (*kernel, error) {
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout)
	defer cancel()
	ln, release, err := listenControl(s.dir, controlName)
	if err != nil {
		return nil, s.fail("start", fmt.Errorf("control socket: %w", err))
	}
	defer release()
	defer func() {
		if err := ln.Close(); err != nil { // removes the socket file
			s.rt.log.Warn("coderuntime: closing a session's control socket listener", "language", s.lang, "err", err)
		}
	}()

	token := randomHex(16)
	env := append(append(append([]string(nil), s.info.env...), s.env...), s.extraEnv...)
	env = append(env, "SUBKIT_SESSION_TOKEN="+token)
	spec := subprocess.Spec{
		Path: s.path, Args: s.info.args(s.info.driverFile, controlName, s.workArg),
		Dir: s.dir, Env: env, Grace: s.grace, DrainGrace: min(s.grace, drainGrace),
		Stdout: subprocess.Output{TailBytes: followTail},
		Stderr: subprocess.Output{TailBytes: followTail},
	}
	h, err := s.rt.svc.Spawn(ctx, spec)
	if err != nil {
		return nil, s.rt.spawnError(s.lang, s.path, err)
	}
	conn, err := acceptControl(ctx, ln, h)
	if err == nil {
		err = checkHello(ctx, conn, token)
		if err != nil {
			err = errors.Join(err, conn.Close())
		}
	}
	if err != nil {
		// Before the driver answered: end the interpreter and say what it printed.
		exited := done.Closed(h.Done())
		bound, cancel := context.WithTimeout(context.Background(), endBound(s.grace))
		defer cancel()
		terr := h.Terminate(bound)
		res, werr := h.Wait(bound)
		cerr := h.Close()
		why := fmt.Errorf("the session driver did not start: %w", err)
		if exited {
			why = fmt.Errorf("%w (%s exited %s)", why, s.lang, exitText(res))
		}
		if werr == nil && res.Stderr.TotalBytes > 0 {
			why = fmt.Errorf("%w; its stderr: %s", why, strings.TrimSpace(string(trimCut(res.Stderr.Tail, res.Stderr.Truncated))))
		}
		return nil, s.fail("start", errors.Join(why, terr, werr, cerr))
	}

	k := &kernel{
		lang: s.lang, h: h, conn: conn, log: s.rt.log, grace: s.grace,
		probes: map[string]chan struct{}{}, budgets: s.budgets,
		dead: make(chan struct{}), streamsDone: make(chan struct{}), stopFollow: make(chan struct{}),
	}
	for i := range k.pending {
		k.pending[i] = newStreamBuf(s.budgets[i])
	}
	k.wg.Add(4)
	go k.read(bufio.NewReaderSize(conn, 64<<10))
	var followers sync.WaitGroup
	followers.Add(2)
	for i, st := range []subprocess.Stream{subprocess.Stdout, subprocess.Stderr} {
		go func() {
			defer k.wg.Done()
			defer followers.Done()
			k.follow(st, i)
		}()
	}
	go func() {
		defer k.wg.Done()
		followers.Wait()
		close(k.streamsDone)
	}()
	return k, nil
}

func exitText(r subprocess.Result) string {
	if r.Signal != "" {
		return "by " + r.Signal
	}
	return fmt.Sprintf("with status %d", r.ExitCode)
}

// acceptControl accepts the driver's connection, or fails when ctx ends or the interpreter
// exits first.
func acceptControl(ctx context.Context, ln *net.UnixListener, h *subprocess.Handle) (net.Conn, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-h.Done():
		case <-stop:
			return
		}
		ln.SetDeadline(time.Unix(1, 0)) // unblocks Accept
	})
	conn, err := ln.AcceptUnix()
	close(stop)
	wg.Wait()
	if err != nil {
		switch {
		case done.Closed(h.Done()):
			return nil, errors.New("the interpreter exited before it connected")
		case ctx.Err() != nil:
			return nil, fmt.Errorf("waiting for the driver to connect: %w", ctx.Err())
		}
		return nil, err
	}
	return conn, nil
}

// checkHello reads the driver's first message and checks its token.
func checkHello(ctx context.Context, conn net.Conn, token string) error {
	if d, ok := ctx.Deadline(); ok {
		if err := conn.SetReadDeadline(d); err != nil {
			return err
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	m, err := readFrame(conn)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the driver's hello: %w", ctx.Err())
		}
		return fmt.Errorf("reading the driver's hello: %w", err)
	}
	if m.Type != "hello" || subtle.ConstantTimeCompare([]byte(m.Token), []byte(token)) != 1 {
		return errors.New("the control socket's peer is not the session's driver")
	}
	return conn.SetReadDeadline(time.Time{})
}

// read dispatches the driver's messages until the channel ends.
func (k *kernel) read(r *bufio.Reader) {
	defer k.wg.Done()
	for {
		m, err := readFrame(r)
		if err != nil {
			k.deadErr = err
			close(k.dead)
			return
		}
		k.dispatch(m)
	}
}

func (k *kernel) dispatch(m *message) {
	switch m.Type {
	case "result":
		r := CellResult{MIME: m.MIME, Main: m.Main, FromCell: max(m.Count, 0)}
		if r.MIME == nil {
			r.MIME = map[string]string{}
		}
		if _, ok := r.MIME["text/plain"]; !ok {
			r.MIME["text/plain"] = ""
		}
		k.mu.Lock()
		c := k.cell
		kept := false
		if c != nil && c.reply == nil {
			kept = c.results.add(r)
		} else {
			k.pendRes.add(r)
		}
		k.mu.Unlock()
		if kept {
			c.call(func(cb *Callbacks) {
				if cb.Result != nil {
					cb.Result(r)
				}
			})
		}
	case "background_error":
		if m.Error == nil {
			k.log.Warn("coderuntime: a background error without its error from the session driver", "language", k.lang)
			return
		}
		e := BackgroundError{Cell: max(m.Count, 0), CodeError: *m.Error}
		k.mu.Lock()
		c := k.cell
		kept := false
		if c != nil && c.reply == nil {
			kept = c.background.add(e)
		} else {
			k.pendBg.add(e)
		}
		k.mu.Unlock()
		if kept {
			c.call(func(cb *Callbacks) {
				if cb.BackgroundError != nil {
					cb.BackgroundError(e)
				}
			})
		}
	case "done":
		k.mu.Lock()
		if c := k.cell; c != nil && m.Cell == c.id && c.reply == nil {
			c.reply = m
			close(c.replied)
		}
		k.mu.Unlock()
	case "started":
		k.mu.Lock()
		if c := k.cell; c != nil && m.Cell == c.id && !done.Closed(c.started) {
			close(c.started)
		}
		k.mu.Unlock()
	case "sync_done":
		k.mu.Lock()
		if c := k.cell; c != nil && m.Cell == c.id && !done.Closed(c.syncDone) {
			close(c.syncDone)
		}
		k.mu.Unlock()
	case "probe_ok":
		k.mu.Lock()
		if ch, ok := k.probes[m.ID]; ok {
			close(ch)
			delete(k.probes, m.ID)
		}
		k.mu.Unlock()
	default:
		k.log.Warn("coderuntime: unknown message from the session driver", "language", k.lang, "type", m.Type)
	}
}

// follow reads stream st (index i) of the interpreter until it ends, splitting it into cells
// at the end markers.
func (k *kernel) follow(st subprocess.Stream, i int) {
	var sc scanner
	text := func(p []byte) { k.text(i, p) }
	mark := func(nonce string) { k.mark(i, nonce) }
	var off int64
	for {
		wake := k.h.Updated(st) // before the read, so no write between them is missed
		d, err := k.h.ReadOutput(st, off, followChunk)
		if err != nil {
			k.log.Warn("coderuntime: reading the session's output", "language", k.lang, "stream", st, "err", err)
			break
		}
		if d.Dropped > 0 {
			sc.flush(text)
			k.lose(i, d.Dropped)
		}
		if len(d.Data) > 0 {
			sc.feed(d.Data, text, mark)
		}
		off = d.Next
		if d.Done {
			break
		}
		if len(d.Data) == 0 && d.Dropped == 0 {
			select {
			case <-wake:
			case <-k.stopFollow:
				sc.flush(text)
				return
			}
		}
	}
	sc.flush(text)
}

// target is where stream i's bytes go now: the running cell until its marker, else pending.
// Called with k.mu held.
func (k *kernel) target(i int) (*streamBuf, *cellState) {
	if c := k.cell; c != nil && !c.marked[i] {
		return c.out[i], c
	}
	return k.pending[i], nil
}

func (k *kernel) text(i int, p []byte) {
	k.mu.Lock()
	buf, c := k.target(i)
	buf.write(p)
	k.mu.Unlock()
	if c != nil {
		c.deliver(i, p)
	}
}

func (k *kernel) lose(i int, n int64) {
	k.mu.Lock()
	buf, _ := k.target(i)
	buf.lose(n)
	k.mu.Unlock()
}

func (k *kernel) mark(i int, nonce string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.cell; c != nil && nonce == c.nonce && !c.marked[i] {
		c.marked[i] = true
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

// gone reports whether the interpreter is gone or its channel broken.
func (k *kernel) gone() bool { return done.Closed(k.dead) || done.Closed(k.h.Done()) }

// send writes m, bounded by ctx. A frame written whole is sent even when ctx ends just then:
// the deadline that cut it is lifted again, so the next send is not refused.
func (k *kernel) send(ctx context.Context, m *message) error {
	k.writeMu.Lock()
	defer k.writeMu.Unlock()
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		k.conn.SetWriteDeadline(time.Unix(1, 0))
		close(cut)
	})
	err := writeFrame(k.conn, m)
	if !stop() { // the deadline is being set, or was: wait for it, and lift it after a whole frame
		<-cut
		if err == nil {
			err = k.conn.SetWriteDeadline(time.Time{})
		}
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// begin makes the next cell the running one. What arrived since the last cell is its first
// output and its first results.
func (k *kernel) begin(cb Callbacks) *cellState {
	k.mu.Lock()
	k.count++
	c := &cellState{
		id: fmt.Sprintf("c%d", k.count), nonce: randomHex(nonceLen / 2), count: k.count, cb: cb,
		replied: make(chan struct{}), started: make(chan struct{}), syncDone: make(chan struct{}), changed: make(chan struct{}, 1),
	}
	var early [2][]byte
	for i, p := range k.pending {
		c.out[i] = p
		early[i] = p.ring.Bytes()
		k.pending[i] = newStreamBuf(k.budgets[i])
	}
	c.results, k.pendRes = k.pendRes, resultSet{}
	results := append([]CellResult(nil), c.results.list...)
	c.background, k.pendBg = k.pendBg, backgroundSet{}
	background := append([]BackgroundError(nil), c.background.list...)
	k.cell = c
	k.mu.Unlock()
	for i, p := range early {
		if len(p) > 0 {
			c.deliver(i, p)
		}
	}
	for _, r := range results {
		c.call(func(cb *Callbacks) {
			if cb.Result != nil {
				cb.Result(r)
			}
		})
	}
	for _, e := range background {
		c.call(func(cb *Callbacks) {
			if cb.BackgroundError != nil {
				cb.BackgroundError(e)
			}
		})
	}
	return c
}

// probe sends a probe and returns the channel closed when the driver answers it.
func (k *kernel) probe(ctx context.Context) (<-chan struct{}, error) {
	id := "p" + randomHex(8)
	ch := make(chan struct{})
	k.mu.Lock()
	k.probes[id] = ch
	k.mu.Unlock()
	if err := k.send(ctx, &message{Type: "probe", ID: id}); err != nil {
		return nil, err
	}
	return ch, nil
}

// awaitMarks waits, at most bound, until every marker the driver says it wrote has been seen.
func (k *kernel) awaitMarks(c *cellState, bound time.Duration) {
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		k.mu.Lock()
		need := false
		for i := range 2 {
			wrote := c.reply != nil && i < len(c.reply.Marks) && c.reply.Marks[i]
			need = need || wrote && !c.marked[i]
		}
		k.mu.Unlock()
		if !need {
			return
		}
		select {
		case <-c.changed:
		case <-k.streamsDone:
			return
		case <-t.C:
			k.log.Warn("coderuntime: a cell's end marker did not arrive; its late output goes to the next cell", "language", k.lang)
			return
		}
	}
}

// gathered is what a cell gathered while it ran.
type gathered struct {
	out        [2]Output
	results    resultSet
	background backgroundSet
	reply      *message
}

// finish ends the cell: it is no longer the running one, its callbacks are over, and what it
// gathered is returned.
func (k *kernel) finish(c *cellState) gathered {
	k.mu.Lock()
	if k.cell == c {
		k.cell = nil
	}
	var g gathered
	for i := range g.out {
		g.out[i] = c.out[i].output()
	}
	g.results, g.background, g.reply = c.results, c.background, c.reply
	k.mu.Unlock()
	c.close(g.reply)
	return g
}

// stop ends the interpreter's whole tree (SIGTERM, the grace, SIGKILL; on Linux with the sweep
// for what left its group), closes the channel and waits for the reader and the followers. It
// is safe to call more than once and from several goroutines; later calls wait for the first.
func (k *kernel) stop() error {
	k.stopOnce.Do(func() {
		bound, cancel := context.WithTimeout(context.Background(), endBound(k.grace))
		defer cancel()
		var errs []error
		if err := k.h.Terminate(bound); err != nil {
			errs = append(errs, err)
		}
		if err := k.conn.Close(); err != nil { // the driver is gone: nothing writes to the socket any more
			errs = append(errs, err)
		}
		res, err := k.h.Wait(bound)
		if err != nil {
			errs = append(errs, err)
		}
		k.exit = ExitStatus{ExitCode: res.ExitCode, Signal: res.Signal}
		errs = append(errs, k.h.Close()) // stops reading the streams: the followers see their end
		done := make(chan struct{})
		go func() {
			k.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-bound.Done():
			close(k.stopFollow)
			<-done
		}
		k.stopErr = errors.Join(errs...)
	})
	return k.stopErr
}

// deliver passes text of stream i to the callbacks, holding back the start of a character the
// next chunk completes.
func (c *cellState) deliver(i int, p []byte) {
	c.cbMu.Lock()
	defer c.cbMu.Unlock()
	if c.closed {
		return
	}
	f := c.cb.Stdout
	if i == 1 {
		f = c.cb.Stderr
	}
	if f == nil {
		return
	}
	if len(c.carry[i]) > 0 {
		p = append(c.carry[i], p...)
		c.carry[i] = nil
	}
	whole, rest := splitUTF8(p)
	if len(rest) > 0 {
		c.carry[i] = append([]byte(nil), rest...)
	}
	if len(whole) > 0 {
		f(string(whole))
	}
}

// call runs f with the callbacks unless the cell is closed.
func (c *cellState) call(f func(cb *Callbacks)) {
	c.cbMu.Lock()
	defer c.cbMu.Unlock()
	if !c.closed {
		f(&c.cb)
	}
}

// close delivers what the callbacks still have to get (held-back bytes, the error) and ends
// them.
func (c *cellState) close(reply *message) {
	c.cbMu.Lock()
	defer c.cbMu.Unlock()
	if c.closed {
		return
	}
	for i, f := range []func(string){c.cb.Stdout, c.cb.Stderr} {
		if f != nil && len(c.carry[i]) > 0 {
			f(string(c.carry[i]))
		}
		c.carry[i] = nil
	}
	if reply != nil && reply.Error != nil && c.cb.Error != nil {
		c.cb.Error(*reply.Error)
	}
	c.closed = true
}
