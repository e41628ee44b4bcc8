// Package llm owns the provider-neutral inference types: the request AgentCore
// builds, the normalised response it receives, and the Provider seam that the
// OpenAI-compatible and Anthropic adapters implement.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// Role is the author of a message.
type Role string

// The message roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one provider-neutral conversation message.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool name on a tool message.
	Name string `json:"name,omitempty"`
	// ReasoningContent is the provider's reasoning trace, where it sends one.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// ToolCall is one function call requested by the model. It marshals to the
// OpenAI wire shape {"id","type":"function","function":{"name","arguments"}}.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // raw JSON text exactly as the model produced it
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// MarshalJSON writes the OpenAI tool-call shape.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	var w wireToolCall
	w.ID, w.Type = c.ID, "function"
	w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
	return json.Marshal(w)
}

// UnmarshalJSON reads the OpenAI tool-call shape.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w wireToolCall
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	c.ID, c.Name, c.Arguments = w.ID, w.Function.Name, w.Function.Arguments
	return nil
}

// ToolSpec is a tool definition as the model sees it.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
}

// GenerationParams are the sampling and length controls of one request.
// Nil fields are left to the provider's defaults.
type GenerationParams struct {
	Temperature      *float64 `json:"temperature,omitempty" yaml:"temperature"`
	TopP             *float64 `json:"top_p,omitempty" yaml:"top_p"`
	MaxTokens        *int     `json:"max_tokens,omitempty" yaml:"max_tokens"`
	Stop             []string `json:"stop,omitempty" yaml:"stop"`
	Seed             *int     `json:"seed,omitempty" yaml:"seed"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty" yaml:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty" yaml:"frequency_penalty"`
	// ReasoningEffort is passed through to providers that support it.
	ReasoningEffort string `json:"reasoning_effort,omitempty" yaml:"reasoning_effort"`
	// Model, when set, replaces the configured model for one turn (the
	// terminal UI's model picker). It is never read from a wire format.
	Model string `json:"-" yaml:"-"`
}

// Merge returns p with every field that over sets replacing p's.
func (p GenerationParams) Merge(over GenerationParams) GenerationParams {
	if over.Temperature != nil {
		p.Temperature = over.Temperature
	}
	if over.TopP != nil {
		p.TopP = over.TopP
	}
	if over.MaxTokens != nil {
		p.MaxTokens = over.MaxTokens
	}
	if over.Stop != nil {
		p.Stop = over.Stop
	}
	if over.Seed != nil {
		p.Seed = over.Seed
	}
	if over.PresencePenalty != nil {
		p.PresencePenalty = over.PresencePenalty
	}
	if over.FrequencyPenalty != nil {
		p.FrequencyPenalty = over.FrequencyPenalty
	}
	if over.ReasoningEffort != "" {
		p.ReasoningEffort = over.ReasoningEffort
	}
	if over.Model != "" {
		p.Model = over.Model
	}
	return p
}

// Request is the provider-agnostic inference request.
type Request struct {
	Model    string
	Messages []Message
	Tools    []ToolSpec
	// ToolChoice is "", "auto", "none", "required", or a tool name to force.
	ToolChoice string
	Params     GenerationParams
}

// Usage counts tokens for one inference.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CachedTokens is the part of the prompt served from the provider's cache.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// ReasoningTokens is the part of the completion spent on reasoning.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Add accumulates u2 into u.
func (u *Usage) Add(u2 Usage) {
	u.PromptTokens += u2.PromptTokens
	u.CompletionTokens += u2.CompletionTokens
	u.TotalTokens += u2.TotalTokens
	u.CachedTokens += u2.CachedTokens
	u.ReasoningTokens += u2.ReasoningTokens
}

// Finish reasons, normalised to OpenAI's vocabulary.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// Response is the normalised inference result.
type Response struct {
	ID               string
	Model            string
	Content          string
	ToolCalls        []ToolCall
	FinishReason     string
	Usage            Usage
	ReasoningContent string
	// Raw is the provider's final response body (non-streaming) or the last
	// chunk (streaming); kept for debugging, never sent back to a model.
	Raw json.RawMessage
}

// Delta is one streamed increment of a response.
type Delta struct {
	Content          string
	ReasoningContent string
}

// DeltaFunc receives streamed increments in order. It must not block for long.
type DeltaFunc func(Delta)

// Provider performs one inference. When onDelta is non-nil the provider
// streams and calls it for every increment; the returned Response is the
// complete, reassembled result either way.
type Provider interface {
	Chat(ctx context.Context, req *Request, onDelta DeltaFunc) (*Response, error)
}

// ProviderError is a failure answered by the provider (or the transport to
// it) after retries were exhausted or judged pointless.
type ProviderError struct {
	Provider   string // "openai", "anthropic"
	StatusCode int    // 0 for transport errors
	Message    string // what the provider said, trimmed
	Attempts   int
	Err        error // underlying transport error, if any
}

func (e *ProviderError) Error() string {
	switch {
	case e.StatusCode != 0:
		return fmt.Sprintf("%s provider answered HTTP %d after %d attempt(s): %s", e.Provider, e.StatusCode, e.Attempts, e.Message)
	case e.Err != nil:
		return fmt.Sprintf("%s provider unreachable after %d attempt(s): %v", e.Provider, e.Attempts, e.Err)
	default:
		return fmt.Sprintf("%s provider: %s", e.Provider, e.Message)
	}
}

func (e *ProviderError) Unwrap() error { return e.Err }
