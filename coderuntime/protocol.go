package coderuntime

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxFrame bounds one control message either way; the drivers cap what they send below it (a
// result's MIME bundle at 32 MiB) and the host refuses a cell larger than MaxCellBytes.
const maxFrame = 64 << 20

// message is one control message between the host and a session driver. Frames are a 4-byte
// big-endian length and that many bytes of JSON.
//
//	host -> driver  execute {id, count, code, nonce}; probe {id}; interrupt {cell} (node)
//	driver -> host  hello {token, pid, version}; started {cell} (python3); sync_done {cell}
//	                (node); result {cell, main, mime, count}; background_error {count, error};
//	                done {cell, error, marks, notes}; probe_ok {id}
type message struct {
	Type    string            `json:"type"`
	ID      string            `json:"id,omitempty"`
	Cell    string            `json:"cell,omitempty"`
	Count   int               `json:"count,omitempty"`
	Code    string            `json:"code,omitempty"`
	Nonce   string            `json:"nonce,omitempty"`
	Token   string            `json:"token,omitempty"`
	Pid     int               `json:"pid,omitempty"`
	Version string            `json:"version,omitempty"`
	Main    bool              `json:"main,omitempty"`
	MIME    map[string]string `json:"mime,omitempty"`
	Error   *CodeError        `json:"error,omitempty"`
	Marks   []bool            `json:"marks,omitempty"`
	Notes   []string          `json:"notes,omitempty"`
}

// errFrameTooLarge says a peer announced a frame above maxFrame: the channel is not trusted
// any more.
var errFrameTooLarge = errors.New("control message above the 64 MiB limit")

// writeFrame sends m as one frame in one write.
func writeFrame(w io.Writer, m *message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	if len(body) > maxFrame {
		return errFrameTooLarge
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = w.Write(buf)
	return err
}

// readFrame reads one frame and decodes it. io.EOF means the peer closed the channel between
// frames; io.ErrUnexpectedEOF, in the middle of one.
func readFrame(r io.Reader) (*message, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxFrame {
		return nil, errFrameTooLarge
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	m := new(message)
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("decode control message: %w", err)
	}
	return m, nil
}
