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
	"os"
	"os/exec"
	"os/signal"
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
	mode string
	out  io.Writer
	wmu  sync.Mutex

	mu       sync.Mutex
	nextID   int
	waiting  map[string]chan message // our requests to the client, by id
	slow     map[string]bool         // parked test/slow requests, by id
	docs     map[string]string
	shutdown bool
}

func main() {
	mode := flag.String("mode", "normal", "normal|requests-first|ignore-shutdown|ignore-term|crash-on-init|sleep")
	flood := flag.Int("flood", 0, "bytes of stderr to write in the background from the start")
	flag.Parse()
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
	s := &server{mode: *mode, out: os.Stdout, waiting: map[string]chan message{}, slow: map[string]bool{}, docs: map[string]string{}}
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
}

func (s *server) replyError(id json.RawMessage, code int, msg string) {
	s.send(message{ID: id, Error: raw(map[string]any{"code": code, "message": msg})})
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
		switch s.mode {
		case "crash-on-init":
			fmt.Fprintln(os.Stderr, "fatal: cannot start: no workspace")
			os.Exit(2)
		case "requests-first":
			go s.initializeAfterRequests(m, p)
			return
		}
		s.reply(m.ID, s.initResult(p, nil))
	case "initialized":
		s.notify("window/logMessage", map[string]any{"type": 3, "message": "fakeserver initialized"})
	case "textDocument/didOpen":
		doc := p["textDocument"].(map[string]any)
		uri, text := doc["uri"].(string), doc["text"].(string)
		s.mu.Lock()
		s.docs[uri] = text
		s.mu.Unlock()
		var diags []any
		for i, line := range strings.Split(text, "\n") {
			for c, off := strings.Index(line, "ERROR"), 0; c >= 0; c = strings.Index(line[off:], "ERROR") {
				c += off
				diags = append(diags, map[string]any{
					"range":    map[string]any{"start": pos(i, utf16Len(line[:c])), "end": pos(i, utf16Len(line[:c])+5)},
					"severity": 1, "source": "fake", "message": "found ERROR",
				})
				off = c + 5
			}
		}
		if diags == nil {
			diags = []any{}
		}
		s.notify("textDocument/publishDiagnostics", map[string]any{"uri": uri, "version": doc["version"], "diagnostics": diags})
	case "textDocument/hover":
		uri := p["textDocument"].(map[string]any)["uri"].(string)
		at := p["position"].(map[string]any)
		line, char := int(at["line"].(float64)), int(at["character"].(float64))
		s.mu.Lock()
		text, ok := s.docs[uri]
		s.mu.Unlock()
		if !ok {
			s.reply(m.ID, nil)
			return
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
	return map[string]any{
		"capabilities": map[string]any{
			"hoverProvider": true, "textDocumentSync": 1,
			"experimental": map[string]any{"initParams": p, "answers": answers},
		},
		"serverInfo": map[string]any{"name": "fakeserver", "version": "1.0"},
	}
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
