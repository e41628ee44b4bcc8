package web

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nagent/nagent/runtime/errs"
)

// Websocket timings.
const (
	writeWait      = 10 * time.Second
	maxMessageSize = 64 << 10
	// socketSendBuffer is each websocket's kernel send buffer (SO_SNDBUF;
	// Linux doubles it).
	socketSendBuffer = 64 << 10
)

// client is one websocket connection.
type client struct {
	send chan []byte
	// pong carries the payload of the client's last ping to writeLoop, the
	// connection's only writer (gorilla would answer from the reader).
	pong chan []byte
	done chan struct{}
	once sync.Once
	why  string
	// unblock makes a write blocked on a full socket fail at once, so a
	// dropped client's writer returns without waiting for its deadline.
	unblock func()
}

func newClient(queue int) *client {
	return &client{send: make(chan []byte, queue), pong: make(chan []byte, 1), done: make(chan struct{})}
}

// enqueue queues msg without blocking; false when the queue is full.
func (c *client) enqueue(msg []byte) bool {
	select {
	case <-c.done:
		return true // already going away; nothing to deliver
	default:
	}
	select {
	case c.send <- msg:
		return true
	default:
		return false
	}
}

// kill ends the connection with a reason; true on the first call.
func (c *client) kill(why string) bool {
	first := false
	c.once.Do(func() {
		c.why = why
		close(c.done)
		if c.unblock != nil && why == "send queue full" {
			c.unblock()
		}
		first = true
	})
	return first
}

// clientMessage is any message a client sends.
type clientMessage struct {
	Type           string   `json:"type"`
	Topics         []string `json:"topics"`
	LastEventID    int64    `json:"last_event_id"`
	ConfirmationID string   `json:"confirmation_id"`
	Approved       bool     `json:"approved"`
}

func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		s.writeError(w, r, errs.Errorf(errs.EFORBIDDEN, "cross-origin websocket refused"))
		return
	}
	_, ok, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !ok {
		s.writeError(w, r, errs.Errorf(errs.EUNAUTHORIZED, "log in first: POST /api/login, or send \"Authorization: Bearer <key>\""))
		return
	}
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	c := newClient(s.opts.SendQueue)
	raw := conn.NetConn()
	if tc, ok := raw.(*net.TCPConn); ok {
		// Bound what the kernel buffers for a client, so a stalled one
		// fills its send queue (and is dropped) after about 100 KiB, not
		// after the megabytes send-buffer auto-tuning would allow.
		tc.SetWriteBuffer(socketSendBuffer)
	}
	c.unblock = func() { raw.SetWriteDeadline(time.Now()) }
	if !s.hub.add(c) {
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(writeWait))
		conn.Close()
		return
	}
	hello := mustJSON(map[string]any{"type": "hello", "server_id": s.hub.serverID, "last_event_id": s.hub.LastEventID(),
		"heartbeat_ms": s.opts.PingInterval.Milliseconds()})
	c.enqueue(hello)
	s.wsWG.Add(2)
	go func() { defer s.wsWG.Done(); s.writeLoop(conn, c) }()
	go func() { defer s.wsWG.Done(); s.readLoop(conn, c) }()
}

// writeLoop is the only writer of conn: queued messages, pings, and the
// close frame when the client is killed. Messages that queue up within
// FlushInterval of the first go out together in one write, as one frame
// each: a busy run then costs each client one wake-up and one system call
// per interval rather than per event.
func (s *Server) writeLoop(conn *websocket.Conn, c *client) {
	ping := time.NewTicker(s.opts.PingInterval)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	raw := conn.NetConn()
	var buf []byte
	defer func() {
		ping.Stop()
		linger.Stop()
		s.hub.remove(c)
		conn.Close()
	}()
	for {
		select {
		case msg := <-c.send:
			buf = appendTextFrame(buf[:0], msg)
			if d := s.opts.FlushInterval; d > 0 {
				linger.Reset(d)
				select {
				case <-linger.C:
				case <-c.done:
					linger.Stop()
					s.closeConn(conn, c)
					return
				}
			}
		drain:
			for len(buf) < maxBatchBytes {
				select {
				case m := <-c.send:
					buf = appendTextFrame(buf, m)
				default:
					break drain
				}
			}
			raw.SetWriteDeadline(time.Now().Add(writeWait))
			if _, err := raw.Write(buf); err != nil {
				c.kill("write failed")
				return
			}
			if cap(buf) > 4*maxBatchBytes {
				buf = nil // do not keep a huge buffer after a burst
			}
		case data := <-c.pong:
			if err := conn.WriteControl(websocket.PongMessage, data, time.Now().Add(writeWait)); err != nil {
				c.kill("pong failed")
				return
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				c.kill("ping failed")
				return
			}
		case <-c.done:
			s.closeConn(conn, c)
			return
		}
	}
}

// closeConn sends the close frame with the client's reason.
func (s *Server) closeConn(conn *websocket.Conn, c *client) {
	code := websocket.ClosePolicyViolation
	switch c.why {
	case "server shutting down":
		code = websocket.CloseGoingAway
	case "connection closed":
		code = websocket.CloseNormalClosure
	}
	conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, c.why), time.Now().Add(time.Second))
}

// maxBatchBytes bounds one coalesced write.
const maxBatchBytes = 64 << 10

// appendTextFrame appends one final, unmasked text frame holding payload
// (RFC 6455 section 5.2: a server never masks). Writing frames ourselves
// lets a batch go out in one system call; gorilla's writer sends one per
// message. Only writeLoop writes to the connection, so frames never
// interleave with gorilla's control frames.
func appendTextFrame(b, payload []byte) []byte {
	const finText = 0x80 | websocket.TextMessage
	n := len(payload)
	switch {
	case n < 126:
		b = append(b, finText, byte(n))
	case n <= 0xffff:
		b = append(b, finText, 126, byte(n>>8), byte(n))
	default:
		b = append(b, finText, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// readLoop handles the client's messages until the connection ends.
func (s *Server) readLoop(conn *websocket.Conn, c *client) {
	defer func() {
		c.kill("connection closed")
		conn.Close()
	}()
	conn.SetReadLimit(maxMessageSize)
	alive := func() { conn.SetReadDeadline(time.Now().Add(s.opts.PingInterval * 12 / 5)) }
	alive()
	conn.SetPongHandler(func(string) error { alive(); return nil })
	// Control replies go through writeLoop too: gorilla's default handlers
	// would write from this goroutine, between writeLoop's raw frames.
	conn.SetPingHandler(func(data string) error {
		alive()
		select {
		case c.pong <- []byte(data):
		default: // a pong is already due; one answers both
		}
		return nil
	})
	conn.SetCloseHandler(func(int, string) error { return nil }) // the deferred kill answers it
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		alive()
		var m clientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.enqueue(wsError(errs.EINVALID, "a message must be a JSON object with a type"))
			continue
		}
		if !s.handleClientMessage(c, m) {
			s.hub.drop(c)
			return
		}
	}
}

func wsError(code, msg string) []byte {
	return mustJSON(map[string]string{"type": "error", "code": code, "message": msg})
}

// handleClientMessage acts on one message; false ends the connection.
func (s *Server) handleClientMessage(c *client, m clientMessage) bool {
	switch m.Type {
	case "ping":
		return c.enqueue([]byte(`{"type":"pong"}`))
	case "subscribe", "unsubscribe":
		if len(m.Topics) == 0 || len(m.Topics) > 100 {
			return c.enqueue(wsError(errs.EINVALID, m.Type+" needs 1 to 100 topics"))
		}
		for _, t := range m.Topics {
			if err := validTopic(t); err != nil {
				return c.enqueue(wsError(errs.EINVALID, err.Error()))
			}
		}
		if m.Type == "unsubscribe" {
			s.hub.unsubscribe(c, m.Topics)
			return c.enqueue(mustJSON(map[string]any{"type": "unsubscribed", "topics": m.Topics}))
		}
		if m.LastEventID < 0 {
			return c.enqueue(wsError(errs.EINVALID, "last_event_id must be ≥ 0"))
		}
		if !c.enqueue(mustJSON(map[string]any{"type": "subscribed", "topics": m.Topics})) {
			return false
		}
		if !s.hub.subscribe(c, m.Topics, m.LastEventID) {
			return false
		}
		if m.LastEventID == 0 {
			// A fresh page gets the prompts that are still waiting.
			for _, msg := range s.confirms.pendingFor(m.Topics) {
				if !c.enqueue(msg) {
					return false
				}
			}
		}
		return true
	case "confirm_answer":
		if m.ConfirmationID == "" {
			return c.enqueue(wsError(errs.EINVALID, "confirm_answer needs a confirmation_id"))
		}
		if err := s.confirms.answer(m.ConfirmationID, m.Approved); err != nil {
			var e *errs.Error
			code := errs.EINTERNAL
			if errors.As(err, &e) {
				code = e.Code
			}
			return c.enqueue(wsError(code, errs.Message(err)))
		}
		return true
	}
	return c.enqueue(wsError(errs.EINVALID, "unknown message type "+jsonQuote(m.Type)+"; send subscribe, unsubscribe, confirm_answer or ping"))
}

func jsonQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
