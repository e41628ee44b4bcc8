package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/acp"
)

// handlerFuncs adapts functions to acp.Handler.
type handlerFuncs struct {
	request      func(ctx context.Context, method string, params json.RawMessage) (any, error)
	notification func(ctx context.Context, method string, params json.RawMessage)
}

func (h handlerFuncs) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if h.request == nil {
		return nil, &acp.Error{Code: acp.CodeMethodNotFound, Message: "no such method"}
	}
	return h.request(ctx, method, params)
}

func (h handlerFuncs) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	if h.notification != nil {
		h.notification(ctx, method, params)
	}
}

// peer is the far end of a Conn under test: it writes raw lines to the
// conn and reads the conn's lines.
type peer struct {
	toConn   *io.PipeWriter
	fromConn *bufio.Scanner
	done     chan error
	cancel   context.CancelFunc
}

func startConn(tb testing.TB, h acp.Handler) (*acp.Conn, *peer) {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := acp.NewConn(outW, h, nil)
	ctx, cancel := context.WithCancel(context.Background())
	p := &peer{toConn: inW, fromConn: bufio.NewScanner(outR), done: make(chan error, 1), cancel: cancel}
	go func() { p.done <- conn.Serve(ctx, inR) }()
	tb.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
	})
	return conn, p
}

func (p *peer) send(tb testing.TB, line string) {
	tb.Helper()
	if _, err := io.WriteString(p.toConn, line+"\n"); err != nil {
		tb.Fatal(err)
	}
}

func (p *peer) read(tb testing.TB) map[string]any {
	tb.Helper()
	if !p.fromConn.Scan() {
		tb.Fatalf("no line from the conn: %v", p.fromConn.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(p.fromConn.Bytes(), &m); err != nil {
		tb.Fatalf("the conn wrote a line that is not JSON: %q", p.fromConn.Text())
	}
	if m["jsonrpc"] != "2.0" {
		tb.Errorf("line %q lacks jsonrpc 2.0", p.fromConn.Text())
	}
	return m
}

func TestConnAnswersRequests(t *testing.T) {
	_, p := startConn(t, handlerFuncs{request: func(_ context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case "echo":
			return json.RawMessage(params), nil
		case "fail":
			return nil, errors.New("boom")
		case "invalid":
			return nil, &acp.Error{Code: acp.CodeInvalidParams, Message: "bad"}
		}
		return nil, &acp.Error{Code: acp.CodeMethodNotFound, Message: "no " + method}
	}})
	tests := []struct {
		name, line string
		id         any
		code       float64
		result     string
	}{
		{name: "Result", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}`, id: float64(1), result: `{"a":1}`},
		{name: "StringID", line: `{"jsonrpc":"2.0","id":"x","method":"echo","params":[]}`, id: "x", result: `[]`},
		{name: "UnknownMethod", line: `{"jsonrpc":"2.0","id":2,"method":"nope"}`, id: float64(2), code: acp.CodeMethodNotFound},
		{name: "CodedError", line: `{"jsonrpc":"2.0","id":3,"method":"invalid"}`, id: float64(3), code: acp.CodeInvalidParams},
		{name: "PlainErrorIsInternal", line: `{"jsonrpc":"2.0","id":4,"method":"fail"}`, id: float64(4), code: acp.CodeInternalError},
		{name: "ParseError", line: `{not json`, id: nil, code: acp.CodeParseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(t, tt.line)
			m := p.read(t)
			if m["id"] != tt.id {
				t.Errorf("id = %v, want %v", m["id"], tt.id)
			}
			if tt.code != 0 {
				e, _ := m["error"].(map[string]any)
				if e == nil || e["code"] != tt.code {
					t.Fatalf("response %v, want error code %v", m, tt.code)
				}
				return
			}
			got, _ := json.Marshal(m["result"])
			if string(got) != tt.result {
				t.Errorf("result = %s, want %s", got, tt.result)
			}
		})
	}
}

func TestConnCall(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	conn, p := startConn(t, handlerFuncs{notification: func(_ context.Context, method string, params json.RawMessage) {
		mu.Lock()
		notes = append(notes, method+string(params))
		mu.Unlock()
	}})

	t.Run("Answered", func(t *testing.T) {
		got := make(chan string, 1)
		go func() {
			raw, err := conn.Call(context.Background(), "ask", map[string]int{"q": 1})
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- string(raw)
		}()
		req := p.read(t)
		if req["method"] != "ask" || req["id"] == nil {
			t.Fatalf("request = %v", req)
		}
		id, _ := json.Marshal(req["id"])
		p.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"ok":true}}`)
		if r := <-got; r != `{"ok":true}` {
			t.Errorf("Call = %s", r)
		}
	})

	t.Run("ErrorAnswer", func(t *testing.T) {
		got := make(chan error, 1)
		go func() {
			_, err := conn.Call(context.Background(), "ask", nil)
			got <- err
		}()
		id, _ := json.Marshal(p.read(t)["id"])
		p.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32000,"message":"nope"}}`)
		var e *acp.Error
		if err := <-got; !errors.As(err, &e) || e.Code != -32000 {
			t.Errorf("Call error = %v, want the peer's -32000", err)
		}
	})

	t.Run("CancelledTellsThePeer", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() {
			_, err := conn.Call(ctx, "ask", nil)
			got <- err
		}()
		req := p.read(t)
		cancel()
		note := p.read(t)
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Errorf("Call error = %v, want context.Canceled", err)
		}
		params, _ := note["params"].(map[string]any)
		if note["method"] != "$/cancel_request" || params["requestId"] != req["id"] {
			t.Errorf("after a cancelled call the conn sent %v, want $/cancel_request for %v", note, req["id"])
		}
		// A late answer is dropped without harm.
		id, _ := json.Marshal(req["id"])
		p.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{}}`)
	})

	t.Run("NotificationsInOrder", func(t *testing.T) {
		for _, n := range []string{"1", "2", "3"} {
			p.send(t, `{"jsonrpc":"2.0","method":"n","params":`+n+`}`)
		}
		// A request read after them is answered after they were handled.
		p.send(t, `{"jsonrpc":"2.0","id":99,"method":"after"}`)
		p.read(t)
		go conn.Notify("ping", map[string]int{}) // the pipe has no buffer
		if m := p.read(t); m["method"] != "ping" {
			t.Errorf("Notify sent %v", m)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(notes, ",") != "n1,n2,n3" {
			t.Errorf("notifications handled = %v", notes)
		}
	})

	t.Run("CloseFailsWaitingCalls", func(t *testing.T) {
		got := make(chan error, 1)
		go func() {
			_, err := conn.Call(context.Background(), "ask", nil)
			got <- err
		}()
		p.read(t)
		p.toConn.Close()
		select {
		case err := <-got:
			if err == nil {
				t.Error("Call succeeded after the connection closed")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Call still waits after the connection closed")
		}
		if err := <-p.done; err != nil {
			t.Errorf("Serve = %v, want nil at end of input", err)
		}
	})
}

// A client may pipeline session/new right behind initialize; initialize is
// still answered first, even when it is the slower one.
func TestConnAnswersInitializeFirst(t *testing.T) {
	_, p := startConn(t, handlerFuncs{request: func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		if method == "initialize" {
			time.Sleep(50 * time.Millisecond)
		}
		return method, nil
	}})
	if _, err := io.WriteString(p.toConn, `{"jsonrpc":"2.0","id":0,"method":"initialize"}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"session/new"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"initialize", "session/new"} {
		if got := p.read(t)["result"]; got != want {
			t.Fatalf("answered %v, want %s next", got, want)
		}
	}
}
