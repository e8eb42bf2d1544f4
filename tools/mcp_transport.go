//go:build linux

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
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineTransport is MCP's stdio framing (one JSON-RPC message per line) with
// the SDK's own message types and encoding, and one difference from the
// SDK's IOTransport: a line that is not a JSON-RPC message, or is longer
// than maxLine, is answered with a JSON-RPC error and skipped. The SDK's
// transport decodes the stream with a json.Decoder, which cannot
// resynchronise after a syntax error, so one bad line would end the
// session and with it every sandbox the client started.
//
// JSON-RPC batches (a line holding an array) are refused: MCP removed them
// in protocol version 2025-06-18.
type lineTransport struct {
	in      io.Reader
	out     io.Writer
	maxLine int
}

// NewLineTransport is the transport of `jail mcp` on in and out: lines of
// at most maxLine bytes.
func NewLineTransport(in io.Reader, out io.Writer, maxLine int) mcp.Transport {
	return &lineTransport{in: in, out: out, maxLine: maxLine}
}

// Connect starts reading in; it is called once, by Server.Connect.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{in: t.in, out: t.out, msgs: make(chan jsonrpc.Message), closed: make(chan struct{}),
		inbound: map[jsonrpc.ID]bool{}, outbound: map[jsonrpc.ID]bool{}, changed: make(chan struct{}, 1)}
	go c.readLoop(bufio.NewReaderSize(t.in, 64<<10), t.maxLine)
	return c, nil
}

// lineConn is the connection lineTransport makes.
//
// When the input ends, every request already received is still answered,
// as jail serve answers every call it read: the SDK, told of the end at
// once, would cancel the calls and drop their responses, leaving the
// client's requests pending forever. So Read keeps the end back: it first
// cancels each request still unanswered (a notifications/cancelled the
// client did not send: its sandboxes end as on a disconnect), fails each
// question the server put to the client (nobody can answer it now, so the
// gate refuses at once instead of waiting for ask_timeout), and reports
// io.EOF only once every request has its response on the output.
type lineConn struct {
	in      io.Reader
	out     io.Writer
	writeMu sync.Mutex
	msgs    chan jsonrpc.Message // closed when the input ends; readErr says why
	readErr error
	closed  chan struct{}
	close   sync.Once

	mu sync.Mutex
	// inbound are the client's requests read and not yet answered;
	// outbound the server's requests written and not yet answered.
	inbound, outbound map[jsonrpc.ID]bool
	// ended is set when the input ended; queued holds what Read delivers
	// after that, before io.EOF.
	ended  bool
	queued []jsonrpc.Message
	// changed wakes a Read waiting after the end (capacity one).
	changed chan struct{}
	// drainBy fires drainTimeout after the end.
	drainBy <-chan time.Time
}

// drainTimeout bounds the wait for the answers after the input ended: a
// cancelled call ends its sandbox within a second or two.
const drainTimeout = 30 * time.Second

// errInputEnded answers the server's requests once the client's input
// ended.
var errInputEnded = errors.New("the client closed its input: nobody can answer")

// readLoop delivers the well-formed messages of in to Read and answers the
// rest itself.
func (c *lineConn) readLoop(br *bufio.Reader, maxLine int) {
	// Lifetime: until in ends or fails, or Close (which closes in when it
	// can; a blocked read of a terminal or pipe that cannot be closed ends
	// with the process, as in the SDK's own stdio transport).
	defer close(c.msgs)
	for {
		line, tooLong, err := ReadLine(br, maxLine)
		if tooLong {
			c.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request longer than %d bytes: refused", maxLine))
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			if msg, ok := c.decode(line); ok {
				select {
				case c.msgs <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

// decode parses one line, answering it with a JSON-RPC error when it is
// not a message: -32700 when it is not JSON, -32600 when it is JSON but not
// a JSON-RPC 2.0 request, notification or response.
func (c *lineConn) decode(line []byte) (jsonrpc.Message, bool) {
	if !json.Valid(line) {
		c.reject(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return nil, false
	}
	if line[0] == '[' {
		c.reject(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported (MCP removed them in 2025-06-18)")
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.reject(rpcIDOf(line), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	return msg, true
}

// rpcIDOf digs the id out of a line that is JSON but no message, so the
// client can match the error to its request when it sent one.
func rpcIDOf(line []byte) any {
	var probe struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return nil
	}
	switch probe.ID.(type) {
	case string, float64:
		return probe.ID
	}
	return nil
}

// reject writes a JSON-RPC error response. id is nil when the request's
// id is unknown, which JSON-RPC 2.0 writes as "id": null.
func (c *lineConn) reject(id any, code int64, message string) {
	resp := struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id, &jsonrpc.Error{Code: code, Message: message}}
	b, err := json.Marshal(resp)
	if err == nil {
		c.writeLine(b)
	}
}

// Read returns the next message; io.EOF when the client closed its end
// and every request read has been answered.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		ended := c.ended
		if ended && len(c.queued) > 0 {
			msg := c.queued[0]
			c.queued = c.queued[1:]
			c.mu.Unlock()
			return msg, nil
		}
		drained := len(c.inbound) == 0
		c.mu.Unlock()
		if ended && drained {
			if c.readErr == nil || errors.Is(c.readErr, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("mcp: read: %w", c.readErr)
		}
		msgs := c.msgs
		var giveUp <-chan time.Time
		if ended {
			msgs = nil // wait for the answers instead
			giveUp = c.drainBy
		}
		select {
		case <-giveUp:
			// A handler that does not return must not keep the process,
			// and the sandboxes it holds, alive.
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		case msg, ok := <-msgs:
			if !ok {
				c.endInput()
				continue
			}
			c.track(msg)
			return msg, nil
		case <-c.changed:
		case <-c.closed:
			return nil, io.EOF
		}
	}
}

// track records a request read (to be answered) or a response read (a
// question answered).
func (c *lineConn) track(msg jsonrpc.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.IsCall() {
			c.inbound[m.ID] = true
		}
	case *jsonrpc.Response:
		delete(c.outbound, m.ID)
	}
}

// endInput queues, for Read, a cancellation of every request still
// unanswered and an error response to every question still open.
func (c *lineConn) endInput() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	c.drainBy = time.After(drainTimeout)
	for id := range c.inbound {
		params, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": errInputEnded.Error()})
		c.queued = append(c.queued, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
	}
	for id := range c.outbound {
		c.queued = append(c.queued, &jsonrpc.Response{ID: id, Error: errInputEnded})
	}
	clear(c.outbound)
}

// wake tells a Read waiting after the end that something changed; c.mu
// is held.
func (c *lineConn) wake() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Write sends one message as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp: encode: %w", err)
	}
	if m, ok := msg.(*jsonrpc.Response); ok {
		// Forgotten only once written, so Read's io.EOF comes after the
		// last answer is on the output.
		err := c.writeLine(b)
		c.mu.Lock()
		delete(c.inbound, m.ID)
		c.wake()
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		switch {
		case !m.IsCall():
		case c.ended:
			// Nobody can answer: the question fails at once. Written all
			// the same, so the output shows what was asked.
			c.queued = append(c.queued, &jsonrpc.Response{ID: m.ID, Error: errInputEnded})
			c.wake()
		default:
			c.outbound[m.ID] = true
		}
	}
	c.mu.Unlock()
	return c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("mcp: write: %w", err)
	}
	return nil
}

// Close stops reading. The output is left open: it is the process's
// stdout, which main owns.
func (c *lineConn) Close() error {
	c.close.Do(func() {
		close(c.closed)
		if cl, ok := c.in.(io.Closer); ok {
			cl.Close()
		}
	})
	return nil
}

// SessionID is empty: stdio has one session and no session header.
func (c *lineConn) SessionID() string { return "" }
