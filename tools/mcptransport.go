package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrameBytes bounds one inbound message on a LineTransport whose
// MaxFrameBytes is zero.
const DefaultMaxFrameBytes = 16 << 20

// Buffer sizes of a lineConn. Buffers that grew past frameKeepBytes for
// one large message are dropped afterwards, so an idle connection holds
// little memory.
const (
	frameReaderBytes = 64 << 10
	frameKeepBytes   = 1 << 20
)

// ErrFrameTooLarge is returned (wrapped, with the limit) by a LineTransport
// whose peer sent a message longer than the transport's MaxFrameBytes.
var ErrFrameTooLarge = errors.New("MCP message exceeds the frame limit")

// ErrBatchUnsupported is returned (wrapped) by a LineTransport whose peer
// sent a JSON-RPC batch: podbot's two ends never batch.
var ErrBatchUnsupported = errors.New("JSON-RPC batches are not supported on this stream")

// LineTransport is an mcp.Transport that carries newline-delimited
// JSON-RPC messages over a pair of byte streams, as mcp.IOTransport does,
// with less garbage per message: one buffered reader serves every inbound
// line, one buffer every outbound message, and a message is decoded with
// no per-message scratch buffer. It serves podbot's own link to
// podbot-sidecar, so JSON-RPC batches (which neither end sends) are
// refused.
//
// A LineTransport is used for one Connect.
type LineTransport struct {
	// Reader carries the peer's messages. Closing the connection closes it,
	// which must unblock a pending Read for Close to return promptly.
	Reader io.ReadCloser
	// Writer takes our messages; each is written with one Write call.
	// Closing the connection closes it.
	Writer io.WriteCloser
	// MaxFrameBytes bounds one inbound message, newline excluded. Zero
	// means DefaultMaxFrameBytes; a longer message ends the connection with
	// ErrFrameTooLarge.
	MaxFrameBytes int
	// DirectRead decodes each message on the goroutine that calls Read
	// instead of on a reader goroutine of the transport's own, saving a
	// hand-off per message. Set it only when closing Reader unblocks a
	// pending Read (a socket, a pollable file, an io.Pipe); otherwise
	// Close could not end a Read blocked on a quiet peer.
	DirectRead bool
}

// Connect implements mcp.Transport. Unless DirectRead is set, it starts
// the goroutine that reads the peer's messages; it ends when Reader fails
// or the connection closes.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("line transport: Reader and Writer are both required")
	}
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	c := &lineConn{
		reader: t.Reader,
		writer: t.Writer,
		lines:  &lineReader{r: bufio.NewReaderSize(t.Reader, frameReaderBytes), limit: limit},
		closed: make(chan struct{}),
	}
	if !t.DirectRead {
		c.incoming = make(chan readResult)
		go c.readLoop()
	}
	return c, nil
}

// readResult is one decoded inbound message or the error that ended reading.
type readResult struct {
	msg jsonrpc.Message
	err error
}

// lineConn is the mcp.Connection of a LineTransport. Read is served by
// one reader goroutine (so Close unblocks it at once, as the SDK
// requires); Write may be called concurrently and never interleaves two
// messages.
type lineConn struct {
	reader io.ReadCloser
	writer io.WriteCloser

	// lines decodes the peer's messages: on the reader goroutine, which
	// hands them over on incoming, or (DirectRead, incoming nil) in Read.
	lines    *lineReader
	incoming chan readResult
	// readErr is the error that ended reading, returned by every later
	// Read; only Read touches it (the SDK reads from one goroutine).
	readErr error

	writeMu sync.Mutex
	wbuf    []byte // guarded by writeMu

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// lineReader decodes one message per line, skipping blank lines.
type lineReader struct {
	r     *bufio.Reader
	long  []byte // assembles lines longer than r's buffer
	limit int
}

// next returns the next message, or the error that ends reading: the
// stream's, a refused line's, or io.EOF.
func (lr *lineReader) next() (jsonrpc.Message, error) {
	for {
		line, err := readFrame(lr.r, &lr.long, lr.limit)
		// A read error other than EOF leaves a partial line: drop it.
		if len(line) > 0 && (err == nil || err == io.EOF) {
			// The message owns its memory; the line's buffer is reused.
			msg, derr := decodeLine(line)
			lr.trim()
			return msg, derr
		}
		lr.trim()
		if err != nil {
			return nil, err
		}
	}
}

// trim drops an unusually large line buffer.
func (lr *lineReader) trim() {
	if cap(lr.long) > frameKeepBytes {
		lr.long = nil
	}
}

// readLoop hands each message to Read, until the stream ends, a line is
// refused or the connection closes.
func (c *lineConn) readLoop() {
	for {
		msg, err := c.lines.next()
		if msg != nil {
			if !c.deliver(readResult{msg: msg}) {
				return
			}
			continue
		}
		c.deliver(readResult{err: err})
		return
	}
}

// deliver hands res to Read; it reports false when the connection closed
// first.
func (c *lineConn) deliver(res readResult) bool {
	select {
	case c.incoming <- res:
		return true
	case <-c.closed:
		return false
	}
}

// readFrame returns the next line without its line ending (LF or CRLF) and
// trimmed of surrounding blanks. The result aliases r's buffer or *long
// and is valid until the next call. At the end of the stream it returns
// the unterminated rest, if any, with io.EOF.
func readFrame(r *bufio.Reader, long *[]byte, limit int) ([]byte, error) {
	chunk, err := r.ReadSlice('\n')
	line := chunk
	if errors.Is(err, bufio.ErrBufferFull) {
		*long = append((*long)[:0], chunk...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(*long) > limit+2 { // room for a CRLF
				return nil, fmt.Errorf("%w: the peer sent more than %d bytes without a newline", ErrFrameTooLarge, limit)
			}
			chunk, err = r.ReadSlice('\n')
			*long = append(*long, chunk...)
		}
		line = *long
	}
	line = bytes.TrimSpace(line)
	if len(line) > limit {
		return nil, fmt.Errorf("%w: the peer sent a %d-byte message; the limit is %d bytes", ErrFrameTooLarge, len(line), limit)
	}
	return line, err
}

// decodeLine turns one line into a message that owns its memory, so the
// line's buffer can be reused. It accepts what jsonrpc.DecodeMessage
// accepts (keys match exactly) but decodes with encoding/json, which needs
// no 32 KiB scratch buffer per message.
func decodeLine(line []byte) (jsonrpc.Message, error) {
	if line[0] == '[' {
		return nil, fmt.Errorf("%w: send one message per line", ErrBatchUnsupported)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return nil, malformed(err)
	}
	var version string
	if err := unmarshalField(fields, "jsonrpc", &version); err != nil {
		return nil, err
	}
	if version != "2.0" {
		return nil, malformed(fmt.Errorf("version tag %q, want \"2.0\"", version))
	}
	var rawID any
	if err := unmarshalField(fields, "id", &rawID); err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, malformed(err)
	}
	if _, ok := fields["method"]; ok {
		var method string
		if err := unmarshalField(fields, "method", &method); err != nil {
			return nil, err
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: fields["params"]}, nil
	}
	if !id.IsValid() {
		return nil, malformed(errors.New("a response without an id"))
	}
	resp := &jsonrpc.Response{ID: id, Result: fields["result"]}
	wireErr, err := decodeWireError(fields)
	if err != nil {
		return nil, err
	}
	if wireErr != nil {
		resp.Error = wireErr
	}
	return resp, nil
}

// decodeWireError decodes a response's "error" object, nil when it is
// absent or null. Its keys match exactly, as the SDK's do: decoded into
// the struct directly, encoding/json would also take "Code" for "code".
func decodeWireError(fields map[string]json.RawMessage) (*jsonrpc.Error, error) {
	var obj map[string]json.RawMessage
	if err := unmarshalField(fields, "error", &obj); err != nil || obj == nil {
		return nil, err
	}
	e := &jsonrpc.Error{}
	for _, f := range []struct {
		key string
		dst any
	}{{"code", &e.Code}, {"message", &e.Message}, {"data", &e.Data}} {
		if raw, ok := obj[f.key]; ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return nil, malformed(fmt.Errorf("field \"error.%s\": %w", f.key, err))
			}
		}
	}
	return e, nil
}

// unmarshalField decodes fields[key] into v, when present.
func unmarshalField(fields map[string]json.RawMessage, key string, v any) error {
	raw, ok := fields[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return malformed(fmt.Errorf("field %q: %w", key, err))
	}
	return nil
}

func malformed(err error) error {
	return fmt.Errorf("malformed MCP message from the peer: %w", err)
}

// Read implements mcp.Connection: the next message from the peer. After
// the stream ends it returns io.EOF (or the error that ended it) on every
// call.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.readErr != nil {
		return nil, c.readErr
	}
	if c.incoming == nil {
		msg, err := c.lines.next()
		if err != nil {
			if c.isClosed() {
				err = io.EOF
			}
			c.readErr = err
		}
		return msg, err
	}
	select {
	case res := <-c.incoming:
		if res.err != nil {
			c.readErr = res.err
		}
		return res.msg, res.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection: msg as one line, in a single Write.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	wbuf, err := appendMessage(c.wbuf[:0], msg)
	if err != nil {
		return fmt.Errorf("encode MCP message: %w", err)
	}
	c.wbuf = append(wbuf, '\n')
	_, err = c.writer.Write(c.wbuf)
	if cap(c.wbuf) > frameKeepBytes {
		c.wbuf = nil
	}
	return err
}

// Close implements mcp.Connection: it closes both streams, once, and
// unblocks a pending Read.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.reader.Close(), c.writer.Close())
	})
	return c.closeErr
}

func (c *lineConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// SessionID implements mcp.Connection; a stream has no session ID.
func (c *lineConn) SessionID() string { return "" }
