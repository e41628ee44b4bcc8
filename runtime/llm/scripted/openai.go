package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/nagent/nagent/runtime/llm"
)

// created is the fixed "created" timestamp of every OpenAI answer.
const created = 1700000000

// openaiDialect speaks the OpenAI chat-completions wire format.
type openaiDialect struct{}

type oaRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ToolCalls        []llm.ToolCall  `json:"tool_calls"`
		ToolCallID       string          `json:"tool_call_id"`
		Name             string          `json:"name"`
		ReasoningContent string          `json:"reasoning_content"`
	} `json:"messages"`
	Tools []struct {
		Type     string       `json:"type"`
		Function llm.ToolSpec `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (openaiDialect) parse(rec *RecordedRequest) (streamOpts, error) {
	var req oaRequest
	if err := json.Unmarshal(rec.Body, &req); err != nil {
		return streamOpts{}, err
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	for i, m := range req.Messages {
		text, err := textOf(m.Content)
		if err != nil {
			return streamOpts{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
		rec.Messages = append(rec.Messages, llm.Message{
			Role:             llm.Role(m.Role),
			Content:          text,
			ToolCalls:        m.ToolCalls,
			ToolCallID:       m.ToolCallID,
			Name:             m.Name,
			ReasoningContent: m.ReasoningContent,
		})
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Function)
	}
	return streamOpts{includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}, nil
}

type oaError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func newOAError(status int, msg string) oaError {
	var e oaError
	e.Error.Message = msg
	switch {
	case status == http.StatusTooManyRequests:
		e.Error.Type = "rate_limit_error"
	case status >= 500:
		e.Error.Type = "server_error"
	default:
		e.Error.Type = "invalid_request_error"
	}
	return e
}

func (openaiDialect) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, newOAError(status, msg))
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func toOAUsage(u *llm.Usage) *oaUsage {
	o := &oaUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	o.PromptTokensDetails.CachedTokens = u.CachedTokens
	o.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return o
}

type oaMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []llm.ToolCall `json:"tool_calls,omitempty"`
}

type oaChoice struct {
	Index        int              `json:"index"`
	Message      *oaMessage       `json:"message,omitempty"`
	Delta        *oaDelta         `json:"delta,omitempty"`
	Logprobs     *json.RawMessage `json:"logprobs"`
	FinishReason *string          `json:"finish_reason"`
}

type oaCompletion struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	// Usage is a *oaUsage, or JSON null in chunks of a stream that asked
	// for usage, or absent.
	Usage any `json:"usage,omitempty"`
}

func completionID(n int) string { return fmt.Sprintf("chatcmpl-scripted-%d", n) }

func modelOf(rec *RecordedRequest) string {
	if rec.Model == "" {
		return "scripted"
	}
	return rec.Model
}

func (openaiDialect) writeReply(w http.ResponseWriter, n int, rec *RecordedRequest, r *Reply) {
	msg := &oaMessage{Role: "assistant", ReasoningContent: r.Reasoning, ToolCalls: r.ToolCalls}
	if r.Content != "" || len(r.ToolCalls) == 0 {
		msg.Content = &r.Content
	}
	finish := r.FinishReason
	writeJSON(w, http.StatusOK, oaCompletion{
		ID:      completionID(n),
		Object:  "chat.completion",
		Created: created,
		Model:   modelOf(rec),
		Choices: []oaChoice{{Index: 0, Message: msg, FinishReason: &finish}},
		Usage:   toOAUsage(r.Usage),
	})
}

type oaDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCallDel `json:"tool_calls,omitempty"`
}

type oaToolCallDel struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// writeStream emits the chunks OpenAI sends: a role chunk, reasoning and
// content pieces, each tool call's id and name followed by its arguments in
// pieces, a finish_reason chunk, a usage-only chunk when asked for, and
// [DONE].
func (openaiDialect) writeStream(sw *sseWriter, n int, rec *RecordedRequest, r *Reply, opts streamOpts) {
	sw.errorEvent = func(sw *sseWriter, msg string) {
		data, _ := json.Marshal(newOAError(http.StatusInternalServerError, msg))
		sw.raw("", string(data))
	}
	chunk := func(d *oaDelta, finish *string) oaCompletion {
		c := oaCompletion{
			ID: completionID(n), Object: "chat.completion.chunk", Created: created, Model: modelOf(rec),
			Choices: []oaChoice{{Index: 0, Delta: d, FinishReason: finish}},
		}
		if opts.includeUsage {
			c.Usage = json.RawMessage("null")
		}
		return c
	}
	empty := ""
	if !sw.event("", chunk(&oaDelta{Role: "assistant", Content: &empty}, nil)) {
		return
	}
	for _, p := range splitRunes(r.Reasoning, r.ChunkSize) {
		if !sw.event("", chunk(&oaDelta{ReasoningContent: p}, nil)) {
			return
		}
	}
	for _, p := range splitRunes(r.Content, r.ChunkSize) {
		if !sw.event("", chunk(&oaDelta{Content: &p}, nil)) {
			return
		}
	}
	for i, c := range r.ToolCalls {
		head := oaToolCallDel{Index: i, ID: c.ID, Type: "function"}
		head.Function.Name = c.Name
		if !sw.event("", chunk(&oaDelta{ToolCalls: []oaToolCallDel{head}}, nil)) {
			return
		}
		for _, p := range splitRunes(c.Arguments, r.ChunkSize) {
			var d oaToolCallDel
			d.Index, d.Function.Arguments = i, p
			if !sw.event("", chunk(&oaDelta{ToolCalls: []oaToolCallDel{d}}, nil)) {
				return
			}
		}
	}
	finish := r.FinishReason
	if !sw.event("", chunk(&oaDelta{}, &finish)) {
		return
	}
	if opts.includeUsage {
		u := oaCompletion{
			ID: completionID(n), Object: "chat.completion.chunk", Created: created, Model: modelOf(rec),
			Choices: []oaChoice{}, Usage: toOAUsage(r.Usage),
		}
		if !sw.event("", u) {
			return
		}
	}
	sw.raw("", "[DONE]")
}

// writeJSON answers status with v as the JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic("scripted: marshal answer: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}
