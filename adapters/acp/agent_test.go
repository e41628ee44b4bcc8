package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/nagent/nagent/adapters/acp"
	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// gatewayFunc adapts a function to acp.Gateway.
type gatewayFunc func(ctx context.Context, msg gateway.Message, emit agent.EmitFunc) (*agent.Result, error)

func (f gatewayFunc) Handle(ctx context.Context, msg gateway.Message, emit agent.EmitFunc) (*agent.Result, error) {
	return f(ctx, msg, emit)
}

// noHistory stores nothing.
type noHistory struct{}

func (noHistory) GetSession(_ context.Context, id string) (*store.Session, error) {
	return nil, errs.Errorf(errs.ENOTFOUND, "session %q not found", id)
}
func (noHistory) ListSessions(context.Context, store.SessionFilter) ([]*store.Session, error) {
	return nil, nil
}
func (noHistory) ListMessages(context.Context, string) ([]*store.Message, error)   { return nil, nil }
func (noHistory) ListToolCalls(context.Context, string) ([]*store.ToolCall, error) { return nil, nil }

// editor is an in-process ACP client talking to an Agent over pipes.
type editor struct {
	conn *acp.Conn

	mu          sync.Mutex
	updates     []map[string]any
	asked       []json.RawMessage
	cancelled   []any // request ids of $/cancel_request notifications
	cancelSeen  chan struct{}
	onPermision func(ctx context.Context, params json.RawMessage) (any, error)
}

func (e *editor) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != "session/request_permission" {
		return nil, &acp.Error{Code: acp.CodeMethodNotFound, Message: method}
	}
	e.mu.Lock()
	e.asked = append(e.asked, params)
	f := e.onPermision
	e.mu.Unlock()
	return f(ctx, params)
}

func (e *editor) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var m map[string]any
	json.Unmarshal(params, &m)
	switch method {
	case "session/update":
		e.updates = append(e.updates, m["update"].(map[string]any))
	case "$/cancel_request":
		e.cancelled = append(e.cancelled, m["requestId"])
		if len(e.cancelled) == 1 {
			close(e.cancelSeen)
		}
	}
}

func (e *editor) call(tb testing.TB, method string, params any) map[string]any {
	tb.Helper()
	raw, err := e.conn.Call(context.Background(), method, params)
	if err != nil {
		tb.Fatalf("%s: %v", method, err)
	}
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m
}

func startAgent(tb testing.TB, gw acp.Gateway) *editor {
	tb.Helper()
	toAgentR, toAgentW := io.Pipe()
	toEditorR, toEditorW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	a := acp.New(acp.Options{Gateway: gw, History: noHistory{}})
	served := make(chan struct{})
	go func() {
		defer close(served)
		a.Serve(ctx, toAgentR, toEditorW)
	}()
	e := &editor{cancelSeen: make(chan struct{})}
	e.conn = acp.NewConn(toAgentW, e, nil)
	go e.conn.Serve(ctx, toEditorR)
	tb.Cleanup(func() {
		toAgentW.Close()
		cancel()
		<-served
		toEditorW.Close()
	})
	e.call(tb, "initialize", map[string]any{"protocolVersion": 1})
	return e
}

func newSession(tb testing.TB, e *editor) string {
	tb.Helper()
	return e.call(tb, "session/new", map[string]any{"cwd": "/work", "mcpServers": []any{}})["sessionId"].(string)
}

func prompt(tb testing.TB, e *editor, sessionID, text string) string {
	tb.Helper()
	res := e.call(tb, "session/prompt", map[string]any{"sessionId": sessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	return res["stopReason"].(string)
}

// confirmTurn is a gateway whose every turn starts the clock tool, asks
// the confirmer, and reports the outcome.
func confirmTurn(seen *[]gateway.Message) acp.Gateway {
	n := 0
	var mu sync.Mutex
	return gatewayFunc(func(ctx context.Context, msg gateway.Message, emit agent.EmitFunc) (*agent.Result, error) {
		mu.Lock()
		n++
		id := "c" + string(rune('0'+n))
		*seen = append(*seen, msg)
		mu.Unlock()
		emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.ToolEvent{ID: id, Name: "get_current_time", Arguments: "{}"}})
		ok, err := msg.Confirmer.Confirm(ctx, tools.ToolCallRequest{ID: id, Name: "get_current_time", Arguments: "{}"},
			tools.ToolDefinition{Name: "get_current_time"}, []string{"clock needs approval"})
		status := tools.StatusSuccess
		if !ok || err != nil {
			status = tools.StatusDenied
		}
		emit(agent.Event{Type: agent.EventToolFinished, Tool: &agent.ToolEvent{ID: id, Name: "get_current_time", Status: string(status), Content: "result"}})
		if ctx.Err() != nil {
			return &agent.Result{Status: "cancelled", Reason: agent.ReasonCancelled}, nil
		}
		emit(agent.Event{Type: agent.EventDelta, Content: "done"})
		return &agent.Result{Status: "completed", Content: "done"}, nil
	})
}

func TestAgentPermission(t *testing.T) {
	t.Run("AllowAlwaysIsRemembered", func(t *testing.T) {
		var seen []gateway.Message
		e := startAgent(t, confirmTurn(&seen))
		e.onPermision = func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_always"}}, nil
		}
		id := newSession(t, e)
		for range 2 {
			if got := prompt(t, e, id, "time?"); got != acp.StopEndTurn {
				t.Fatalf("stopReason = %s", got)
			}
		}
		if len(e.asked) != 1 {
			t.Errorf("asked %d times, want 1: allow_always covers the rest of the session", len(e.asked))
		}
		var req struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				ToolCallID, Kind, Status string
				Content                  []struct{ Content struct{ Text string } }
			} `json:"toolCall"`
			Options []struct{ OptionID, Kind string }
		}
		json.Unmarshal(e.asked[0], &req)
		if req.SessionID != id || req.ToolCall.ToolCallID != "c1" || req.ToolCall.Kind != "read" || req.ToolCall.Status != "pending" {
			t.Errorf("permission request = %s", e.asked[0])
		}
		if len(req.ToolCall.Content) != 1 || !strings.Contains(req.ToolCall.Content[0].Content.Text, "clock needs approval") {
			t.Errorf("the request does not give the policy's reason: %s", e.asked[0])
		}
		if m := seen[0]; m.Conversation.Platform != gateway.PlatformACP || m.Conversation.ChatID != id || m.SessionID != id {
			t.Errorf("gateway message = %+v, want platform acp, chat and session %s", m, id)
		}
		// A second session asks again.
		if prompt(t, e, newSession(t, e), "time?"); len(e.asked) != 2 {
			t.Errorf("a new session was not asked")
		}
	})

	t.Run("CancelAnswersThePendingRequest", func(t *testing.T) {
		var seen []gateway.Message
		e := startAgent(t, confirmTurn(&seen))
		id := newSession(t, e)
		// The editor leaves the question open and presses stop.
		e.onPermision = func(context.Context, json.RawMessage) (any, error) {
			e.conn.Notify("session/cancel", map[string]string{"sessionId": id})
			<-e.cancelSeen // the agent withdraws the question
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
		if got := prompt(t, e, id, "time?"); got != acp.StopCancelled {
			t.Fatalf("stopReason = %s, want cancelled", got)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.cancelled) != 1 {
			t.Errorf("the agent sent %d $/cancel_request, want 1 for the pending permission request", len(e.cancelled))
		}
		last := e.updates[len(e.updates)-1]
		if last["sessionUpdate"] != "tool_call_update" || last["status"] != "failed" {
			t.Errorf("last update = %v, want the denied call failed", last)
		}
	})
}

func TestAgentPromptErrors(t *testing.T) {
	e := startAgent(t, gatewayFunc(func(context.Context, gateway.Message, agent.EmitFunc) (*agent.Result, error) {
		return nil, errors.New("unreachable")
	}))
	tests := []struct {
		name   string
		method string
		params any
		code   int
	}{
		{name: "UnknownSession", method: "session/prompt", code: acp.CodeNotFound,
			params: map[string]any{"sessionId": "sess_nope", "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}},
		{name: "LoadUnknownSession", method: "session/load", code: acp.CodeNotFound,
			params: map[string]any{"sessionId": "sess_nope", "cwd": "/", "mcpServers": []any{}}},
		{name: "BadParams", method: "session/prompt", code: acp.CodeInvalidParams, params: []int{1}},
		{name: "NoMCPService", method: "session/new", code: acp.CodeInvalidParams,
			params: map[string]any{"cwd": "/", "mcpServers": []any{map[string]any{"name": "x", "command": "x", "args": []string{}, "env": []any{}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.conn.Call(context.Background(), tt.method, tt.params)
			var rpcErr *acp.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != tt.code {
				t.Errorf("%s error = %v, want code %d", tt.method, err, tt.code)
			}
		})
	}
}

func TestCommandHelp(t *testing.T) {
	var out, errOut strings.Builder
	code := acp.Command(context.Background(), []string{"--help"}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != cli.ExitOK {
		t.Errorf("exit code = %d", code)
	}
	if out.Len() != 0 {
		t.Errorf("--help wrote to stdout, which belongs to the protocol: %q", out.String())
	}
	if !strings.Contains(errOut.String(), `{"agent_servers": {"N-Agent": {"command": "nagent", "args": ["acp"]}}}`) {
		t.Errorf("--help does not show the Zed setting:\n%s", errOut.String())
	}
}

var toolKindTests = []struct{ name, kind string }{
	{"get_current_time", "read"},
	{"skill_view", "read"},
	{"skills_list", "read"},
	{"search_knowledge", "search"},
	{"execute_code", "execute"},
	{"fact_add", "edit"},
	{"external_memory", "edit"},
	{"mcp_everything_echo", "other"},
	{"mcp_files_read_file", "read"},
	{"mcp_fs_delete-file", "delete"},
	{"web_fetch", "fetch"},
	{"word_count", "other"},
}

func TestToolKind(t *testing.T) {
	for _, tt := range toolKindTests {
		if got := acp.ToolKind(tt.name); got != tt.kind {
			t.Errorf("ToolKind(%q) = %q, want %q", tt.name, got, tt.kind)
		}
	}
}
