package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nagent/nagent/runtime/llm"
)

// ChatCompletionRequest is the body of POST /v1/chat/completions. Fields
// N-Agent does not know are ignored, as most compatible servers do.
type ChatCompletionRequest struct {
	Model               string            `json:"model"`
	Messages            []WireMessage     `json:"messages"`
	Stream              bool              `json:"stream"`
	StreamOptions       *StreamOptions    `json:"stream_options"`
	Tools               []WireTool        `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stop                json.RawMessage   `json:"stop"`
	Seed                *int              `json:"seed"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	ReasoningEffort     string            `json:"reasoning_effort"`
	N                   *int              `json:"n"`
	User                string            `json:"user"`
	Metadata            map[string]string `json:"metadata"`
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// WireMessage is one message of the request.
type WireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []llm.ToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// WireTool is one entry of the request's tools.
type WireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// contentText flattens a message content: a string, null, or an array of
// parts of which the text parts are kept.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		default:
			return "", fmt.Errorf("content part type %q is not supported; send text parts", p.Type)
		}
	}
	return b.String(), nil
}

// toMessages converts and validates the request's messages.
func toMessages(in []WireMessage) ([]llm.Message, *apiError) {
	out := make([]llm.Message, 0, len(in))
	for i, m := range in {
		param := fmt.Sprintf("messages[%d]", i)
		text, err := contentText(m.Content)
		if err != nil {
			return nil, invalid(param+".content", "%s.content: %v", param, err)
		}
		msg := llm.Message{Role: llm.Role(m.Role), Content: text, Name: m.Name}
		switch m.Role {
		case "system", "developer":
			msg.Role = llm.RoleSystem
		case "user":
		case "assistant":
			msg.ToolCalls = m.ToolCalls
		case "tool":
			if m.ToolCallID == "" {
				return nil, invalid(param+".tool_call_id", "%s: a tool message needs tool_call_id", param)
			}
			msg.ToolCallID = m.ToolCallID
		case "":
			return nil, invalid(param+".role", "%s: role is required", param)
		default:
			return nil, invalid(param+".role", "%s: unknown role %q; use system, developer, user, assistant or tool", param, m.Role)
		}
		out = append(out, msg)
	}
	return out, nil
}

// toolSpecs converts the request's client-side tools.
func toolSpecs(in []WireTool) ([]llm.ToolSpec, *apiError) {
	out := make([]llm.ToolSpec, 0, len(in))
	for i, t := range in {
		if t.Type != "function" {
			return nil, invalid(fmt.Sprintf("tools[%d].type", i), "tools[%d]: type %q is not supported; use \"function\"", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, invalid(fmt.Sprintf("tools[%d].function.name", i), "tools[%d]: function.name is required", i)
		}
		out = append(out, llm.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return out, nil
}

// toolChoice maps tool_choice ("auto", "none", "required" or
// {"type":"function","function":{"name":…}}) to the provider-neutral form.
func toolChoice(raw json.RawMessage) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, nil
		}
		return "", invalid("tool_choice", "tool_choice %q is not one of auto, none, required", s)
	}
	var obj struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Function.Name == "" {
		return "", invalid("tool_choice", "tool_choice must be a string or {\"type\":\"function\",\"function\":{\"name\":…}}")
	}
	return obj.Function.Name, nil
}

// stopSequences reads stop: a string or an array of strings.
func stopSequences(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return nil, invalid("stop", "stop must be a string or an array of strings")
	}
	return many, nil
}

// ChatCompletion is the non-streaming response object.
type ChatCompletion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []ChoiceResult `json:"choices"`
	Usage   *WireUsage     `json:"usage,omitempty"`
}

// ChoiceResult is one choice of a chat.completion.
type ChoiceResult struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     *struct{}       `json:"logprobs"`
}

// ResponseMessage is the assistant message of a choice.
type ResponseMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []llm.ToolCall `json:"tool_calls,omitempty"`
	Refusal          *string        `json:"refusal"`
}

// WireUsage is the usage object.
type WireUsage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails breaks down prompt tokens.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func wireUsage(u llm.Usage) *WireUsage {
	w := &WireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if w.TotalTokens == 0 {
		w.TotalTokens = w.PromptTokens + w.CompletionTokens
	}
	if u.CachedTokens > 0 {
		w.PromptTokensDetails = &PromptTokensDetails{CachedTokens: u.CachedTokens}
	}
	return w
}

// ChatCompletionChunk is one streamed chunk.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *WireUsage    `json:"usage,omitempty"`
}

// ChunkChoice is one choice of a chunk.
type ChunkChoice struct {
	Index        int        `json:"index"`
	Delta        ChunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
	Logprobs     *struct{}  `json:"logprobs"`
}

// ChunkDelta is the increment of a chunk.
type ChunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []ChunkToolCall `json:"tool_calls,omitempty"`
}

// ChunkToolCall is a streamed tool call, addressed by index.
type ChunkToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}
