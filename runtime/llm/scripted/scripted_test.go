package scripted_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// MustStart starts a server that closes with the test.
func MustStart(tb testing.TB, replies ...scripted.Reply) *scripted.Server {
	tb.Helper()
	srv := scripted.Start(replies...)
	tb.Cleanup(srv.Close)
	return srv
}

// post sends body to path and returns the status and response body.
func post(tb testing.TB, srv *scripted.Server, path, body string) (int, string) {
	tb.Helper()
	resp, err := http.Post(srv.RootURL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// sseData returns the event names and data payloads of an SSE body.
func sseData(tb testing.TB, body string) (events, data []string) {
	tb.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, v)
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, v)
		}
	}
	return events, data
}

const oaStreamRequest = `{"model":"m","stream":true,"stream_options":{"include_usage":true},
	"messages":[{"role":"user","content":"hi"}]}`

func TestOpenAIStreamShape(t *testing.T) {
	srv := MustStart(t, scripted.Reply{
		Reasoning: "abcd", Content: "hello", ChunkSize: 2,
		ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}, {Name: "g", Arguments: "{}"}},
		Usage:     &llm.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
	})
	status, body := post(t, srv, scripted.ChatCompletionsPath, oaStreamRequest)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	_, data := sseData(t, body)
	want := []string{
		`{"role":"assistant","content":""}`,
		`{"reasoning_content":"ab"}`, `{"reasoning_content":"cd"}`,
		`{"content":"he"}`, `{"content":"ll"}`, `{"content":"o"}`,
		`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"a\""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":":1"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`,
		`{"tool_calls":[{"index":1,"id":"call_scripted_1_1","type":"function","function":{"name":"g","arguments":""}}]}`,
		`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`,
		`{}`,
	}
	if len(data) != len(want)+2 {
		t.Fatalf("got %d events, want %d:\n%s", len(data), len(want)+2, body)
	}
	for i, w := range want {
		var c struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data[i]), &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.ID != "chatcmpl-scripted-1" || string(c.Usage) != "null" || len(c.Choices) != 1 {
			t.Errorf("chunk %d = %s", i, data[i])
			continue
		}
		if string(c.Choices[0].Delta) != w {
			t.Errorf("chunk %d delta = %s, want %s", i, c.Choices[0].Delta, w)
		}
		last := i == len(want)-1
		if got := c.Choices[0].FinishReason; (got != nil) != last || (last && *got != "tool_calls") {
			t.Errorf("chunk %d finish_reason = %v", i, got)
		}
	}
	if u := data[len(want)]; !strings.Contains(u, `"choices":[]`) || !strings.Contains(u, `"total_tokens":7`) {
		t.Errorf("usage chunk = %s", u)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Errorf("last event = %s, want [DONE]", data[len(data)-1])
	}
}

func TestOpenAIStreamWithoutUsage(t *testing.T) {
	srv := MustStart(t, scripted.Reply{Content: "hi"})
	_, body := post(t, srv, scripted.ChatCompletionsPath, `{"model":"m","stream":true,"messages":[]}`)
	if strings.Contains(body, "usage") {
		t.Errorf("usage sent without include_usage:\n%s", body)
	}
}

func TestAnthropicStreamShape(t *testing.T) {
	srv := MustStart(t, scripted.Reply{Reasoning: "r", Content: "hey", ChunkSize: 2, ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a":1}`}}})
	status, body := post(t, srv, scripted.MessagesPath, `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	events, data := sseData(t, body)
	want := []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", // thinking + signature
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", // text
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", // tool_use
		"message_delta", "message_stop",
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events =\n%q\nwant\n%q", events, want)
	}
	for i, d := range data {
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil || ev.Type != events[i] {
			t.Errorf("event %d %s has data %s", i, events[i], d)
		}
	}
	if !strings.Contains(data[16], `"stop_reason":"tool_use"`) {
		t.Errorf("message_delta = %s", data[16])
	}
}

var noReplyTests = []struct {
	name string
	path string
	body string
}{
	{"OpenAI", scripted.ChatCompletionsPath, `{"model":"m","messages":[]}`},
	{"Anthropic", scripted.MessagesPath, `{"model":"c","max_tokens":1,"messages":[]}`},
}

func TestNoReplyLeft(t *testing.T) {
	for _, tt := range noReplyTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustStart(t, scripted.Reply{Content: "only one"})
			post(t, srv, tt.path, tt.body)
			status, body := post(t, srv, tt.path, tt.body)
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatal(err)
			}
			if status != 500 || e.Error.Message != "scripted model: no reply left for request 2" {
				t.Fatalf("status %d, body %s", status, body)
			}
		})
	}
}

var routeTests = []struct {
	name, method, path, body string
	wantStatus               int
}{
	{"UnknownPath", http.MethodPost, "/v1/completions", `{}`, 404},
	{"WrongMethod", http.MethodGet, scripted.ChatCompletionsPath, ``, 405},
	{"BadJSON", http.MethodPost, scripted.MessagesPath, `{"messages":`, 400},
	{"BadContent", http.MethodPost, scripted.ChatCompletionsPath, `{"messages":[{"role":"user","content":42}]}`, 400},
}

func TestRoutes(t *testing.T) {
	for _, tt := range routeTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustStart(t, scripted.Reply{Content: "kept"})
			req, _ := http.NewRequest(tt.method, srv.RootURL()+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || srv.Pending() != 1 || len(srv.Requests()) != 1 {
				t.Fatalf("status %d, pending %d, recorded %d", resp.StatusCode, srv.Pending(), len(srv.Requests()))
			}
		})
	}
}

var recordTests = []struct {
	name         string
	path         string
	body         string
	wantMessages []llm.Message
	wantTools    []llm.ToolSpec
}{
	{
		name: "OpenAI",
		path: scripted.ChatCompletionsPath,
		body: `{"model":"m","messages":[
			{"role":"system","content":"s"},
			{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","name":"f","content":"r"}],
			"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}]}`,
		wantMessages: []llm.Message{
			{Role: llm.RoleSystem, Content: "s"},
			{Role: llm.RoleUser, Content: "ab"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Name: "f", Content: "r"},
		},
		wantTools: []llm.ToolSpec{{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
	},
	{
		name: "Anthropic",
		path: scripted.MessagesPath,
		body: `{"model":"c","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[
			{"role":"user","content":"q"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"x"},{"type":"tool_use","id":"t1","name":"f","input":{"k": [1, 2]}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}]},{"type":"text","text":"more"}]}],
			"tools":[{"name":"f","input_schema":{"type":"object"}}]}`,
		wantMessages: []llm.Message{
			{Role: llm.RoleSystem, Content: "s"},
			{Role: llm.RoleUser, Content: "q"},
			{Role: llm.RoleAssistant, ReasoningContent: "t", ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: `{"k":[1,2]}`}}},
			{Role: llm.RoleTool, ToolCallID: "t1", Content: "r"},
			{Role: llm.RoleUser, Content: "more"},
		},
		wantTools: []llm.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}},
	},
}

func TestRecordedRequest(t *testing.T) {
	for _, tt := range recordTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustStart(t, scripted.Reply{})
			req, _ := http.NewRequest(http.MethodPost, srv.RootURL()+tt.path, strings.NewReader(tt.body))
			req.Header.Set("X-Test", "yes")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			r := srv.Requests()[0]
			if r.Path != tt.path || r.Header.Get("X-Test") != "yes" || string(r.Body) != tt.body || r.Stream {
				t.Errorf("recorded %+v", r)
			}
			if !reflect.DeepEqual(r.Messages, tt.wantMessages) {
				t.Errorf("Messages =\n%+v\nwant\n%+v", r.Messages, tt.wantMessages)
			}
			if !reflect.DeepEqual(r.Tools, tt.wantTools) {
				t.Errorf("Tools = %+v, want %+v", r.Tools, tt.wantTools)
			}
		})
	}
}

func TestResponderConcurrent(t *testing.T) {
	srv := MustStart(t, scripted.Reply{Content: "scripted first"})
	srv.SetResponder(scripted.Echo)
	const n = 20
	var wg sync.WaitGroup
	answers := make([]string, n)
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"q%d"}]}`, i)
			_, answers[i] = post(t, srv, scripted.ChatCompletionsPath, body)
		})
	}
	wg.Wait()
	if got := len(srv.Requests()); got != n {
		t.Fatalf("recorded %d requests, want %d", got, n)
	}
	scriptedSeen, echoes := 0, 0
	for i, a := range answers {
		switch {
		case strings.Contains(a, "scripted first"):
			scriptedSeen++
		case strings.Contains(a, fmt.Sprintf(`"echo: q%d"`, i)):
			echoes++
		default:
			t.Errorf("answer %d = %s", i, a)
		}
	}
	if scriptedSeen != 1 || echoes != n-1 {
		t.Errorf("scripted %d, echoes %d", scriptedSeen, echoes)
	}
}

func TestEnqueue(t *testing.T) {
	srv := MustStart(t)
	srv.Enqueue(scripted.Reply{Content: "a"}, scripted.Reply{Content: "b"})
	if srv.Pending() != 2 {
		t.Fatalf("Pending = %d", srv.Pending())
	}
	for _, want := range []string{`"content":"a"`, `"content":"b"`} {
		if _, body := post(t, srv, scripted.ChatCompletionsPath, `{"model":"m","messages":[]}`); !strings.Contains(body, want) {
			t.Errorf("body %s, want %s", body, want)
		}
	}
}

func TestReplyHeaderAndStatus(t *testing.T) {
	srv := MustStart(t, scripted.Reply{Status: 429, ErrorMessage: "slow down", Header: map[string]string{"Retry-After": "3"}})
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(string(b), `"message":"slow down"`) {
		t.Fatalf("status %d, Retry-After %q, body %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
}

func TestDropConnection(t *testing.T) {
	srv := MustStart(t, scripted.Reply{DropConnection: true})
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got status %d, want a transport error", resp.StatusCode)
	}
}

func TestCloseReleasesDelayedHandlers(t *testing.T) {
	srv := scripted.Start(scripted.Reply{Delay: time.Minute}, scripted.Reply{Content: "slow", ChunkDelay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, body := range []string{`{"messages":[]}`, `{"stream":true,"messages":[]}`} {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for len(srv.Requests()) < 2 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	srv.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	wg.Wait()
}
