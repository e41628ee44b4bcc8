package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
)

// JSON-RPC 2.0 and ACP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	CodeNotFound       = -32002 // ACP: a session or file was not found
	CodeCancelled      = -32800
)

// maxLine bounds one incoming message; an editor's embedded file can be
// large, but not unbounded.
const maxLine = 64 << 20

// Error is a JSON-RPC error object. Handlers return it to choose the code;
// any other error becomes an internal error.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// message is any JSON-RPC 2.0 message: a request (method and id), a
// notification (method, no id) or a response (id, result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Handler serves the requests and notifications a peer sends.
type Handler interface {
	// HandleRequest answers one request. It runs in its own goroutine, so
	// a long request (a prompt turn) does not hold up the others; ctx ends
	// when the connection closes. The result is marshalled as JSON.
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error)
	// HandleNotification handles one notification, in arrival order, on
	// the reading goroutine: it must return quickly.
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
}

// Conn is one JSON-RPC 2.0 connection over newline-delimited JSON: every
// message is one line. Writes are serialised, so notifications sent by one
// goroutine arrive in the order they were sent.
type Conn struct {
	w   io.Writer
	h   Handler
	log *slog.Logger

	wmu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[string]chan *message
	closed  bool
}

// NewConn returns a connection that writes to w and dispatches to h.
func NewConn(w io.Writer, h Handler, log *slog.Logger) *Conn {
	if log == nil {
		log = slog.Default()
	}
	return &Conn{w: w, h: h, log: log, pending: make(map[string]chan *message)}
}

// errClosed answers the calls still waiting when the connection closes.
var errClosed = errors.New("acp: the connection closed")

// Serve reads messages from r until it ends or ctx does, dispatching each.
// Before it returns it cancels the requests still running, waits for them,
// and fails the calls still waiting for an answer.
func (c *Conn) Serve(ctx context.Context, r io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	defer func() {
		cancel()
		c.mu.Lock()
		c.closed = true
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
		running.Wait()
	}()

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("acp: read: %w", err)
		case line = <-lines:
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			c.log.Warn("acp: a line that is not JSON was ignored", "err", err, "bytes", len(line))
			c.send(&message{ID: json.RawMessage("null"), Error: &Error{Code: CodeParseError, Message: "parse error: " + err.Error()}})
			continue
		}
		switch {
		case m.Method == "initialize" && len(m.ID) > 0:
			// Answered before the next line is read, so that a client that
			// pipelines session/new behind it sees initialize answered first.
			c.answer(ctx, &m)
		case m.Method != "" && len(m.ID) > 0:
			running.Go(func() { c.answer(ctx, &m) })
		case m.Method != "":
			c.h.HandleNotification(ctx, m.Method, m.Params)
		case len(m.ID) > 0:
			c.deliver(&m)
		default:
			c.log.Warn("acp: a message with neither method nor id was ignored")
		}
	}
}

// readLine reads one line of any length up to maxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("a message is longer than %d bytes", maxLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// answer runs one request and writes its response.
func (c *Conn) answer(ctx context.Context, m *message) {
	res, err := c.h.HandleRequest(ctx, m.Method, m.Params)
	reply := &message{ID: m.ID}
	if err == nil {
		raw, merr := json.Marshal(res)
		if merr != nil {
			err = fmt.Errorf("encode the result of %s: %w", m.Method, merr)
		} else {
			reply.Result = raw
		}
	}
	if err != nil {
		var rpcErr *Error
		if !errors.As(err, &rpcErr) {
			c.log.Error("acp: request failed", "method", m.Method, "err", err)
			rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
		}
		reply.Error = rpcErr
	}
	c.send(reply)
}

// deliver hands a response to the call waiting for it.
func (c *Conn) deliver(m *message) {
	key := string(m.ID)
	c.mu.Lock()
	ch, ok := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if !ok {
		c.log.Debug("acp: a response to no waiting call was ignored", "id", key)
		return
	}
	ch <- m
}

// send writes one message as one line.
func (c *Conn) send(m *message) error {
	m.JSONRPC = "2.0"
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("acp: encode %s: %w", m.Method, err)
	}
	raw = append(raw, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(raw); err != nil {
		return fmt.Errorf("acp: write: %w", err)
	}
	return nil
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("acp: encode %s: %w", method, err)
	}
	return c.send(&message{Method: method, Params: raw})
}

// Call sends a request and waits for its answer, for ctx to end, or for
// the connection to close. When ctx ends first, the peer is told with
// $/cancel_request and Call returns ctx's error; an answer that arrives
// later is dropped.
func (c *Conn) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("acp: encode %s: %w", method, err)
	}
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	c.nextID++
	id := json.RawMessage(strconv.FormatInt(c.nextID, 10))
	c.pending[string(id)] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, string(id))
		c.mu.Unlock()
	}
	if err := c.send(&message{ID: id, Method: method, Params: raw}); err != nil {
		forget()
		return nil, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, errClosed
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		forget()
		_ = c.Notify("$/cancel_request", map[string]any{"requestId": id})
		return nil, ctx.Err()
	}
}
