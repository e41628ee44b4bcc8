// Package anthropic owns the Anthropic Messages adapter: it turns an
// llm.Request into a POST {BaseURL}/v1/messages, streamed or not, and the
// answer back into an llm.Response in OpenAI's vocabulary.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/transport"
)

// providerName names this adapter in errors and logs.
const providerName = "anthropic"

// Defaults of a zero Config.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
	DefaultTimeout   = 120 * time.Second
)

// Config configures a Provider.
type Config struct {
	// BaseURL is the API root, default DefaultBaseURL. The adapter posts to
	// {BaseURL}/v1/messages, or to {BaseURL}/messages when BaseURL already
	// ends in /v1.
	BaseURL string
	// APIKey is sent as x-api-key when non-empty. It never appears in
	// errors or logs.
	APIKey string
	// Version is the anthropic-version header, default DefaultVersion.
	Version string
	// DefaultMaxTokens is max_tokens when the request sets none (Anthropic
	// requires one); default DefaultMaxTokens.
	DefaultMaxTokens int
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// Retry governs retries of failed attempts.
	Retry llm.RetryPolicy
	// Timeout bounds one attempt (see llm.SendAttempt); the default is
	// DefaultTimeout and a negative value disables it.
	Timeout time.Duration
}

// Provider calls the Anthropic Messages API.
type Provider struct {
	cfg      Config
	endpoint transport.Endpoint
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = DefaultMaxTokens
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	case cfg.Timeout < 0:
		cfg.Timeout = 0
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	endpoint := base + "/v1/messages"
	if strings.HasSuffix(base, "/v1") {
		endpoint = base + "/messages"
	}
	p := &Provider{cfg: cfg}
	p.endpoint = transport.Endpoint{
		Provider:      providerName,
		URL:           endpoint,
		Client:        cfg.HTTPClient,
		Retry:         cfg.Retry,
		Timeout:       cfg.Timeout,
		SetHeaders:    p.setHeaders,
		ParseResponse: parseResponse,
		ReadStream:    readStream,
	}
	return p
}

// Chat performs one Messages call. With onDelta non-nil it streams and calls
// onDelta for every text and thinking increment.
func (p *Provider) Chat(ctx context.Context, req *llm.Request, onDelta llm.DeltaFunc) (*llm.Response, error) {
	resp, err := p.chat(ctx, req, onDelta)
	if err != nil {
		return nil, fmt.Errorf("anthropic.Chat: %w", transport.Redact(err, p.cfg.APIKey))
	}
	return resp, nil
}

func (p *Provider) chat(ctx context.Context, req *llm.Request, onDelta llm.DeltaFunc) (*llm.Response, error) {
	wire, err := buildRequest(req, p.cfg.DefaultMaxTokens, onDelta != nil)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return p.endpoint.Post(ctx, body, onDelta)
}

// setHeaders adds the API version and key.
func (p *Provider) setHeaders(h http.Header) {
	h.Set("anthropic-version", p.cfg.Version)
	if p.cfg.APIKey != "" {
		h.Set("x-api-key", p.cfg.APIKey)
	}
}

// messagesRequest is the Messages request body.
type messagesRequest struct {
	Model         string      `json:"model"`
	MaxTokens     int         `json:"max_tokens"`
	System        string      `json:"system,omitempty"`
	Messages      []message   `json:"messages"`
	Tools         []tool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice `json:"tool_choice,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block of any type; fields are set per type.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// emptySchema is the input_schema of a tool declared without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest maps the neutral request to the wire body:
//   - system messages are joined into the top-level system prompt;
//   - assistant tool calls become tool_use blocks after the text;
//   - tool messages become tool_result blocks of a user message, with
//     consecutive results merged into one message;
//   - empty text is left out (Anthropic rejects empty text blocks) and a
//     message left with no blocks is dropped;
//   - reasoning traces are not sent back (they need a signature we do not
//     keep), and seed, penalties and reasoning_effort have no equivalent.
func buildRequest(req *llm.Request, defaultMaxTokens int, stream bool) (*messagesRequest, error) {
	out := &messagesRequest{
		Model:         req.Model,
		MaxTokens:     defaultMaxTokens,
		Messages:      []message{},
		StopSequences: req.Params.Stop,
		Temperature:   req.Params.Temperature,
		TopP:          req.Params.TopP,
		Stream:        stream,
	}
	if req.Params.MaxTokens != nil && *req.Params.MaxTokens > 0 {
		out.MaxTokens = *req.Params.MaxTokens
	}
	var system []string
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case llm.RoleUser:
			if m.Content != "" {
				out.Messages = append(out.Messages, message{Role: "user", Content: []block{{Type: "text", Text: m.Content}}})
			}
		case llm.RoleAssistant:
			var blocks []block
			if m.Content != "" {
				blocks = append(blocks, block{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)})
			}
			if len(blocks) > 0 {
				out.Messages = append(out.Messages, message{Role: "assistant", Content: blocks})
			}
		case llm.RoleTool:
			result := block{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content}
			if n := len(out.Messages); n > 0 && isToolResults(out.Messages[n-1]) {
				out.Messages[n-1].Content = append(out.Messages[n-1].Content, result)
			} else {
				out.Messages = append(out.Messages, message{Role: "user", Content: []block{result}})
			}
		default:
			return nil, fmt.Errorf("build request: message %d has unknown role %q", i, m.Role)
		}
	}
	out.System = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		}
		out.Tools = append(out.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "auto":
			out.ToolChoice = &toolChoice{Type: "auto"}
		case "required":
			out.ToolChoice = &toolChoice{Type: "any"}
		case "none":
			out.ToolChoice = &toolChoice{Type: "none"}
		default:
			out.ToolChoice = &toolChoice{Type: "tool", Name: req.ToolChoice}
		}
	}
	return out, nil
}

// isToolResults reports whether m is a user message of tool results only.
func isToolResults(m message) bool {
	if m.Role != "user" || len(m.Content) == 0 {
		return false
	}
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			return false
		}
	}
	return true
}

// toolInput turns a tool call's arguments into the input object Anthropic
// requires. Empty arguments are {}; arguments that are not a JSON object
// (a model's malformed output from an earlier turn) are kept as a string
// under "_raw_arguments" so the conversation stays valid.
func toolInput(args string) json.RawMessage {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
		return json.RawMessage(args)
	}
	wrapped, _ := json.Marshal(map[string]string{"_raw_arguments": args})
	return wrapped
}

// wireUsage is Anthropic's usage object. input_tokens excludes cached input.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
}

// merge overwrites u's counts with those present in w.
func (u *wireUsage) merge(w *wireUsage) {
	if w == nil {
		return
	}
	for _, f := range []struct{ dst, src **int }{
		{&u.InputTokens, &w.InputTokens},
		{&u.OutputTokens, &w.OutputTokens},
		{&u.CacheReadInputTokens, &w.CacheReadInputTokens},
		{&u.CacheCreationInputTokens, &w.CacheCreationInputTokens},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
}

// usage normalises to OpenAI's convention, where the prompt count includes
// cached tokens: PromptTokens = input + cache read + cache creation.
func (u *wireUsage) usage() llm.Usage {
	val := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	prompt := val(u.InputTokens) + val(u.CacheReadInputTokens) + val(u.CacheCreationInputTokens)
	out := val(u.OutputTokens)
	return llm.Usage{
		PromptTokens:     prompt,
		CompletionTokens: out,
		TotalTokens:      prompt + out,
		CachedTokens:     val(u.CacheReadInputTokens),
	}
}

// finishReason maps a stop_reason to OpenAI's vocabulary; unknown reasons
// pass through.
func finishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return llm.FinishStop
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "refusal":
		return llm.FinishContentFilter
	}
	return stop
}

// wireError is an error document or in-stream error event.
type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (e *wireError) providerError(attempts int) *llm.ProviderError {
	msg := e.Message
	if msg == "" {
		msg = e.Type
	}
	if msg == "" {
		msg = "unspecified error"
	}
	return &llm.ProviderError{Provider: providerName, Message: msg, Attempts: attempts}
}

type messageResponse struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Model      string     `json:"model"`
	Content    []respBlk  `json:"content"`
	StopReason string     `json:"stop_reason"`
	Usage      wireUsage  `json:"usage"`
	Error      *wireError `json:"error"`
}

type respBlk struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

// parseResponse reads a non-streamed message.
func parseResponse(body []byte, attempts int) (*llm.Response, error) {
	var mr messageResponse
	if err := json.Unmarshal(body, &mr); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if mr.Type == "error" && mr.Error != nil {
		return nil, mr.Error.providerError(attempts)
	}
	resp := &llm.Response{
		ID:           mr.ID,
		Model:        mr.Model,
		FinishReason: finishReason(mr.StopReason),
		Usage:        mr.Usage.usage(),
		Raw:          json.RawMessage(body),
	}
	var content, reasoning strings.Builder
	for _, b := range mr.Content {
		switch b.Type {
		case "text":
			content.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: arguments(b.Input)})
		}
	}
	resp.Content, resp.ReasoningContent = content.String(), reasoning.String()
	return resp, nil
}

// arguments renders a tool_use input as compact JSON text, {} when absent.
func arguments(input json.RawMessage) string {
	var buf bytes.Buffer
	if len(input) == 0 || json.Compact(&buf, input) != nil || buf.String() == "null" {
		return "{}"
	}
	return buf.String()
}
