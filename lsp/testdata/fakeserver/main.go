// Command fakeserver is a tiny language server for the lsp package's tests and example. It
// speaks just enough LSP to be driven (initialize, didOpen, hover, shutdown, exit) and misbehaves
// on request: test/* methods crash it, flood its stderr, write broken frames and so on. Its
// framing is written here from scratch, independently of internal/framing.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf16"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type server struct {
	initDelay  time.Duration // how long initialize takes
	exitDelay  time.Duration
	watch      string
	root       string            // from initialize, for "need FILE" lines
	watched    []any             // the didChangeWatchedFiles events received
	lastDiags  map[string]string // uri -> the JSON of its last published diagnostics
	silent     bool
	latency    time.Duration
	dedupe     bool
	checked    map[string]bool // uri + "\x00" + text, for -dedupe
	mode       string
	sync       int    // textDocumentSync: 1 full, 2 incremental
	versioned  bool   // publishes name the version
	escapeURIs bool   // publishes escape URIs as vscode-uri does
	pull       string // "", "static" or "dynamic": pull diagnostics
	stale      bool   // on a change, first publish the old version's diagnostics again
	crashAfter int    // exit after answering this many requests (0: never)
	wantEnc    string // the encoding to choose when the client offers it
	out        io.Writer
	wmu        sync.Mutex

	mu       sync.Mutex
	nextID   int
	waiting  map[string]chan message // our requests to the client, by id
	slow     map[string]bool         // parked test/slow requests, by id
	docs     map[string]string
	versions map[string]int
	shutdown bool
	enc      string // negotiated: "utf-16" or "utf-8"
	answered int
	pulled   int
	chatter  chan struct{} // closed to stop test/chatter
}

func main() {
	mode := flag.String("mode", "normal", "normal|requests-first|ignore-shutdown|ignore-term|crash-on-init|sleep|cut-on-exit")
	exitDelay := flag.Duration("exit-delay", 0, "how long to take to leave after exit")
	flood := flag.Int("flood", 0, "bytes of stderr to write in the background from the start")
	syncKind := flag.Int("sync", 1, "textDocumentSync: 1 full, 2 incremental")
	unversioned := flag.Bool("unversioned", false, "publish diagnostics without a version")
	pull := flag.String("pull", "", "static|dynamic: offer pull diagnostics (and publish none)")
	stale := flag.Bool("stale", false, "on a change, publish the old version's diagnostics first")
	crashAfter := flag.Int("crash-after", 0, "exit with code 4 after answering N requests (initialize not counted)")
	enc := flag.String("encoding", "", "position encoding to choose when the client offers it (utf-8)")
	starts := flag.String("starts", "", "file to append a line to at every start")
	silent := flag.Bool("silent", false, "publish no diagnostics at all")
	initDelay := flag.Duration("init-delay", 0, "time initialize takes before its answer")
	latency := flag.Duration("latency", 0, "time each didOpen and didChange takes before its diagnostics are published; messages are handled one at a time, in order")
	dedupe := flag.Bool("dedupe", false, "publish nothing for a text of a document already checked")
	watch := flag.String("watch", "", "glob of the files to register a didChangeWatchedFiles watcher for, once initialized")
	escapeURIs := flag.Bool("escape-uris", false, "publish URIs escaped as VS Code's vscode-uri does: every byte but letters, digits, -._~ and / as %XX, a drive letter lower-case")
	flag.Parse()
	if *starts != "" {
		f, err := os.OpenFile(*starts, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	if *mode == "sleep" { // a child left behind by test/spawnchild
		for {
			time.Sleep(time.Hour)
		}
	}
	if *mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	}
	if *flood > 0 {
		go writeStderr(*flood)
	}
	s := &server{escapeURIs: *escapeURIs, watch: *watch, lastDiags: map[string]string{}, exitDelay: *exitDelay, silent: *silent, latency: *latency, initDelay: *initDelay, dedupe: *dedupe, checked: map[string]bool{}, mode: *mode, sync: *syncKind, versioned: !*unversioned, pull: *pull, stale: *stale,
		crashAfter: *crashAfter, wantEnc: *enc, enc: "utf-16", out: os.Stdout,
		waiting: map[string]chan message{}, slow: map[string]bool{}, docs: map[string]string{}, versions: map[string]int{}}
	fmt.Fprintf(os.Stderr, "fakeserver: starting in mode %s\n", *mode)
	s.serve(bufio.NewReader(os.Stdin))
}

func writeStderr(n int) {
	line := []byte(strings.Repeat("log line from a chatty server ", 3) + "\n")
	for n > 0 {
		k := min(n, len(line))
		os.Stderr.Write(line[:k])
		n -= k
	}
}

func (s *server) serve(in *bufio.Reader) {
	for {
		body, err := readFrame(in)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fakeserver: input ended: %v\n", err)
			if s.mode == "ignore-shutdown" || s.mode == "ignore-term" {
				for {
					time.Sleep(time.Hour)
				}
			}
			os.Exit(3)
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			fmt.Fprintf(os.Stderr, "fakeserver: bad message: %v\n", err)
			continue
		}
		s.handle(m)
	}
}

func readFrame(in *bufio.Reader) ([]byte, error) {
	n := -1
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "content-length") {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("no content-length")
	}
	body := make([]byte, n)
	_, err := io.ReadFull(in, body)
	return body, err
}

func (s *server) writeRaw(b []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.out.Write(b)
}

func (s *server) send(m message) {
	m.JSONRPC = "2.0"
	body, _ := json.Marshal(m)
	s.writeRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)))
}

func raw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (s *server) reply(id json.RawMessage, result any) {
	s.send(message{ID: id, Result: raw(result)})
	s.answeredOne()
}

// answeredOne counts an answered request and crashes after -crash-after of them.
func (s *server) answeredOne() {
	s.mu.Lock()
	s.answered++
	n := s.answered
	s.mu.Unlock()
	if s.crashAfter > 0 && n == s.crashAfter+1 { // +1: initialize
		fmt.Fprintf(os.Stderr, "fakeserver: crashing after %d requests\n", s.crashAfter)
		os.Exit(4)
	}
}

func (s *server) replyError(id json.RawMessage, code int, msg string) {
	s.send(message{ID: id, Error: raw(map[string]any{"code": code, "message": msg})})
	s.answeredOne()
}

func (s *server) notify(method string, params any) {
	s.send(message{Method: method, Params: raw(params)})
}

// request sends a request to the client and waits for its answer.
func (s *server) request(method string, params any) message {
	s.mu.Lock()
	s.nextID++
	id := raw(fmt.Sprintf("srv-%d", s.nextID))
	ch := make(chan message, 1)
	s.waiting[string(id)] = ch
	s.mu.Unlock()
	s.send(message{ID: id, Method: method, Params: raw(params)})
	return <-ch
}

func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

func (s *server) handle(m message) {
	if m.Method == "" { // an answer to one of our requests
		s.mu.Lock()
		ch := s.waiting[string(m.ID)]
		delete(s.waiting, string(m.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return
	}
	var p map[string]any
	json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "initialize":
		s.negotiate(p)
		s.root, _ = p["rootPath"].(string)
		switch s.mode {
		case "crash-on-init":
			fmt.Fprintln(os.Stderr, "fatal: cannot start: no workspace")
			os.Exit(2)
		case "requests-first":
			go s.initializeAfterRequests(m, p)
			return
		}
		time.Sleep(s.initDelay) // a slow start; the next message waits (serve is serial)
		s.reply(m.ID, s.initResult(p, nil))
	case "initialized":
		s.notify("window/logMessage", map[string]any{"type": 3, "message": "fakeserver initialized"})
		if s.watch != "" {
			go s.request("client/registerCapability", map[string]any{"registrations": []any{map[string]any{
				"id": "watch-1", "method": "workspace/didChangeWatchedFiles",
				"registerOptions": map[string]any{"watchers": []any{map[string]any{"globPattern": s.watch}}},
			}}})
		}
		if s.pull == "dynamic" {
			go s.request("client/registerCapability", map[string]any{"registrations": []any{map[string]any{
				"id": "pull-1", "method": "textDocument/diagnostic",
				"registerOptions": map[string]any{"identifier": "fake", "interFileDependencies": false, "workspaceDiagnostics": false},
			}}})
		}
	case "workspace/didChangeWatchedFiles": // republish the open documents whose diagnostics changed, as gopls does
		s.mu.Lock()
		s.watched = append(s.watched, p["changes"].([]any)...)
		uris := make([]string, 0, len(s.docs))
		for u := range s.docs {
			uris = append(uris, u)
		}
		s.mu.Unlock()
		for _, u := range uris {
			s.mu.Lock()
			text := s.docs[u]
			s.mu.Unlock()
			if string(raw(s.diagnose(text))) != s.lastDiags[u] {
				s.publish(u)
			}
		}
	case "test/watched":
		s.mu.Lock()
		w := s.watched
		s.mu.Unlock()
		s.reply(m.ID, w)
	case "textDocument/didOpen":
		doc := p["textDocument"].(map[string]any)
		uri, text := doc["uri"].(string), doc["text"].(string)
		s.mu.Lock()
		s.docs[uri] = text
		s.versions[uri] = int(doc["version"].(float64))
		s.mu.Unlock()
		s.publish(uri)
	case "textDocument/didChange":
		doc := p["textDocument"].(map[string]any)
		uri := doc["uri"].(string)
		s.mu.Lock()
		text, oldVersion := s.docs[uri], s.versions[uri]
		for _, ch := range p["contentChanges"].([]any) {
			ch := ch.(map[string]any)
			r, ok := ch["range"].(map[string]any)
			if !ok {
				text = ch["text"].(string)
				continue
			}
			start, end := s.offset(text, r["start"].(map[string]any)), s.offset(text, r["end"].(map[string]any))
			text = text[:start] + ch["text"].(string) + text[end:]
		}
		oldText := s.docs[uri]
		s.docs[uri] = text
		s.versions[uri] = int(doc["version"].(float64))
		s.mu.Unlock()
		if s.stale { // a late answer for the version before, then the fresh one, in one write
			s.writeRaw(append(s.publishFrame(uri, oldText, oldVersion), s.publishFrame(uri, text, s.versions[uri])...))
			return
		}
		s.publish(uri)
	case "textDocument/didClose":
		uri := p["textDocument"].(map[string]any)["uri"].(string)
		s.mu.Lock()
		delete(s.docs, uri)
		s.mu.Unlock()
		if s.pull == "" {
			s.notify("textDocument/publishDiagnostics", map[string]any{"uri": s.outURI(uri), "diagnostics": []any{}})
		}
	case "textDocument/didSave":
		s.notify("test/saved", p)
	case "textDocument/diagnostic":
		uri := p["textDocument"].(map[string]any)["uri"].(string)
		s.mu.Lock()
		text, version := s.docs[uri], s.versions[uri]
		s.pulled++
		first := s.pulled == 1
		s.mu.Unlock()
		if first { // the first pull is cancelled, asking for a retrigger, as servers do while busy
			s.send(message{ID: m.ID, Error: raw(map[string]any{"code": -32802, "message": "busy", "data": map[string]any{"retriggerRequest": true}})})
			return
		}
		id := fmt.Sprintf("r%d", version)
		if p["previousResultId"] == id {
			s.reply(m.ID, map[string]any{"kind": "unchanged", "resultId": id})
			return
		}
		s.reply(m.ID, map[string]any{"kind": "full", "resultId": id, "items": s.diagnose(text)})
	case "test/chatter": // publish for a URI every 5ms until test/stopchatter
		s.mu.Lock()
		stop := make(chan struct{})
		s.chatter = stop
		s.mu.Unlock()
		uri := p["uri"].(string)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				s.notify("textDocument/publishDiagnostics", map[string]any{"uri": s.outURI(uri), "diagnostics": []any{}})
			}
		}()
		s.reply(m.ID, nil)
	case "test/text": // the server's copy of a document
		uri := p["uri"].(string)
		s.mu.Lock()
		text, ok := s.docs[uri]
		version := s.versions[uri]
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{"open": ok, "text": text, "version": version})
	case "test/stopchatter":
		s.mu.Lock()
		if s.chatter != nil {
			close(s.chatter)
			s.chatter = nil
		}
		s.mu.Unlock()
		s.reply(m.ID, nil)
	case "textDocument/hover":
		uri := p["textDocument"].(map[string]any)["uri"].(string)
		at := p["position"].(map[string]any)
		line, char := int(at["line"].(float64)), int(at["character"].(float64))
		s.mu.Lock()
		text, ok := s.docs[uri]
		enc := s.enc
		s.mu.Unlock()
		if !ok {
			s.reply(m.ID, nil)
			return
		}
		if enc == "utf-8" { // to UTF-16 for wordAt
			lines := strings.Split(text, "\n")
			if line < len(lines) && char <= len(lines[line]) {
				char = utf16Len(lines[line][:char])
			}
		}
		s.reply(m.ID, map[string]any{"contents": map[string]any{"kind": "markdown", "value": fmt.Sprintf("`%s` at %d:%d", wordAt(text, line, char), line, char)}})
	case "shutdown":
		if s.mode == "ignore-shutdown" || s.mode == "ignore-term" {
			return
		}
		s.mu.Lock()
		s.shutdown = true
		s.mu.Unlock()
		s.reply(m.ID, nil)
	case "exit":
		if s.mode == "ignore-shutdown" || s.mode == "ignore-term" {
			return
		}
		s.mu.Lock()
		code := 1
		if s.shutdown {
			code = 0
		}
		s.mu.Unlock()
		fmt.Fprintln(os.Stderr, "fakeserver: bye")
		if s.mode == "cut-on-exit" { // a frame's header, and the body never comes
			s.writeRaw([]byte("Content-Length: 139\r\n\r\n"))
		}
		time.Sleep(s.exitDelay)
		os.Exit(code)
	case "$/cancelRequest":
		id := string(raw(p["id"]))
		s.notify("test/cancelled", map[string]any{"id": p["id"]})
		s.mu.Lock()
		parked := s.slow[id]
		delete(s.slow, id)
		s.mu.Unlock()
		if parked {
			s.replyError(json.RawMessage(id), -32800, "cancelled")
		}
	case "test/slow":
		s.mu.Lock()
		s.slow[string(m.ID)] = true
		s.mu.Unlock()
	case "test/echo":
		s.send(message{ID: m.ID, Result: m.Params})
		s.answeredOne()
	case "test/error":
		s.replyError(m.ID, -32803, "it failed on purpose")
	case "test/crash":
		fmt.Fprint(os.Stderr, p["stderr"])
		os.Exit(int(p["code"].(float64)))
	case "test/kill":
		fmt.Fprintln(os.Stderr, "fakeserver: killing myself")
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		hang()
	case "test/oversize":
		s.writeRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", int(p["size"].(float64)))))
		hang()
	case "test/malformed":
		s.writeRaw([]byte("Content-Length: abc\r\n\r\n{}"))
		hang()
	case "test/garbage":
		s.writeRaw([]byte("this is not a frame\n"))
		hang()
	case "test/badjson":
		s.writeRaw([]byte("Content-Length: 9\r\n\r\n{not json"))
		s.reply(m.ID, "after bad json")
	case "test/notifications":
		for i := range int(p["n"].(float64)) {
			s.notify("window/logMessage", map[string]any{"type": 4, "message": fmt.Sprintf("note %d", i)})
		}
		s.reply(m.ID, "sent")
	case "test/flood":
		n := int(p["bytes"].(float64))
		writeStderr(n)
		s.reply(m.ID, n)
	case "test/request":
		go func() {
			r := s.request(p["method"].(string), p["params"])
			s.reply(m.ID, map[string]any{"result": r.Result, "error": r.Error})
		}()
	case "test/requestcancel": // ask the client something, then cancel the question
		go func() {
			s.mu.Lock()
			s.nextID++
			id := raw(fmt.Sprintf("srv-%d", s.nextID))
			ch := make(chan message, 1)
			s.waiting[string(id)] = ch
			s.mu.Unlock()
			s.send(message{ID: id, Method: p["method"].(string), Params: raw(map[string]any{})})
			time.Sleep(100 * time.Millisecond)
			s.notify("$/cancelRequest", map[string]any{"id": json.RawMessage(id)})
			r := <-ch
			s.reply(m.ID, map[string]any{"result": r.Result, "error": r.Error})
		}()
	case "test/spawnchild", "test/spawndaemon":
		exe, _ := os.Executable()
		c := exec.Command(exe, "-mode=sleep")
		if m.Method == "test/spawndaemon" {
			detach(c)
		}
		if err := c.Start(); err != nil {
			s.replyError(m.ID, -32803, err.Error())
			return
		}
		s.reply(m.ID, c.Process.Pid)
	case "test/stopreading": // answer, then never read stdin again
		s.reply(m.ID, nil)
		hang()
	case "test/closestdout":
		s.reply(m.ID, nil)
		s.wmu.Lock()
		os.Stdout.Close()
		s.wmu.Unlock()
		hang()
	default:
		if len(m.ID) > 0 {
			s.replyError(m.ID, -32601, "method not found: "+m.Method)
		}
	}
}

// initializeAfterRequests sends the server-to-client requests gopls-like servers send before
// answering initialize, and echoes the client's answers in the initialize result.
func (s *server) initializeAfterRequests(m message, p map[string]any) {
	s.notify("window/logMessage", map[string]any{"type": 3, "message": "before initialize reply"})
	answers := map[string]any{}
	for _, r := range []struct {
		method string
		params any
	}{
		{"window/workDoneProgress/create", map[string]any{"token": "load"}},
		{"workspace/configuration", map[string]any{"items": []any{
			map[string]any{"section": "fake"}, map[string]any{"section": "fake.nested.key"},
			map[string]any{"section": "absent"}, map[string]any{"scopeUri": p["rootUri"]},
		}}},
		{"client/registerCapability", map[string]any{"registrations": []any{map[string]any{"id": "1", "method": "workspace/didChangeConfiguration"}}}},
		{"client/unregisterCapability", map[string]any{"unregisterations": []any{map[string]any{"id": "1", "method": "workspace/didChangeConfiguration"}}}},
		{"workspace/workspaceFolders", nil},
		{"window/showMessageRequest", map[string]any{"type": 3, "message": "pick", "actions": []any{map[string]any{"title": "ok"}}}},
		{"custom/unknown", map[string]any{}},
	} {
		a := s.request(r.method, r.params)
		answers[r.method] = map[string]any{"result": a.Result, "error": a.Error}
	}
	s.notify("$/progress", map[string]any{"token": "load", "value": map[string]any{"kind": "begin", "title": "loading"}})
	s.reply(m.ID, s.initResult(p, answers))
}

func (s *server) initResult(p map[string]any, answers map[string]any) map[string]any {
	caps := map[string]any{
		"hoverProvider": true, "textDocumentSync": s.sync,
		"experimental": map[string]any{"initParams": p, "answers": answers},
	}
	if s.sync == 2 { // the object form, with didSave and its text
		caps["textDocumentSync"] = map[string]any{"openClose": true, "change": 2, "save": map[string]any{"includeText": true}}
	}
	if s.enc != "utf-16" {
		caps["positionEncoding"] = s.enc
	}
	if s.pull == "static" {
		caps["diagnosticProvider"] = map[string]any{"identifier": "fake", "interFileDependencies": false, "workspaceDiagnostics": false}
	}
	return map[string]any{"capabilities": caps, "serverInfo": map[string]any{"name": "fakeserver", "version": "1.0"}}
}

// negotiate picks the position encoding: -encoding when the client offers it, else UTF-16.
func (s *server) negotiate(p map[string]any) {
	caps, _ := p["capabilities"].(map[string]any)
	general, _ := caps["general"].(map[string]any)
	offered, _ := general["positionEncodings"].([]any)
	for _, e := range offered {
		if e == s.wantEnc && s.wantEnc != "" {
			s.mu.Lock()
			s.enc = s.wantEnc
			s.mu.Unlock()
		}
	}
}

// column is the length of prefix in the negotiated encoding.
func (s *server) column(prefix string) int {
	if s.enc == "utf-8" {
		return len(prefix)
	}
	return utf16Len(prefix)
}

// offset converts an LSP position in text to a byte offset (lines end at "\n" only here).
func (s *server) offset(text string, at map[string]any) int {
	line, char := int(at["line"].(float64)), int(at["character"].(float64))
	off := 0
	for range line {
		off += strings.IndexByte(text[off:], '\n') + 1
	}
	rest := text[off:]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	if s.enc == "utf-8" {
		return off + min(char, len(rest))
	}
	u := utf16.Encode([]rune(rest))
	return off + len(string(utf16.Decode(u[:min(char, len(u))])))
}

// diagnose finds every ERROR in text, and every "need FILE" line whose FILE (under the root)
// is missing on disk.
func (s *server) diagnose(text string) []any {
	diags := []any{}
	for i, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "need "); ok {
			if _, err := os.Stat(filepath.Join(s.root, name)); err != nil {
				diags = append(diags, map[string]any{
					"range":    map[string]any{"start": pos(i, 0), "end": pos(i, s.column(line))},
					"severity": 1, "source": "fake", "message": "missing " + name,
				})
			}
		}
		for c, off := strings.Index(line, "ERROR"), 0; c >= 0; c = strings.Index(line[off:], "ERROR") {
			c += off
			diags = append(diags, map[string]any{
				"range":    map[string]any{"start": pos(i, s.column(line[:c])), "end": pos(i, s.column(line[:c])+5)},
				"severity": 1, "source": "fake", "message": "found ERROR",
			})
			off = c + 5
		}
	}
	return diags
}

// outURI is uri as the server publishes it: as it came, or escaped as vscode-uri does
// (file:///c%3A/a%2Bb/x.txt for file:///C:/a+b/x.txt).
func (s *server) outURI(uri string) string {
	rest, ok := strings.CutPrefix(uri, "file://")
	if !s.escapeURIs || !ok {
		return uri
	}
	path, err := url.PathUnescape(rest)
	if err != nil {
		return uri
	}
	if len(path) >= 3 && path[0] == '/' && path[2] == ':' {
		path = "/" + strings.ToLower(path[1:2]) + path[2:]
	}
	var b strings.Builder
	b.WriteString("file://")
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~/", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// publishFrame is a publishDiagnostics frame for text at version.
func (s *server) publishFrame(uri, text string, version int) []byte {
	diags := s.diagnose(text)
	s.lastDiags[uri] = string(raw(diags))
	params := map[string]any{"uri": s.outURI(uri), "diagnostics": diags}
	if s.versioned {
		params["version"] = version
	}
	body, _ := json.Marshal(message{JSONRPC: "2.0", Method: "textDocument/publishDiagnostics", Params: raw(params)})
	return []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

// publish sends the diagnostics of an open document (none in pull mode).
func (s *server) publish(uri string) {
	if s.pull != "" || s.silent {
		return
	}
	time.Sleep(s.latency) // checking takes time; the next message waits (serve is serial)
	s.mu.Lock()
	text, version := s.docs[uri], s.versions[uri]
	seen := s.checked[uri+"\x00"+text]
	s.checked[uri+"\x00"+text] = true
	s.mu.Unlock()
	if s.dedupe && seen {
		return
	}
	s.writeRaw(s.publishFrame(uri, text, version))
}

func pos(line, char int) map[string]any { return map[string]any{"line": line, "character": char} }

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// wordAt returns the identifier around a UTF-16 position.
func wordAt(text string, line, char int) string {
	lines := strings.Split(text, "\n")
	if line >= len(lines) {
		return ""
	}
	u := utf16.Encode([]rune(lines[line]))
	if char > len(u) {
		return ""
	}
	isWord := func(c uint16) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 127
	}
	a, b := char, char
	for a > 0 && isWord(u[a-1]) {
		a--
	}
	for b < len(u) && isWord(u[b]) {
		b++
	}
	return string(utf16.Decode(u[a:b]))
}
