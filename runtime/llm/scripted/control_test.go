package scripted_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// controlDo sends method path with body to srv and returns the status and
// response body.
func controlDo(tb testing.TB, srv *scripted.Server, method, path, body string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, srv.RootURL()+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

func TestControl(t *testing.T) {
	t.Run("EnqueueAndAnswer", func(t *testing.T) {
		srv := scripted.Start(scripted.Reply{Content: "from Go"})
		defer srv.Close()
		status, body := controlDo(t, srv, "POST", scripted.RepliesPath, `[
			{"content": "from JSON", "reasoning": "thinking"},
			{"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}
		]`)
		if status != http.StatusOK || !strings.Contains(body, `"queued":2`) || !strings.Contains(body, `"pending":3`) {
			t.Fatalf("enqueue = %d %s, want 200 with queued 2, pending 3", status, body)
		}

		var answers []string
		for range 3 {
			_, b := controlDo(t, srv, "POST", scripted.ChatCompletionsPath, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			answers = append(answers, b)
		}
		if !strings.Contains(answers[0], `"from Go"`) {
			t.Errorf("first answer = %s, want the reply given to Start", answers[0])
		}
		if !strings.Contains(answers[1], `"from JSON"`) || !strings.Contains(answers[1], `"reasoning_content":"thinking"`) {
			t.Errorf("second answer = %s, want content and reasoning", answers[1])
		}
		if !strings.Contains(answers[2], `"id":"call_1"`) || !strings.Contains(answers[2], `"name":"get_weather"`) ||
			!strings.Contains(answers[2], `"finish_reason":"tool_calls"`) {
			t.Errorf("third answer = %s, want the tool call with finish_reason tool_calls", answers[2])
		}
	})

	t.Run("ErrorStatusAndHeader", func(t *testing.T) {
		srv := scripted.Start()
		defer srv.Close()
		controlDo(t, srv, "POST", scripted.RepliesPath,
			`[{"status": 429, "error_message": "slow down", "header": {"Retry-After": "7"}}]`)
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || !strings.Contains(string(b), "slow down") {
			t.Fatalf("answer = %d Retry-After=%q %s, want 429, 7 and the message", resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	})

	t.Run("StreamOptions", func(t *testing.T) {
		srv := scripted.Start()
		defer srv.Close()
		controlDo(t, srv, "POST", scripted.RepliesPath,
			`[{"content": "abcdef", "chunk_size": 2, "chunk_delay_ms": 1, "stream_error_after": 3, "error_message": "boom"}]`)
		_, body := controlDo(t, srv, "POST", scripted.ChatCompletionsPath,
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		// A role chunk, "ab", "cd", then the error in place of "ef".
		if !strings.Contains(body, `"content":"ab"`) || !strings.Contains(body, `"content":"cd"`) ||
			strings.Contains(body, `"content":"ef"`) || !strings.Contains(body, "boom") {
			t.Fatalf("stream = %s, want two-rune chunks cut by the error after 3 events", body)
		}
	})

	t.Run("Delay", func(t *testing.T) {
		srv := scripted.Start()
		defer srv.Close()
		controlDo(t, srv, "POST", scripted.RepliesPath, `[{"content": "late", "delay_ms": 150}]`)
		start := time.Now()
		controlDo(t, srv, "POST", scripted.ChatCompletionsPath, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Fatalf("answered after %v, want at least 150ms", d)
		}
	})

	t.Run("Clear", func(t *testing.T) {
		srv := scripted.Start(scripted.Reply{Content: "a"}, scripted.Reply{Content: "b"})
		defer srv.Close()
		status, body := controlDo(t, srv, "DELETE", scripted.RepliesPath, "")
		if status != http.StatusOK || !strings.Contains(body, `"cleared":2`) {
			t.Fatalf("clear = %d %s, want 200 with cleared 2", status, body)
		}
		if n := srv.Pending(); n != 0 {
			t.Fatalf("Pending = %d after clear, want 0", n)
		}
	})

	t.Run("Requests", func(t *testing.T) {
		srv := scripted.Start(scripted.Reply{Content: "ok"})
		defer srv.Close()
		controlDo(t, srv, "POST", scripted.ChatCompletionsPath, `{"model":"m1","stream":true,
			"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"time?"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"12:00"}],
			"tools":[{"type":"function","function":{"name":"now","description":"the time","parameters":{"type":"object"}}}]}`)
		controlDo(t, srv, "GET", scripted.RequestsPath, "") // control calls are not recorded

		status, body := controlDo(t, srv, "GET", scripted.RequestsPath, "")
		if status != http.StatusOK {
			t.Fatalf("requests = %d %s", status, body)
		}
		var got []scripted.RequestSpec
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("requests body %s: %v", body, err)
		}
		if len(got) != 1 {
			t.Fatalf("got %d requests, want 1: %s", len(got), body)
		}
		r := got[0]
		if r.Path != scripted.ChatCompletionsPath || !r.Stream || r.Model != "m1" {
			t.Errorf("request = %+v, want the chat path, stream and model m1", r)
		}
		want := []llm.Message{
			{Role: llm.RoleSystem, Content: "be brief"},
			{Role: llm.RoleUser, Content: "time?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "now", Arguments: "{}"}}},
			{Role: llm.RoleTool, Content: "12:00", ToolCallID: "c1"},
		}
		if len(r.Messages) != len(want) {
			t.Fatalf("messages = %+v, want %+v", r.Messages, want)
		}
		for i := range want {
			g, w := r.Messages[i], want[i]
			if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID || len(g.ToolCalls) != len(w.ToolCalls) {
				t.Errorf("messages[%d] = %+v, want %+v", i, g, w)
			}
		}
		if tc := r.Messages[2].ToolCalls; len(tc) == 1 && tc[0] != want[2].ToolCalls[0] {
			t.Errorf("tool call = %+v, want %+v", tc[0], want[2].ToolCalls[0])
		}
		if len(r.Tools) != 1 || r.Tools[0].Name != "now" || r.Tools[0].Description != "the time" {
			t.Errorf("tools = %+v, want the now tool", r.Tools)
		}
		if !strings.Contains(body, `"tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{}"}}]`) {
			t.Errorf("requests body %s does not carry tool calls in OpenAI shape", body)
		}
	})

	t.Run("EmptyRequestsIsArray", func(t *testing.T) {
		srv := scripted.Start()
		defer srv.Close()
		if _, body := controlDo(t, srv, "GET", scripted.RequestsPath, ""); strings.TrimSpace(body) != "[]" {
			t.Fatalf("requests = %s, want []", body)
		}
	})
}

var controlErrorTests = []struct {
	name, method, path, body string
	status                   int
	says                     string
}{
	{name: "NotAnArray", method: "POST", path: scripted.RepliesPath, body: `{"content":"x"}`, status: 400, says: "JSON array"},
	{name: "UnknownField", method: "POST", path: scripted.RepliesPath, body: `[{"content":"x"},{"contnet":"y"}]`, status: 400, says: `replies[1]`},
	{name: "WrongType", method: "POST", path: scripted.RepliesPath, body: `[{"delay_ms":"soon"}]`, status: 400, says: "delay_ms"},
	{name: "UnknownRoute", method: "GET", path: "/_scripted/nope", status: 404, says: "no route"},
	{name: "WrongMethod", method: "PUT", path: scripted.RepliesPath, status: 404, says: "POST or DELETE"},
}

func TestControlErrors(t *testing.T) {
	for _, tt := range controlErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := scripted.Start()
			defer srv.Close()
			status, body := controlDo(t, srv, tt.method, tt.path, tt.body)
			if status != tt.status || !strings.Contains(body, tt.says) {
				t.Fatalf("%s %s = %d %s, want %d mentioning %q", tt.method, tt.path, status, body, tt.status, tt.says)
			}
			if n := srv.Pending(); n != 0 {
				t.Errorf("Pending = %d, want a refused body to enqueue nothing", n)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("recorded %d requests, want control calls unrecorded", n)
			}
		})
	}
}
