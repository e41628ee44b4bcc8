// Package core owns AgentCore, the single-turn inference engine: it assembles
// the Context Frame into a provider-agnostic request, calls the provider and
// normalises the answer into the handoff the loop consumes.
package core

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
)

// Frame is the Context Frame of one inference, by layer.
type Frame struct {
	// Stable context: the system message and the exposed tool definitions.
	System string
	Tools  []tools.ToolDefinition
	// ExtraTools are tools the client declared (client-side tools); the model
	// sees them next to the server's tools, but the server never runs them.
	ExtraTools []llm.ToolSpec

	// Session context: the stored history, this turn's input included.
	History []llm.Message

	// Params override the configured generation parameters for this turn.
	Params llm.GenerationParams
	// ToolChoice is passed to the provider ("", "auto", "none", "required" or a tool name).
	ToolChoice string

	// Turn context: memory retrieved for this turn. When non-empty it is
	// fenced and prepended to a copy of the last user message.
	Retrieved string
}

// Output is the Inference Handoff: what the loop receives from one call.
type Output struct {
	Message      llm.Message // the assistant message, memory fence scrubbed
	ToolCalls    []llm.ToolCall
	FinishReason string
	Usage        llm.Usage
	Reasoning    string
	Model        string
}

// AgentCore performs one inference.
type AgentCore struct {
	Provider llm.Provider
	Model    string
	Params   llm.GenerationParams
}

// BuildRequest normalises a frame into the provider-agnostic request.
func (c *AgentCore) BuildRequest(f *Frame) *llm.Request {
	msgs := make([]llm.Message, 0, len(f.History)+1)
	msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: f.System})
	msgs = append(msgs, f.History...)
	if f.Retrieved != "" {
		for i := len(msgs) - 1; i > 0; i-- {
			if msgs[i].Role == llm.RoleUser {
				msgs[i].Content = FenceMemory(f.Retrieved) + "\n\n" + msgs[i].Content // msgs is a copy
				break
			}
		}
	}
	specs := make([]llm.ToolSpec, 0, len(f.Tools)+len(f.ExtraTools))
	for _, d := range f.Tools {
		specs = append(specs, llm.ToolSpec{Name: d.Name, Description: d.Description, Parameters: normaliseSchema(d.Parameters)})
	}
	for _, t := range f.ExtraTools {
		t.Parameters = normaliseSchema(t.Parameters)
		specs = append(specs, t)
	}
	params := c.Params.Merge(f.Params)
	model := c.Model
	if params.Model != "" {
		model = params.Model
	}
	return &llm.Request{Model: model, Messages: msgs, Tools: specs, ToolChoice: f.ToolChoice, Params: params}
}

// Infer builds the request for f, calls the provider (streaming when onDelta
// is non-nil) and returns the normalised handoff.
func (c *AgentCore) Infer(ctx context.Context, f *Frame, onDelta llm.DeltaFunc) (*Output, error) {
	resp, err := c.Provider.Chat(ctx, c.BuildRequest(f), onDelta)
	if err != nil {
		return nil, err
	}
	return Normalise(resp), nil
}

// Normalise turns a provider response into the loop's handoff. The reply is
// scrubbed of any echoed memory fence before anything can store it.
func Normalise(resp *llm.Response) *Output {
	content := ScrubMemoryContext(resp.Content)
	finish := resp.FinishReason
	if len(resp.ToolCalls) > 0 {
		finish = llm.FinishToolCalls
	} else if finish == "" || finish == llm.FinishToolCalls {
		finish = llm.FinishStop
	}
	return &Output{
		Message: llm.Message{
			Role: llm.RoleAssistant, Content: content,
			ToolCalls: resp.ToolCalls, ReasoningContent: resp.ReasoningContent,
		},
		ToolCalls:    resp.ToolCalls,
		FinishReason: finish,
		Usage:        resp.Usage,
		Reasoning:    resp.ReasoningContent,
		Model:        resp.Model,
	}
}

// FenceMemory wraps retrieved memory in the <memory-context> fence.
func FenceMemory(s string) string {
	return "<memory-context>\n" + strings.TrimSpace(s) + "\n</memory-context>"
}

var memoryFence = regexp.MustCompile(`(?s)\s*<memory-context>.*?</memory-context>\s*`)

// ScrubMemoryContext removes any <memory-context> fence the model echoed.
func ScrubMemoryContext(s string) string {
	if !strings.Contains(s, "<memory-context>") {
		return s
	}
	return strings.TrimSpace(memoryFence.ReplaceAllString(s, " "))
}

// normaliseSchema makes sure a tool's parameters are an object schema, as
// every provider requires.
func normaliseSchema(p json.RawMessage) json.RawMessage {
	if len(p) == 0 || string(p) == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return p
}
