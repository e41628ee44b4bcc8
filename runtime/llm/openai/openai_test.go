package openai_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/providertest"
	"github.com/nagent/nagent/runtime/llm/openai"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

const testKey = "sk-test-secret-key"

// NewProvider returns an adapter for srv with fast retries; edit adjusts
// the config.
func NewProvider(tb testing.TB, srv *scripted.Server, edit func(*openai.Config)) *openai.Provider {
	tb.Helper()
	cfg := openai.Config{BaseURL: srv.URL(), APIKey: testKey, Retry: providertest.FastRetry, Timeout: 5 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	return openai.New(cfg)
}

func ptr[T any](v T) *T { return &v }

func userRequest(text string) *llm.Request {
	return &llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
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
			srv := providertest.MustStart(t, tt.reply)
			got, err := NewProvider(t, srv, nil).Chat(context.Background(), userRequest("hi"), nil)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if got.ID != "chatcmpl-scripted-1" || got.Model != "gpt-test" || len(got.Raw) == 0 {
				t.Errorf("ID, Model, Raw = %q, %q, %d bytes", got.ID, got.Model, len(got.Raw))
			}
			providertest.AssertResponse(t, got, &tt.want)
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
			srv := providertest.MustStart(t, tt.reply)
			var deltas []string
			got, err := NewProvider(t, srv, nil).Chat(context.Background(), userRequest("hi"), providertest.Collect(&deltas))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			providertest.AssertResponse(t, got, &tt.want)
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

// TestStreamConformance replays recorded event streams from testdata/stream:
// NAME.sse is served as the response body, NAME.want.json is the outcome.
func TestStreamConformance(t *testing.T) {
	providertest.RunStreamFixtures(t, "testdata/stream", userRequest("hi"), func(baseURL string) llm.Provider {
		return openai.New(openai.Config{BaseURL: baseURL, Retry: providertest.FastRetry})
	})
}
