package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/openai"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

const testKey = "sk-test-secret-key"

// fastRetry keeps retrying tests quick.
var fastRetry = llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// MustStart starts a scripted server that closes with the test.
func MustStart(tb testing.TB, replies ...scripted.Reply) *scripted.Server {
	tb.Helper()
	srv := scripted.Start(replies...)
	tb.Cleanup(srv.Close)
	return srv
}

// NewProvider returns an adapter for srv with fast retries; edit adjusts
// the config.
func NewProvider(tb testing.TB, srv *scripted.Server, edit func(*openai.Config)) *openai.Provider {
	tb.Helper()
	cfg := openai.Config{BaseURL: srv.URL(), APIKey: testKey, Retry: fastRetry, Timeout: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	return openai.New(cfg)
}

func ptr[T any](v T) *T { return &v }

func userRequest(text string) *llm.Request {
	return &llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// collect returns a DeltaFunc recording deltas as "C:…" and "R:…".
func collect(out *[]string) llm.DeltaFunc {
	return func(d llm.Delta) {
		if d.ReasoningContent != "" {
			*out = append(*out, "R:"+d.ReasoningContent)
		}
		if d.Content != "" {
			*out = append(*out, "C:"+d.Content)
		}
	}
}

var weatherArgs = `{"city":"Paris","unit":"celsius"}`

var chatTests = []struct {
	name  string
	reply scripted.Reply
	want  llm.Response // ID, Model and Raw are checked separately
}{
	{
		name:  "Text",
		reply: scripted.Reply{Content: "Hello there", Usage: &llm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
		want:  llm.Response{Content: "Hello there", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9}},
	},
	{
		name: "ToolCalls",
		reply: scripted.Reply{ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: weatherArgs},
			{ID: "call_2", Name: "get_time", Arguments: `{}`},
		}, Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
		want: llm.Response{ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: weatherArgs},
			{ID: "call_2", Name: "get_time", Arguments: `{}`},
		}, FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
	},
	{
		name:  "Reasoning",
		reply: scripted.Reply{Reasoning: "Let me think.", Content: "42", FinishReason: "length", Usage: &llm.Usage{PromptTokens: 3, CompletionTokens: 8, TotalTokens: 11, ReasoningTokens: 6}},
		want:  llm.Response{Content: "42", ReasoningContent: "Let me think.", FinishReason: "length", Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 8, TotalTokens: 11, ReasoningTokens: 6}},
	},
	{
		name:  "CachedUsage",
		reply: scripted.Reply{Content: "ok", Usage: &llm.Usage{PromptTokens: 1000, CompletionTokens: 5, TotalTokens: 1005, CachedTokens: 768}},
		want:  llm.Response{Content: "ok", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 1000, CompletionTokens: 5, TotalTokens: 1005, CachedTokens: 768}},
	},
}

func TestChat(t *testing.T) {
	for _, tt := range chatTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustStart(t, tt.reply)
			got, err := NewProvider(t, srv, nil).Chat(context.Background(), userRequest("hi"), nil)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if got.ID != "chatcmpl-scripted-1" || got.Model != "gpt-test" || len(got.Raw) == 0 {
				t.Errorf("ID, Model, Raw = %q, %q, %d bytes", got.ID, got.Model, len(got.Raw))
			}
			assertResponse(t, got, &tt.want)
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream {
				t.Errorf("requests = %d, stream = %v; want 1 non-streaming", len(reqs), reqs[0].Stream)
			}
		})
	}
}

var streamTests = []struct {
	name       string
	reply      scripted.Reply
	want       llm.Response
	wantDeltas []string
}{
	{
		name:       "Text",
		reply:      scripted.Reply{Content: "Hello world", ChunkSize: 4, Usage: &llm.Usage{PromptTokens: 4, CompletionTokens: 3, TotalTokens: 7, CachedTokens: 2}},
		want:       llm.Response{Content: "Hello world", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 4, CompletionTokens: 3, TotalTokens: 7, CachedTokens: 2}},
		wantDeltas: []string{"C:Hell", "C:o wo", "C:rld"},
	},
	{
		name:       "ReasoningThenContent",
		reply:      scripted.Reply{Reasoning: "hmm…ok", Content: "yes", ChunkSize: 3, Usage: &llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, ReasoningTokens: 1}},
		want:       llm.Response{Content: "yes", ReasoningContent: "hmm…ok", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, ReasoningTokens: 1}},
		wantDeltas: []string{"R:hmm", "R:…ok", "C:yes"},
	},
	{
		name: "ParallelToolCalls",
		reply: scripted.Reply{Content: "Checking.", ChunkSize: 5, ToolCalls: []llm.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: weatherArgs},
			{Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
			{ID: "call_c", Name: "noop", Arguments: ""},
		}, Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}},
		want: llm.Response{Content: "Checking.", ToolCalls: []llm.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: weatherArgs},
			{ID: "call_scripted_1_1", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
			{ID: "call_c", Name: "noop", Arguments: ""},
		}, FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}},
		wantDeltas: []string{"C:Check", "C:ing."},
	},
}

func TestChatStream(t *testing.T) {
	for _, tt := range streamTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustStart(t, tt.reply)
			var deltas []string
			got, err := NewProvider(t, srv, nil).Chat(context.Background(), userRequest("hi"), collect(&deltas))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			assertResponse(t, got, &tt.want)
			if !reflect.DeepEqual(deltas, tt.wantDeltas) {
				t.Errorf("deltas = %q, want %q", deltas, tt.wantDeltas)
			}
			if got.ID != "chatcmpl-scripted-1" || got.Model != "gpt-test" {
				t.Errorf("ID, Model = %q, %q", got.ID, got.Model)
			}
			// Raw is the last chunk: the usage-only one.
			if !strings.Contains(string(got.Raw), `"choices":[]`) {
				t.Errorf("Raw = %s, want the usage chunk", got.Raw)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || !reqs[0].Stream || !strings.Contains(string(reqs[0].Body), `"stream_options":{"include_usage":true}`) {
				t.Errorf("request body = %s, want stream with include_usage", reqs[0].Body)
			}
		})
	}
}

// wantFixture is the expected outcome of a testdata/stream case.
type wantFixture struct {
	Model            string         `json:"model"`
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content"`
	ToolCalls        []llm.ToolCall `json:"tool_calls"`
	FinishReason     string         `json:"finish_reason"`
	Usage            llm.Usage      `json:"usage"`
	Deltas           []string       `json:"deltas"`
	Error            string         `json:"error"`
	ProviderError    bool           `json:"provider_error"`
}

// TestStreamConformance replays recorded event streams from testdata/stream:
// NAME.sse is served as the response body, NAME.want.json is the outcome.
func TestStreamConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/stream/*.sse")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".sse")
		t.Run(name, func(t *testing.T) {
			body := mustRead(t, file)
			var want wantFixture
			if err := json.Unmarshal(mustRead(t, strings.TrimSuffix(file, ".sse")+".want.json"), &want); err != nil {
				t.Fatalf("want file: %v", err)
			}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(body)
			}))
			defer hs.Close()
			p := openai.New(openai.Config{BaseURL: hs.URL, Retry: fastRetry})
			var deltas []string
			got, err := p.Chat(context.Background(), userRequest("hi"), collect(&deltas))
			if want.Error != "" {
				var pe *llm.ProviderError
				if err == nil || !strings.Contains(err.Error(), want.Error) || errors.As(err, &pe) != want.ProviderError {
					t.Fatalf("err = %v, want %q (provider error: %v)", err, want.Error, want.ProviderError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			assertResponse(t, got, &llm.Response{
				Content: want.Content, ReasoningContent: want.ReasoningContent, ToolCalls: want.ToolCalls,
				FinishReason: want.FinishReason, Usage: want.Usage,
			})
			if want.Model != "" && got.Model != want.Model {
				t.Errorf("Model = %q, want %q", got.Model, want.Model)
			}
			if want.Deltas != nil && !reflect.DeepEqual(deltas, want.Deltas) {
				t.Errorf("deltas = %q, want %q", deltas, want.Deltas)
			}
		})
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// assertResponse compares the normalised fields of got with want.
func assertResponse(tb testing.TB, got, want *llm.Response) {
	tb.Helper()
	if got.Content != want.Content {
		tb.Errorf("Content = %q, want %q", got.Content, want.Content)
	}
	if got.ReasoningContent != want.ReasoningContent {
		tb.Errorf("ReasoningContent = %q, want %q", got.ReasoningContent, want.ReasoningContent)
	}
	if len(got.ToolCalls) != 0 || len(want.ToolCalls) != 0 {
		if !reflect.DeepEqual(got.ToolCalls, want.ToolCalls) {
			tb.Errorf("ToolCalls = %+v, want %+v", got.ToolCalls, want.ToolCalls)
		}
	}
	if got.FinishReason != want.FinishReason {
		tb.Errorf("FinishReason = %q, want %q", got.FinishReason, want.FinishReason)
	}
	if got.Usage != want.Usage {
		tb.Errorf("Usage = %+v, want %+v", got.Usage, want.Usage)
	}
}
