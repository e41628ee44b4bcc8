package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nagent/nagent/adapters/openai"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/web"
)

// envOptions tune newEnv.
type envOptions struct {
	keys    []string
	policy  string // written to $NAGENT_HOME/policies/test.rego before start
	web     web.Options
	replies []scripted.Reply
	// sandbox is sandbox.backend; "" means off.
	sandbox string
}

// env is a real dashboard over a real App, SQLite file and scripted model,
// served by an httptest server on 127.0.0.1 exactly as `nagent serve` mounts it.
type env struct {
	tb     testing.TB
	model  *scripted.Server
	cfg    *config.Config
	app    *app.App
	dash   *web.Server
	srv    *httptest.Server
	client *http.Client // with a cookie jar
	csrf   string
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newEnv(tb testing.TB, o envOptions) *env {
	tb.Helper()
	model := scripted.Start(o.replies...)
	tb.Cleanup(model.Close)
	cfg := config.Defaults()
	cfg.Home = tb.TempDir()
	cfg.LLM.BaseURL = model.URL()
	cfg.LLM.Model = "scripted-model"
	cfg.LLM.MaxAttempts = 1
	cfg.Server.APIKeys = o.keys
	cfg.Sandbox.Backend = "off"
	if o.sandbox != "" {
		cfg.Sandbox.Backend = o.sandbox
		cfg.Sandbox.AllowUnisolated = o.sandbox == "unisolated"
	}
	if o.policy != "" {
		dir := filepath.Join(cfg.Home, "policies")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "test.rego"), []byte(o.policy), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	log := quietLog()
	a, err := app.New(context.Background(), &cfg, app.Options{Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	if o.web.Log == nil {
		o.web.Log = log
	}
	dash := web.New(a, o.web)
	api := openai.NewServer(a, log)
	srv := httptest.NewServer(web.Mount(api.Handler(), dash))
	tb.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		dash.Close()
		a.Close()
	})
	jar, _ := cookiejar.New(nil)
	return &env{tb: tb, model: model, cfg: &cfg, app: a, dash: dash, srv: srv, client: &http.Client{Jar: jar, Timeout: 60 * time.Second}}
}

// response is a decoded API answer.
type response struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

// errCode returns error.code of an error answer.
func (r response) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r response) errField() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["field"].(string)
	return c
}

// do sends a request with the env's cookies and, for state-changing
// methods, its CSRF token. body may be a string (sent as is) or a value
// (sent as JSON).
func (e *env) do(method, path string, body any, hdr ...string) response {
	e.tb.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.tb.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.tb.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.csrf != "" && method != http.MethodGet {
		req.Header.Set(web.CSRFHeader, e.csrf)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := response{status: resp.StatusCode, raw: string(raw), header: resp.Header}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// login logs in with key (or, without keys, fetches the CSRF token).
func (e *env) login(key string) {
	e.tb.Helper()
	var r response
	if key == "" {
		r = e.do("GET", "/api/auth", nil)
	} else {
		r = e.do("POST", "/api/login", map[string]string{"key": key})
	}
	if r.status != 200 {
		e.tb.Fatalf("login: %d %s", r.status, r.raw)
	}
	e.csrf, _ = r.body["csrf_token"].(string)
	if e.csrf == "" {
		e.tb.Fatalf("login gave no csrf_token: %s", r.raw)
	}
}

// wsClient is a gorilla websocket client of the dashboard.
type wsClient struct {
	tb   testing.TB
	conn *websocket.Conn
	mu   sync.Mutex
}

// dialWS opens /ws with the env's cookies.
func (e *env) dialWS(extra http.Header) (*wsClient, *http.Response, error) {
	h := http.Header{}
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws"
	req, _ := http.NewRequest("GET", e.srv.URL+"/ws", nil)
	for _, c := range e.client.Jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	if c := req.Header.Get("Cookie"); c != "" {
		h.Set("Cookie", c)
	}
	h.Set("Origin", e.srv.URL)
	for k, v := range extra {
		h[k] = v
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.Dial(u, h)
	if err != nil {
		return nil, resp, err
	}
	return &wsClient{tb: e.tb, conn: conn}, resp, nil
}

func (e *env) mustWS() *wsClient {
	e.tb.Helper()
	c, _, err := e.dialWS(nil)
	if err != nil {
		e.tb.Fatalf("dial /ws: %v", err)
	}
	e.tb.Cleanup(func() { c.conn.Close() })
	hello := c.next(10 * time.Second)
	if hello["type"] != "hello" {
		e.tb.Fatalf("first message = %v, want hello", hello)
	}
	return c
}

func (c *wsClient) send(v any) {
	c.tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.conn.WriteJSON(v); err != nil {
		c.tb.Fatalf("ws send: %v", err)
	}
}

// next reads one message, failing the test after timeout.
func (c *wsClient) next(timeout time.Duration) map[string]any {
	c.tb.Helper()
	m, err := c.read(timeout)
	if err != nil {
		c.tb.Fatalf("ws read: %v", err)
	}
	return m
}

func (c *wsClient) read(timeout time.Duration) (map[string]any, error) {
	c.conn.SetReadDeadline(time.Now().Add(timeout))
	var m map[string]any
	_, data, err := c.conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	err = json.Unmarshal(data, &m)
	return m, err
}

func (c *wsClient) subscribe(lastID int64, topics ...string) {
	c.tb.Helper()
	c.send(map[string]any{"type": "subscribe", "topics": topics, "last_event_id": lastID})
	for { // events of topics subscribed earlier may come first; they are skipped
		m := c.next(10 * time.Second)
		if m["type"] == "subscribed" {
			return
		}
		if m["type"] != "event" {
			c.tb.Fatalf("subscribe answered %v", m)
		}
	}
}

// event is an "event" message.
type event struct {
	id    int64
	topic string
	data  map[string]any
}

func (ev event) typ() string { s, _ := ev.data["type"].(string); return s }

func (ev event) tool() map[string]any { t, _ := ev.data["tool"].(map[string]any); return t }

// until reads events until stop returns true, returning them all.
func (c *wsClient) until(timeout time.Duration, stop func(event) bool) []event {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	var out []event
	for {
		left := time.Until(deadline)
		if left <= 0 {
			c.tb.Fatalf("no stop event within %v; got %d events", timeout, len(out))
		}
		m := c.next(left)
		if m["type"] != "event" {
			continue
		}
		id, _ := m["id"].(float64)
		topic, _ := m["topic"].(string)
		data, _ := m["event"].(map[string]any)
		ev := event{id: int64(id), topic: topic, data: data}
		out = append(out, ev)
		if stop(ev) {
			return out
		}
	}
}

func isType(t string) func(event) bool { return func(ev event) bool { return ev.typ() == t } }
