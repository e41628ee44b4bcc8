package openai_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/providertest"
	"github.com/nagent/nagent/runtime/llm/openai"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

var weatherTool = llm.ToolSpec{
	Name:        "get_weather",
	Description: "Current weather for a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

var requestBodyTests = []struct {
	name   string
	req    llm.Request
	stream bool
	want   string // the whole request body, compared as JSON
}{
	{
		name: "Minimal",
		req:  llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
		want: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	},
	{
		name: "ToolRoundTrip",
		req: llm.Request{
			Model: "m",
			Messages: []llm.Message{
				{Role: llm.RoleSystem, Content: "Be brief."},
				{Role: llm.RoleUser, Content: "Weather in Paris?"},
				{Role: llm.RoleAssistant, ReasoningContent: "not sent back", ToolCalls: []llm.ToolCall{
					{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_2", Name: "get_time", Arguments: ""},
				}},
				{Role: llm.RoleTool, ToolCallID: "call_1", Name: "get_weather", Content: "18°C"},
				{Role: llm.RoleTool, ToolCallID: "call_2", Name: "get_time", Content: ""},
			},
			Tools:      []llm.ToolSpec{weatherTool},
			ToolChoice: "auto",
		},
		want: `{"model":"m","messages":[
			{"role":"system","content":"Be brief."},
			{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
			{"role":"tool","content":"18°C","tool_call_id":"call_1","name":"get_weather"},
			{"role":"tool","content":"","tool_call_id":"call_2","name":"get_time"}],
			"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.",
				"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
			"tool_choice":"auto"}`,
	},
	{
		name: "ForcedTool",
		req:  llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "get_weather"}}, ToolChoice: "get_weather"},
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],
			"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`,
	},
	{
		name: "RequiredAndNone",
		req:  llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.ToolSpec{{Name: "t"}}, ToolChoice: "required"},
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"t"}}],"tool_choice":"required"}`,
	},
	{
		name: "ToolChoiceWithoutTools",
		req:  llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, ToolChoice: "none"},
		want: `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
	},
	{
		name: "Params",
		req: llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Params: llm.GenerationParams{
			Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: ptr(256), Stop: []string{"END"}, Seed: ptr(7),
			PresencePenalty: ptr(0.5), FrequencyPenalty: ptr(-0.5), ReasoningEffort: "low",
		}},
		want: `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0.2,"top_p":0.9,"max_tokens":256,
			"stop":["END"],"seed":7,"presence_penalty":0.5,"frequency_penalty":-0.5,"reasoning_effort":"low"}`,
	},
	{
		name:   "Stream",
		req:    llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Params: llm.GenerationParams{Temperature: ptr(0.0)}},
		stream: true,
		want:   `{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`,
	},
}

func TestRequestBody(t *testing.T) {
	for _, tt := range requestBodyTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.MustStart(t, scripted.Reply{Content: "ok"})
			var onDelta llm.DeltaFunc
			if tt.stream {
				onDelta = func(llm.Delta) {}
			}
			if _, err := NewProvider(t, srv, nil).Chat(context.Background(), &tt.req, onDelta); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			providertest.AssertBody(t, srv.Requests()[0].Body, tt.want)
		})
	}
}

var headerTests = []struct {
	name   string
	cfg    openai.Config
	header string
	want   string
}{
	{"Bearer", openai.Config{APIKey: "sk-1"}, "Authorization", "Bearer sk-1"},
	{"NoKey", openai.Config{}, "Authorization", ""},
	{"Extra", openai.Config{ExtraHeaders: map[string]string{"HTTP-Referer": "https://nagent.dev"}}, "Http-Referer", "https://nagent.dev"},
	{"ExtraOverrides", openai.Config{APIKey: "sk-1", ExtraHeaders: map[string]string{"Authorization": "Custom x"}}, "Authorization", "Custom x"},
	{"ContentType", openai.Config{}, "Content-Type", "application/json"},
}

func TestRequestHeaders(t *testing.T) {
	for _, tt := range headerTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.MustStart(t, scripted.Reply{Content: "ok"})
			cfg := tt.cfg
			cfg.BaseURL = srv.URL() + "/" // a trailing slash is tolerated
			if _, err := openai.New(cfg).Chat(context.Background(), userRequest("hi"), nil); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			r := srv.Requests()[0]
			if got := r.Header.Get(tt.header); got != tt.want {
				t.Errorf("%s = %q, want %q", tt.header, got, tt.want)
			}
			if r.Path != scripted.ChatCompletionsPath {
				t.Errorf("Path = %q", r.Path)
			}
		})
	}
}
