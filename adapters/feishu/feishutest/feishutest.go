// Package feishutest is a local fake of the Feishu open platform for tests:
// the long-connection endpoint discovery, the websocket with the SDK's own
// protobuf frames (pings, pongs, events and their acks), the tenant token,
// the bot info and the im/v1 message APIs (reply, patch, create). Point the
// SDK at URL() with larkws.WithDomain and lark.WithOpenBaseUrl.
package feishutest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// Platform is a running fake. It is safe for concurrent use.
type Platform struct {
	AppID, AppSecret, BotOpenID string
	// PingInterval is the ClientConfig ping interval in seconds sent at
	// discovery and in every pong.
	PingInterval int

	srv *httptest.Server
	up  websocket.Upgrader

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	conns    []*conn
	connects int
	pings    int
	refuse   bool
	calls    []Call
	acks     map[string]Ack
	nextID   int
	failNext map[string]int // API kind → rate-limit answers left
	counts   map[string]int // API kind → calls answered
}

// Call is one im/v1 API call the fake received.
type Call struct {
	Kind      string // "reply", "patch" or "create"
	MessageID string // the message replied to or patched; the chat for create
	MsgType   string
	Content   string
	// Result is the message id the fake assigned (reply, create).
	Result string
	At     time.Time
}

// Ack is the client's acknowledgement of one event frame.
type Ack struct {
	Code int             // the HTTP-like status in the ack (200 when handled)
	Data json.RawMessage // the handler's response, e.g. a card action's toast
	At   time.Time
}

type conn struct {
	ws *websocket.Conn
	mu sync.Mutex // serialises writes
}

// Start starts a fake for the given app credentials on 127.0.0.1.
func Start(appID, appSecret, botOpenID string) *Platform {
	p := &Platform{AppID: appID, AppSecret: appSecret, BotOpenID: botOpenID, PingInterval: 120,
		changed: make(chan struct{}), acks: map[string]Ack{}, failNext: map[string]int{}, counts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+larkws.GenEndpointUri, p.endpoint)
	mux.HandleFunc("GET /ws", p.websocket)
	mux.HandleFunc("POST /open-apis/auth/v3/tenant_access_token/internal", p.tenantToken)
	mux.HandleFunc("GET /open-apis/bot/v3/info", p.authed(p.botInfo))
	mux.HandleFunc("POST /open-apis/im/v1/messages/{id}/reply", p.authed(p.message("reply")))
	mux.HandleFunc("PATCH /open-apis/im/v1/messages/{id}", p.authed(p.message("patch")))
	mux.HandleFunc("POST /open-apis/im/v1/messages", p.authed(p.message("create")))
	p.srv = httptest.NewServer(mux)
	return p
}

// URL is the fake's base URL, for both the ws domain and the OpenAPI.
func (p *Platform) URL() string { return p.srv.URL }

// Close drops every connection and stops the server.
func (p *Platform) Close() {
	p.DropConnections()
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// notify wakes waiters; call with p.mu held.
func (p *Platform) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Wait blocks until cond (called with the fake locked) holds or timeout
// passes, and reports whether it held.
func (p *Platform) Wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ok := cond()
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// Refuse makes the endpoint discovery fail (true) or work again (false),
// like a platform outage.
func (p *Platform) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// RateLimitNext makes the next n calls of kind answer the platform's
// rate-limit error.
func (p *Platform) RateLimitNext(kind string, n int) {
	p.mu.Lock()
	p.failNext[kind] = n
	p.mu.Unlock()
}

// Connected returns the number of open websocket connections.
func (p *Platform) Connected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// ConnectedLocked is Connected for use inside a Wait condition.
func (p *Platform) ConnectedLocked() int { return len(p.conns) }

// Connects returns how many websocket connections were ever accepted.
func (p *Platform) Connects() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connects
}

// Pings returns how many ping frames the clients sent.
func (p *Platform) Pings() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pings
}

// Calls returns the API calls received so far, in order.
func (p *Platform) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// CallsLocked is Calls for use inside a Wait condition.
func (p *Platform) CallsLocked() []Call { return p.calls }

// CountLocked returns how many calls of kind were answered, for use inside
// a Wait condition.
func (p *Platform) CountLocked(kind string) int { return p.counts[kind] }

// AckLocked returns the ack of frame id, for use inside a Wait condition.
func (p *Platform) AckLocked(frameID string) (Ack, bool) {
	a, ok := p.acks[frameID]
	return a, ok
}

// DropConnections closes every websocket connection from the server side.
func (p *Platform) DropConnections() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.notify()
	p.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (p *Platform) clientConfig() *larkws.ClientConfig {
	return &larkws.ClientConfig{PingInterval: p.PingInterval, ReconnectCount: 0, ReconnectInterval: 1, ReconnectNonce: 0}
}

func (p *Platform) endpoint(w http.ResponseWriter, r *http.Request) {
	var req larkws.BootstrapRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, larkws.EndpointResp{Code: 400, Msg: "bad request"})
		return
	}
	p.mu.Lock()
	refuse := p.refuse
	p.mu.Unlock()
	switch {
	case refuse:
		writeJSON(w, http.StatusOK, larkws.EndpointResp{Code: larkws.SystemBusy, Msg: "system busy"})
		return
	case req.AppID != p.AppID || req.AppSecret != p.AppSecret:
		writeJSON(w, http.StatusOK, larkws.EndpointResp{Code: 10003, Msg: "invalid app credentials"})
		return
	}
	url := "ws" + strings.TrimPrefix(p.srv.URL, "http") + "/ws?device_id=fake-device&service_id=7"
	writeJSON(w, http.StatusOK, larkws.EndpointResp{Code: larkws.OK, Data: &larkws.Endpoint{Url: url, ClientConfig: p.clientConfig()}})
}

func (p *Platform) websocket(w http.ResponseWriter, r *http.Request) {
	ws, err := p.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws}
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.connects++
	p.notify()
	p.mu.Unlock()
	defer func() {
		ws.Close()
		p.mu.Lock()
		for i, x := range p.conns {
			if x == c {
				p.conns = append(p.conns[:i], p.conns[i+1:]...)
				break
			}
		}
		p.notify()
		p.mu.Unlock()
	}()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f larkws.Frame
		if err := f.Unmarshal(data); err != nil {
			continue
		}
		hs := larkws.Headers(f.Headers)
		switch {
		case larkws.FrameType(f.Method) == larkws.FrameTypeControl && hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePing):
			p.mu.Lock()
			p.pings++
			p.notify()
			p.mu.Unlock()
			cfg, _ := json.Marshal(p.clientConfig())
			pong := larkws.Frame{Method: int32(larkws.FrameTypeControl), Service: f.Service, Payload: cfg}
			pong.Headers = larkws.Headers{}
			(*larkws.Headers)(&pong.Headers).Add(larkws.HeaderType, string(larkws.MessageTypePong))
			_ = c.write(pong)
		case larkws.FrameType(f.Method) == larkws.FrameTypeData:
			var resp larkws.Response
			_ = json.Unmarshal(f.Payload, &resp)
			p.mu.Lock()
			p.acks[hs.GetString(larkws.HeaderMessageID)] = Ack{Code: resp.StatusCode, Data: resp.Data, At: time.Now()}
			p.notify()
			p.mu.Unlock()
		}
	}
}

func (c *conn) write(f larkws.Frame) error {
	b, err := f.Marshal()
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws.WriteMessage(websocket.BinaryMessage, b)
}

// ErrNotConnected is returned when an event is pushed with no client on
// the long connection.
var ErrNotConnected = errors.New("feishutest: no client is connected")

// Push sends payload (an event's JSON) as one event frame with frame id
// frameID over the newest connection. With fragments > 1 the payload is
// split into that many frames, as the platform does for large events.
func (p *Platform) Push(frameID string, payload []byte, fragments int) error {
	p.mu.Lock()
	var c *conn
	if n := len(p.conns); n > 0 {
		c = p.conns[n-1]
	}
	p.mu.Unlock()
	if c == nil {
		return ErrNotConnected
	}
	if fragments < 1 {
		fragments = 1
	}
	size := (len(payload) + fragments - 1) / fragments
	for i := 0; i < fragments; i++ {
		part := payload[min(i*size, len(payload)):min((i+1)*size, len(payload))]
		f := larkws.Frame{Method: int32(larkws.FrameTypeData), Service: 7, Payload: part}
		hs := larkws.Headers{}
		hs.Add(larkws.HeaderType, string(larkws.MessageTypeEvent))
		hs.Add(larkws.HeaderMessageID, frameID)
		hs.Add(larkws.HeaderSum, fmt.Sprint(fragments))
		hs.Add(larkws.HeaderSeq, fmt.Sprint(i))
		hs.Add(larkws.HeaderTraceID, "trace-"+frameID)
		f.Headers = hs
		if err := c.write(f); err != nil {
			return err
		}
	}
	return nil
}

// WaitAck waits for the ack of frame frameID.
func (p *Platform) WaitAck(frameID string, timeout time.Duration) (Ack, bool) {
	var a Ack
	ok := p.Wait(timeout, func() bool {
		var found bool
		a, found = p.acks[frameID]
		return found
	})
	return a, ok
}

func (p *Platform) tenantToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	if req.AppID != p.AppID || req.AppSecret != p.AppSecret {
		writeJSON(w, http.StatusOK, map[string]any{"code": 10014, "msg": "app secret invalid"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "tenant_access_token": p.token(), "expire": 7200})
}

func (p *Platform) token() string { return "t-fake-" + p.AppID }

func (p *Platform) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+p.token() {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 99991663, "msg": "invalid access token"})
			return
		}
		h(w, r)
	}
}

func (p *Platform) botInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "bot": map[string]any{"open_id": p.BotOpenID, "app_name": "fake bot"}})
}

func (p *Platform) message(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ReceiveID string `json:"receive_id"`
			MsgType   string `json:"msg_type"`
			Content   string `json:"content"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Content == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "invalid message content"})
			return
		}
		call := Call{Kind: kind, MessageID: r.PathValue("id"), MsgType: req.MsgType, Content: req.Content, At: time.Now()}
		if kind == "create" {
			if r.URL.Query().Get("receive_id_type") != "chat_id" {
				writeJSON(w, http.StatusBadRequest, map[string]any{"code": 230001, "msg": "receive_id_type must be chat_id here"})
				return
			}
			call.MessageID = req.ReceiveID
		}
		p.mu.Lock()
		if p.failNext[kind] > 0 {
			p.failNext[kind]--
			p.mu.Unlock()
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"code": 99991400, "msg": "request trigger frequency limit"})
			return
		}
		data := map[string]any{}
		if kind != "patch" {
			p.nextID++
			call.Result = fmt.Sprintf("om_bot_%d", p.nextID)
			data["message_id"] = call.Result
			data["chat_id"] = "oc_fake"
			data["msg_type"] = req.MsgType
		}
		p.calls = append(p.calls, call)
		p.counts[kind]++
		p.notify()
		p.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": data})
	}
}
