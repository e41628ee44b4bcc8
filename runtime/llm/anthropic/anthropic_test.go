package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/anthropic"
	"github.com/nagent/nagent/runtime/llm/internal/providertest"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

const testKey = "sk-ant-test-secret"

// NewProvider returns an adapter for srv with fast retries; edit adjusts
// the config.
func NewProvider(tb testing.TB, srv *scripted.Server, edit func(*anthropic.Config)) *anthropic.Provider {
	tb.Helper()
	cfg := anthropic.Config{BaseURL: srv.RootURL(), APIKey: testKey, Retry: providertest.FastRetry, Timeout: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	return anthropic.New(cfg)
}

func ptr[T any](v T) *T { return &v }

func userRequest(text string) *llm.Request {
	return &llm.Request{Model: "claude-test", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

var weatherTool = llm.ToolSpec{
	Name:        "get_weather",
	Description: "Current weather for a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
}

var requestBodyTests = []struct {
	name string
	req  llm.Request
	want string // the whole request body, compared as JSON
}{
	{
		name: "Minimal",
		req:  llm.Request{Model: "c", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
		want: `{"model":"c","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
	},
	{
		name: "ToolRoundTrip",
		req: llm.Request{
			Model: "c",
			Messages: []llm.Message{
				{Role: llm.RoleSystem, Content: "Be brief."},
				{Role: llm.RoleSystem, Content: "Use tools."},
				{Role: llm.RoleUser, Content: "Weather in Paris and Rome?"},
				{Role: llm.RoleAssistant, Content: "Checking.", ReasoningContent: "not sent", ToolCalls: []llm.ToolCall{
					{ID: "toolu_1", Name: "get_weather", Arguments: `{"city": "Paris"}`},
					{ID: "toolu_2", Name: "get_weather", Arguments: ""},
					{ID: "toolu_3", Name: "get_weather", Arguments: `not json`},
				}},
				{Role: llm.RoleTool, ToolCallID: "toolu_1", Name: "get_weather", Content: "18°C"},
				{Role: llm.RoleTool, ToolCallID: "toolu_2", Name: "get_weather", Content: "21°C"},
				{Role: llm.RoleTool, ToolCallID: "toolu_3", Name: "get_weather", Content: ""},
				{Role: llm.RoleUser, Content: "Thanks"},
			},
			Tools:      []llm.ToolSpec{weatherTool, {Name: "noop"}},
			ToolChoice: "auto",
		},
		want: `{"model":"c","max_tokens":4096,"system":"Be brief.\n\nUse tools.","messages":[
			{"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?"}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
				{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}},
				{"type":"tool_use","id":"toolu_3","name":"get_weather","input":{"_raw_arguments":"not json"}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":"18°C"},
				{"type":"tool_result","tool_use_id":"toolu_2","content":"21°C"},
				{"type":"tool_result","tool_use_id":"toolu_3"}]},
			{"role":"user","content":[{"type":"text","text":"Thanks"}]}],
			"tools":[
				{"name":"get_weather","description":"Current weather for a city.","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},
				{"name":"noop","input_schema":{"type":"object","properties":{}}}],
			"tool_choice":{"type":"auto"}}`,
	},
	{
		name: "ToolChoiceRequired",
		req:  llm.Request{Model: "c", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t"}}, ToolChoice: "required"},
		want: `{"model":"c","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"tools":[{"name":"t","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any"}}`,
	},
	{
		name: "ToolChoiceNone",
		req:  llm.Request{Model: "c", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t"}}, ToolChoice: "none"},
		want: `{"model":"c","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"tools":[{"name":"t","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`,
	},
	{
		name: "ToolChoiceForced",
		req:  llm.Request{Model: "c", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t"}}, ToolChoice: "t"},
		want: `{"model":"c","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"tools":[{"name":"t","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"t"}}`,
	},
	{
		name: "Params",
		req: llm.Request{Model: "c", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Params: llm.GenerationParams{
			Temperature: ptr(0.0), TopP: ptr(0.9), MaxTokens: ptr(100), Stop: []string{"END", "STOP"}, Seed: ptr(1),
			PresencePenalty: ptr(0.1), ReasoningEffort: "high",
		}},
		want: `{"model":"c","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"stop_sequences":["END","STOP"],"temperature":0,"top_p":0.9}`,
	},
}

func TestRequestBody(t *testing.T) {
	for _, tt := range requestBodyTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.MustStart(t, scripted.Reply{Content: "ok"})
			if _, err := NewProvider(t, srv, nil).Chat(context.Background(), &tt.req, nil); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			providertest.AssertBody(t, srv.Requests()[0].Body, tt.want)
		})
	}
}

func TestRequestUnknownRole(t *testing.T) {
	srv := providertest.MustStart(t)
	req := &llm.Request{Model: "c", Messages: []llm.Message{{Role: "developer", Content: "x"}}}
	_, err := NewProvider(t, srv, nil).Chat(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown role "developer"`) || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, requests = %d; want a local error", err, len(srv.Requests()))
	}
}

// TestToolRoundTrip checks that a tool conversation survives the trip
// through the Anthropic wire format, as the scripted server reads it back.
func TestToolRoundTrip(t *testing.T) {
	srv := providertest.MustStart(t, scripted.Reply{Content: "done"})
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "sys"},
		{Role: llm.RoleUser, Content: "go"},
		{Role: llm.RoleAssistant, Content: "calling", ToolCalls: []llm.ToolCall{
			{ID: "toolu_a", Name: "f", Arguments: `{"a":1}`},
			{ID: "toolu_b", Name: "g", Arguments: `{"b":[true,null]}`},
		}},
		{Role: llm.RoleTool, ToolCallID: "toolu_a", Content: "one"},
		{Role: llm.RoleTool, ToolCallID: "toolu_b", Content: "two"},
	}
	req := &llm.Request{Model: "c", Messages: msgs, Tools: []llm.ToolSpec{weatherTool}}
	if _, err := NewProvider(t, srv, nil).Chat(context.Background(), req, nil); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	got := srv.Requests()[0]
	if !reflect.DeepEqual(got.Messages, msgs) {
		t.Errorf("Messages =\n%+v\nwant\n%+v", got.Messages, msgs)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "get_weather" || string(got.Tools[0].Parameters) != string(weatherTool.Parameters) {
		t.Errorf("Tools = %+v", got.Tools)
	}
}

var headerTests = []struct {
	name     string
	cfg      anthropic.Config
	base     func(*scripted.Server) string
	header   string
	want     string
	wantPath string
}{
	{"APIKey", anthropic.Config{APIKey: "k1"}, (*scripted.Server).RootURL, "X-Api-Key", "k1", scripted.MessagesPath},
	{"NoKey", anthropic.Config{}, (*scripted.Server).RootURL, "X-Api-Key", "", scripted.MessagesPath},
	{"DefaultVersion", anthropic.Config{}, (*scripted.Server).RootURL, "Anthropic-Version", "2023-06-01", scripted.MessagesPath},
	{"Version", anthropic.Config{Version: "2099-01-01"}, (*scripted.Server).RootURL, "Anthropic-Version", "2099-01-01", scripted.MessagesPath},
	{"BaseWithV1", anthropic.Config{}, (*scripted.Server).URL, "Content-Type", "application/json", scripted.MessagesPath},
}

func TestRequestHeaders(t *testing.T) {
	for _, tt := range headerTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.MustStart(t, scripted.Reply{Content: "ok"})
			cfg := tt.cfg
			cfg.BaseURL = tt.base(srv) + "/"
			if _, err := anthropic.New(cfg).Chat(context.Background(), userRequest("hi"), nil); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			r := srv.Requests()[0]
			if got := r.Header.Get(tt.header); got != tt.want {
				t.Errorf("%s = %q, want %q", tt.header, got, tt.want)
			}
			if r.Path != tt.wantPath {
				t.Errorf("Path = %q, want %q", r.Path, tt.wantPath)
			}
		})
	}
}

var chatTests = []struct {
	name       string
	reply      scripted.Reply
	want       llm.Response
	wantDeltas []string // streaming only
}{
	{
		name:       "Text",
		reply:      scripted.Reply{Content: "Hello there", ChunkSize: 5, Usage: &llm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		want:       llm.Response{Content: "Hello there", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		wantDeltas: []string{"C:Hello", "C: ther", "C:e"},
	},
	{
		name: "ThinkingAndToolUse",
		reply: scripted.Reply{Reasoning: "Two calls.", Content: "On it.", ChunkSize: 4, ToolCalls: []llm.ToolCall{
			{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{Name: "get_time", Arguments: `{}`},
		}, Usage: &llm.Usage{PromptTokens: 100, CompletionTokens: 30, TotalTokens: 130, CachedTokens: 60}},
		want: llm.Response{Content: "On it.", ReasoningContent: "Two calls.", ToolCalls: []llm.ToolCall{
			{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_scripted_1_1", Name: "get_time", Arguments: `{}`},
		}, FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 30, TotalTokens: 130, CachedTokens: 60}},
		wantDeltas: []string{"R:Two ", "R:call", "R:s.", "C:On i", "C:t."},
	},
	{
		name:       "MaxTokens",
		reply:      scripted.Reply{Content: "Once", FinishReason: "length", ChunkSize: 10, Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
		want:       llm.Response{Content: "Once", FinishReason: "length", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
		wantDeltas: []string{"C:Once"},
	},
}

func TestChat(t *testing.T) {
	for _, stream := range []bool{false, true} {
		for _, tt := range chatTests {
			name := tt.name
			if stream {
				name += "Stream"
			}
			t.Run(name, func(t *testing.T) {
				srv := providertest.MustStart(t, tt.reply)
				var deltas []string
				var onDelta llm.DeltaFunc
				if stream {
					onDelta = providertest.Collect(&deltas)
				}
				got, err := NewProvider(t, srv, nil).Chat(context.Background(), userRequest("hi"), onDelta)
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if got.ID != "msg_scripted_1" || got.Model != "claude-test" || len(got.Raw) == 0 {
					t.Errorf("ID, Model, Raw = %q, %q, %d bytes", got.ID, got.Model, len(got.Raw))
				}
				providertest.AssertResponse(t, got, &tt.want)
				if stream && !reflect.DeepEqual(deltas, tt.wantDeltas) {
					t.Errorf("deltas = %q, want %q", deltas, tt.wantDeltas)
				}
				if r := srv.Requests()[0]; r.Stream != stream {
					t.Errorf("request stream = %v, want %v", r.Stream, stream)
				}
			})
		}
	}
}

// TestStreamConformance replays recorded event streams from testdata/stream:
// NAME.sse is served as the response body, NAME.want.json is the outcome.
func TestStreamConformance(t *testing.T) {
	providertest.RunStreamFixtures(t, "testdata/stream", userRequest("hi"), func(baseURL string) llm.Provider {
		return anthropic.New(anthropic.Config{BaseURL: baseURL, Retry: providertest.FastRetry})
	})
}

var failureTests = []struct {
	name         string
	replies      []scripted.Reply
	stream       bool
	edit         func(*anthropic.Config)
	wantErr      string
	wantStatus   int
	wantAttempts int
	wantRequests int
}{
	{
		name:         "529ThenSuccess",
		replies:      []scripted.Reply{{Status: 529}, {Content: "ok"}},
		wantRequests: 2,
	},
	{
		name:         "429RetryAfterThenSuccessStreaming",
		replies:      []scripted.Reply{{Status: 429, Header: map[string]string{"Retry-After": "1"}}, {Content: "ok"}},
		stream:       true,
		wantRequests: 2,
	},
	{
		name:         "DroppedConnectionRetried",
		replies:      []scripted.Reply{{DropConnection: true}, {Content: "ok"}},
		wantRequests: 2,
	},
	{
		name:    "OverloadedForever",
		replies: []scripted.Reply{{Status: 529, ErrorMessage: "Overloaded"}, {Status: 529, ErrorMessage: "Overloaded"}, {Status: 529, ErrorMessage: "Overloaded"}},
		wantErr: "Overloaded", wantStatus: 529, wantAttempts: 3, wantRequests: 3,
	},
	{
		name:    "400NoRetry",
		replies: []scripted.Reply{{Status: 400, ErrorMessage: "messages: roles must alternate"}},
		wantErr: "messages: roles must alternate", wantStatus: 400, wantAttempts: 1, wantRequests: 1,
	},
	{
		name:    "401KeyRedacted",
		replies: []scripted.Reply{{Status: 401, ErrorMessage: "invalid x-api-key " + testKey}},
		wantErr: "invalid x-api-key [redacted]", wantStatus: 401, wantAttempts: 1, wantRequests: 1,
	},
	{
		name:    "Timeout",
		replies: []scripted.Reply{{Delay: 5 * time.Second}},
		edit: func(c *anthropic.Config) {
			c.Timeout = 50 * time.Millisecond
			c.Retry.MaxAttempts = 1
		},
		wantErr: "timeout", wantAttempts: 1, wantRequests: 1,
	},
	{
		name:    "StreamErrorMidStream",
		replies: []scripted.Reply{{Content: "abcdefghi", StreamErrorAfter: 4, ErrorMessage: "Overloaded"}},
		stream:  true,
		wantErr: "Overloaded", wantAttempts: 1, wantRequests: 1,
	},
}

func TestChatFailures(t *testing.T) {
	for _, tt := range failureTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.MustStart(t, tt.replies...)
			var onDelta llm.DeltaFunc
			if tt.stream {
				onDelta = func(llm.Delta) {}
			}
			resp, err := NewProvider(t, srv, tt.edit).Chat(context.Background(), userRequest("hi"), onDelta)
			if n := len(srv.Requests()); n != tt.wantRequests {
				t.Errorf("requests = %d, want %d", n, tt.wantRequests)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if resp.Content != "ok" {
					t.Errorf("Content = %q", resp.Content)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "anthropic.Chat: ") {
				t.Fatalf("err = %v, want anthropic.Chat: …%q…", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error leaks the API key: %v", err)
			}
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *llm.ProviderError", err, err)
			}
			if pe.StatusCode != tt.wantStatus || pe.Attempts != tt.wantAttempts || pe.Provider != "anthropic" {
				t.Errorf("ProviderError = %+v, want status %d, attempts %d", pe, tt.wantStatus, tt.wantAttempts)
			}
		})
	}
}

func TestChatCancel(t *testing.T) {
	srv := providertest.MustStart(t, scripted.Reply{Delay: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := NewProvider(t, srv, nil).Chat(ctx, userRequest("hi"), func(llm.Delta) {})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Chat returned %v after cancellation", d)
	}
}
