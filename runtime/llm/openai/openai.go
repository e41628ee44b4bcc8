// Package openai owns the OpenAI-compatible chat-completions adapter: it
// turns an llm.Request into a POST {BaseURL}/chat/completions, streamed or
// not, and the answer back into an llm.Response.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/transport"
)

// providerName names this adapter in errors and logs.
const providerName = "openai"

// DefaultTimeout is the per-attempt timeout of a zero Config.
const DefaultTimeout = 120 * time.Second

// Config configures a Provider.
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1; the adapter
	// appends /chat/completions.
	BaseURL string
	// APIKey is sent as a Bearer token when non-empty. It never appears in
	// errors or logs.
	APIKey string
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
	// Retry governs retries of failed attempts.
	Retry llm.RetryPolicy
	// Timeout bounds one attempt (see llm.SendAttempt); the default is
	// DefaultTimeout and a negative value disables it.
	Timeout time.Duration
	// ExtraHeaders are added to every request and may override the
	// adapter's own, e.g. an "api-key" header for Azure.
	ExtraHeaders map[string]string
}

// Provider calls an OpenAI-compatible chat-completions endpoint.
type Provider struct {
	cfg      Config
	endpoint transport.Endpoint
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider for cfg.
func New(cfg Config) *Provider {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	case cfg.Timeout < 0:
		cfg.Timeout = 0
	}
	p := &Provider{cfg: cfg}
	p.endpoint = transport.Endpoint{
		Provider:      providerName,
		URL:           strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		Client:        cfg.HTTPClient,
		Retry:         cfg.Retry,
		Timeout:       cfg.Timeout,
		SetHeaders:    p.setHeaders,
		ParseResponse: parseResponse,
		ReadStream:    readStream,
	}
	return p
}

// Chat performs one chat completion. With onDelta non-nil it streams and
// calls onDelta for every content and reasoning increment.
func (p *Provider) Chat(ctx context.Context, req *llm.Request, onDelta llm.DeltaFunc) (*llm.Response, error) {
	resp, err := p.chat(ctx, req, onDelta)
	if err != nil {
		return nil, fmt.Errorf("openai.Chat: %w", transport.Redact(err, p.cfg.APIKey))
	}
	return resp, nil
}

func (p *Provider) chat(ctx context.Context, req *llm.Request, onDelta llm.DeltaFunc) (*llm.Response, error) {
	body, err := json.Marshal(buildRequest(req, onDelta != nil))
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return p.endpoint.Post(ctx, body, onDelta)
}

// setHeaders adds authentication and the configured extra headers.
func (p *Provider) setHeaders(h http.Header) {
	if p.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	for k, v := range p.cfg.ExtraHeaders {
		h.Set(k, v)
	}
}

// chatRequest is the chat-completions request body.
type chatRequest struct {
	Model            string         `json:"model"`
	Messages         []chatMessage  `json:"messages"`
	Tools            []chatTool     `json:"tools,omitempty"`
	ToolChoice       any            `json:"tool_choice,omitempty"`
	Temperature      *float64       `json:"temperature,omitempty"`
	TopP             *float64       `json:"top_p,omitempty"`
	MaxTokens        *int           `json:"max_tokens,omitempty"`
	Stop             []string       `json:"stop,omitempty"`
	Seed             *int           `json:"seed,omitempty"`
	PresencePenalty  *float64       `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"`
	ReasoningEffort  string         `json:"reasoning_effort,omitempty"`
	Stream           bool           `json:"stream,omitempty"`
	StreamOptions    *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       llm.Role       `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []llm.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function llm.ToolSpec `json:"function"`
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// buildRequest maps the neutral request to the wire body. Reasoning traces
// of earlier turns are not sent back: most servers reject or ignore them.
func buildRequest(req *llm.Request, stream bool) *chatRequest {
	gp := req.Params
	out := &chatRequest{
		Model:            req.Model,
		Messages:         make([]chatMessage, 0, len(req.Messages)),
		Temperature:      gp.Temperature,
		TopP:             gp.TopP,
		MaxTokens:        gp.MaxTokens,
		Stop:             gp.Stop,
		Seed:             gp.Seed,
		PresencePenalty:  gp.PresencePenalty,
		FrequencyPenalty: gp.FrequencyPenalty,
		ReasoningEffort:  gp.ReasoningEffort,
	}
	for _, m := range req.Messages {
		cm := chatMessage{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			content := m.Content
			cm.Content = &content
		}
		for _, c := range m.ToolCalls {
			if strings.TrimSpace(c.Arguments) == "" {
				c.Arguments = "{}"
			}
			cm.ToolCalls = append(cm.ToolCalls, c)
		}
		out.Messages = append(out.Messages, cm)
	}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: t})
	}
	if len(req.Tools) > 0 {
		switch req.ToolChoice {
		case "":
		case "auto", "none", "required":
			out.ToolChoice = req.ToolChoice
		default:
			var c namedToolChoice
			c.Type, c.Function.Name = "function", req.ToolChoice
			out.ToolChoice = c
		}
	}
	if stream {
		out.Stream = true
		out.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return out
}

// wireUsage is the usage object of a response or final chunk.
type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (w *wireUsage) usage() llm.Usage {
	if w == nil {
		return llm.Usage{}
	}
	u := llm.Usage{PromptTokens: w.PromptTokens, CompletionTokens: w.CompletionTokens, TotalTokens: w.TotalTokens}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	if w.PromptTokensDetails != nil {
		u.CachedTokens = w.PromptTokensDetails.CachedTokens
	}
	if w.CompletionTokensDetails != nil {
		u.ReasoningTokens = w.CompletionTokensDetails.ReasoningTokens
	}
	return u
}

// wireError is an error object inside a 200 answer or a stream.
type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// providerError turns an in-band error object into a ProviderError.
func (e *wireError) providerError(attempts int) *llm.ProviderError {
	msg := e.Message
	if msg == "" {
		msg = "unspecified error"
		if e.Type != "" {
			msg = e.Type
		}
	}
	return &llm.ProviderError{Provider: providerName, Message: msg, Attempts: attempts}
}

// text is message content that may be a string, null, or an array of parts
// with text fields; anything else reads as empty.
type text string

// UnmarshalJSON accepts every content shape servers are known to send.
func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = text(s)
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(b, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		*t = text(sb.String())
	}
	return nil
}

type chatResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          text           `json:"content"`
			ReasoningContent text           `json:"reasoning_content"`
			Reasoning        text           `json:"reasoning"`
			ToolCalls        []llm.ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

// parseResponse reads a non-streamed completion.
func parseResponse(body []byte, attempts int) (*llm.Response, error) {
	var cr chatResponse
	if err := json.Unmarshal(body, &cr); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	if cr.Error != nil {
		return nil, cr.Error.providerError(attempts)
	}
	if len(cr.Choices) == 0 {
		return nil, errors.New("decode response: no choices")
	}
	c := cr.Choices[0]
	reasoning := c.Message.ReasoningContent
	if reasoning == "" {
		reasoning = c.Message.Reasoning
	}
	return &llm.Response{
		ID:               cr.ID,
		Model:            cr.Model,
		Content:          string(c.Message.Content),
		ToolCalls:        c.Message.ToolCalls,
		FinishReason:     c.FinishReason,
		Usage:            cr.Usage.usage(),
		ReasoningContent: string(reasoning),
		Raw:              json.RawMessage(body),
	}, nil
}
