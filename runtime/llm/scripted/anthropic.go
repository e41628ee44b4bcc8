package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/nagent/nagent/runtime/llm"
)

// anthropicDialect speaks the Anthropic Messages wire format.
type anthropicDialect struct{}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

type anRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

func (anthropicDialect) parse(rec *RecordedRequest) (streamOpts, error) {
	var req anRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		return streamOpts{}, err
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	system, err := textOf(req.System)
	if err != nil {
		return streamOpts{}, fmt.Errorf("system: %w", err)
	}
	if system != "" {
		rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	for i, m := range req.Messages {
		msgs, err := anMessages(llm.Role(m.Role), m.Content)
		if err != nil {
			return streamOpts{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
		rec.Messages = append(rec.Messages, msgs...)
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	// Anthropic streams always carry usage.
	return streamOpts{includeUsage: true}, nil
}

// anMessages turns one Anthropic message into neutral messages: each
// tool_result becomes a tool message, the rest one message of role.
func anMessages(role llm.Role, content json.RawMessage) ([]llm.Message, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []llm.Message{{Role: role, Content: s}}, nil
	}
	var blocks []anBlock
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("content is neither a string nor an array of blocks: %w", err)
	}
	var out []llm.Message
	msg := llm.Message{Role: role}
	keep := false
	for _, b := range blocks {
		switch b.Type {
		case "text":
			msg.Content += b.Text
			keep = true
		case "thinking":
			msg.ReasoningContent += b.Thinking
			keep = true
		case "tool_use":
			var args bytes.Buffer
			if err := json.Compact(&args, b.Input); err != nil {
				return nil, fmt.Errorf("tool_use %s input: %w", b.ID, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args.String()})
			keep = true
		case "tool_result":
			text, err := textOf(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: b.ToolUseID, Content: text})
		}
	}
	if keep {
		out = append(out, msg)
	}
	return out, nil
}

type anError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func newANError(status int, msg string) anError {
	e := anError{Type: "error"}
	e.Error.Message = msg
	switch status {
	case http.StatusBadRequest:
		e.Error.Type = "invalid_request_error"
	case http.StatusUnauthorized:
		e.Error.Type = "authentication_error"
	case http.StatusForbidden:
		e.Error.Type = "permission_error"
	case http.StatusNotFound:
		e.Error.Type = "not_found_error"
	case http.StatusTooManyRequests:
		e.Error.Type = "rate_limit_error"
	case 529:
		e.Error.Type = "overloaded_error"
	default:
		e.Error.Type = "api_error"
	}
	return e
}

func (anthropicDialect) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, newANError(status, msg))
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

// toANUsage splits neutral usage, whose prompt includes cached tokens, into
// Anthropic's, whose input_tokens excludes them.
func toANUsage(u *llm.Usage) anUsage {
	return anUsage{
		InputTokens:          u.PromptTokens - u.CachedTokens,
		OutputTokens:         u.CompletionTokens,
		CacheReadInputTokens: u.CachedTokens,
	}
}

type anMessage struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []anBlock `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anUsage   `json:"usage"`
}

func messageID(n int) string { return fmt.Sprintf("msg_scripted_%d", n) }

// stopReason maps an OpenAI finish reason to Anthropic's stop_reason.
func stopReason(finish string) string {
	switch finish {
	case llm.FinishStop:
		return "end_turn"
	case llm.FinishToolCalls:
		return "tool_use"
	case llm.FinishLength:
		return "max_tokens"
	case llm.FinishContentFilter:
		return "refusal"
	}
	return finish
}

// toolInput is a tool call's arguments as an input object.
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

const signature = "scripted-signature"

func (anthropicDialect) writeReply(w http.ResponseWriter, n int, rec *RecordedRequest, r *Reply) {
	var blocks []anBlock
	if r.Reasoning != "" {
		blocks = append(blocks, anBlock{Type: "thinking", Thinking: r.Reasoning, Signature: signature})
	}
	if r.Content != "" {
		blocks = append(blocks, anBlock{Type: "text", Text: r.Content})
	}
	for _, c := range r.ToolCalls {
		blocks = append(blocks, anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)})
	}
	if blocks == nil {
		blocks = []anBlock{}
	}
	stop := stopReason(r.FinishReason)
	writeJSON(w, http.StatusOK, anMessage{
		ID: messageID(n), Type: "message", Role: "assistant", Model: modelOf(rec),
		Content: blocks, StopReason: &stop, Usage: toANUsage(r.Usage),
	})
}

// anEvent is the data of one streamed event; fields are set per type.
type anEvent struct {
	Type         string          `json:"type"`
	Message      *anMessage      `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock json.RawMessage `json:"content_block,omitempty"`
	Delta        any             `json:"delta,omitempty"`
	Usage        any             `json:"usage,omitempty"`
}

// writeStream emits message_start, a ping, one content block per thinking,
// text and tool call (started, filled with deltas, stopped), message_delta
// with the stop reason and output usage, and message_stop.
func (anthropicDialect) writeStream(sw *sseWriter, n int, rec *RecordedRequest, r *Reply, _ streamOpts) {
	sw.errorEvent = func(sw *sseWriter, msg string) {
		data, _ := json.Marshal(newANError(529, msg))
		sw.raw("error", string(data))
	}
	usage := toANUsage(r.Usage)
	start := &anMessage{
		ID: messageID(n), Type: "message", Role: "assistant", Model: modelOf(rec), Content: []anBlock{},
		Usage: anUsage{InputTokens: usage.InputTokens, OutputTokens: 1, CacheReadInputTokens: usage.CacheReadInputTokens},
	}
	if !sw.event("message_start", anEvent{Type: "message_start", Message: start}) ||
		!sw.event("ping", anEvent{Type: "ping"}) {
		return
	}
	index := 0
	block := func(startBlock string, deltaType, field string, pieces []string, extra func() bool) bool {
		i := index
		index++
		if !sw.event("content_block_start", anEvent{Type: "content_block_start", Index: &i, ContentBlock: json.RawMessage(startBlock)}) {
			return false
		}
		for _, p := range pieces {
			d := map[string]string{"type": deltaType, field: p}
			if !sw.event("content_block_delta", anEvent{Type: "content_block_delta", Index: &i, Delta: d}) {
				return false
			}
		}
		if extra != nil && !extra() {
			return false
		}
		return sw.event("content_block_stop", anEvent{Type: "content_block_stop", Index: &i})
	}
	if r.Reasoning != "" {
		sig := func() bool {
			i := index - 1
			d := map[string]string{"type": "signature_delta", "signature": signature}
			return sw.event("content_block_delta", anEvent{Type: "content_block_delta", Index: &i, Delta: d})
		}
		if !block(`{"type":"thinking","thinking":""}`, "thinking_delta", "thinking", splitRunes(r.Reasoning, r.ChunkSize), sig) {
			return
		}
	}
	if r.Content != "" {
		if !block(`{"type":"text","text":""}`, "text_delta", "text", splitRunes(r.Content, r.ChunkSize), nil) {
			return
		}
	}
	for _, c := range r.ToolCalls {
		head, _ := json.Marshal(anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage("{}")})
		if !block(string(head), "input_json_delta", "partial_json", splitRunes(string(toolInput(c.Arguments)), r.ChunkSize), nil) {
			return
		}
	}
	delta := map[string]any{"stop_reason": stopReason(r.FinishReason), "stop_sequence": nil}
	if !sw.event("message_delta", anEvent{Type: "message_delta", Delta: delta, Usage: map[string]int{"output_tokens": usage.OutputTokens}}) {
		return
	}
	sw.event("message_stop", anEvent{Type: "message_stop"})
}
