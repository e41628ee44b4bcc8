// Package mem0 owns the mem0 retrieval provider: the Mem0 Platform REST API
// (https://docs.mem0.ai/api-reference) over HTTP. It uses
//
//	POST /v3/memories/search/   {"query", "filters": {"user_id"}, "top_k"} → {"results": [{"id", "memory", "score"}]}
//	POST /v1/memories/          {"messages": [{"role", "content"}], "user_id", "agent_id", "metadata", "infer"}
//
// with the header "Authorization: Token <api key>". Search answers in the
// older shapes (a bare array, or {"memories": [...]}) are read as well.
package mem0

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/internal/httpjson"
	"github.com/nagent/nagent/runtime/tools"
)

// Name is the provider's name in a session's selection.
const Name = "mem0"

// Paths of the Mem0 REST API the provider calls.
const (
	SearchPath = "/v3/memories/search/"
	AddPath    = "/v1/memories/"
)

// Options configure the provider.
type Options struct {
	// BaseURL defaults to https://api.mem0.ai.
	BaseURL string
	APIKey  string
	// UserID scopes the memories (default "nagent-user"); AgentID is sent
	// with added memories when set.
	UserID  string
	AgentID string
	// TopK is how many memories a prefetch asks for (default 5).
	TopK int
	// SyncTurns sends each completed turn to mem0 to infer memories from.
	// Off by default: the design keeps sync_turn a no-op for retrieval
	// providers, and memories are then added with the mem0_add tool.
	SyncTurns  bool
	HTTPClient *http.Client
}

// Provider is the mem0 provider.
type Provider struct {
	c     *httpjson.Client
	opts  Options
	tools []memory.ProviderTool
}

var (
	_ memory.Prefetcher   = (*Provider)(nil)
	_ memory.TurnSyncer   = (*Provider)(nil)
	_ memory.ToolProvider = (*Provider)(nil)
)

// New returns the provider.
func New(opts Options) *Provider {
	if opts.BaseURL == "" {
		opts.BaseURL = "https://api.mem0.ai"
	}
	if opts.UserID == "" {
		opts.UserID = "nagent-user"
	}
	if opts.TopK <= 0 {
		opts.TopK = 5
	}
	p := &Provider{c: &httpjson.Client{BaseURL: opts.BaseURL, Auth: "Token " + opts.APIKey, HTTP: opts.HTTPClient}, opts: opts}
	p.tools = []memory.ProviderTool{{
		Definition: tools.ToolDefinition{
			Name: "mem0_add", Description: "Store information in long-term memory (mem0); mem0 extracts the facts worth keeping.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","description":"what to remember"}},"required":["content"],"additionalProperties":false}`),
			RiskLevel:  tools.RiskLow, SourceType: tools.SourceBuiltin,
		},
		Write: &memory.ToolWrite{Operation: "add", Target: "memories"},
		Executor: tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
			var a struct{ Content string }
			if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil || strings.TrimSpace(a.Content) == "" {
				return "", fmt.Errorf("give what to remember in content")
			}
			var out json.RawMessage
			if err := p.add(ctx, ec.SessionID, []message{{Role: "user", Content: a.Content}}, &out); err != nil {
				return "", err
			}
			return string(out), nil
		}),
	}}
	return p
}

// Name implements memory.Provider.
func (p *Provider) Name() string { return Name }

// Tools implements memory.ToolProvider.
func (p *Provider) Tools() []memory.ProviderTool { return p.tools }

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Memory is one search result.
type Memory struct {
	ID     string  `json:"id"`
	Memory string  `json:"memory"`
	Score  float64 `json:"score"`
}

// Search asks mem0 for the memories relevant to query.
func (p *Provider) Search(ctx context.Context, query string) ([]Memory, error) {
	body := map[string]any{
		"query":   query,
		"filters": map[string]any{"user_id": p.opts.UserID},
		"top_k":   p.opts.TopK,
	}
	var raw json.RawMessage
	if err := p.c.Do(ctx, http.MethodPost, SearchPath, body, &raw); err != nil {
		return nil, fmt.Errorf("mem0 search: %w", err)
	}
	var list []Memory
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var wrapped struct {
		Results  []Memory `json:"results"`
		Memories []Memory `json:"memories"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		return nil, fmt.Errorf("mem0 search: unexpected answer: %w", err)
	}
	if wrapped.Results != nil {
		return wrapped.Results, nil
	}
	return wrapped.Memories, nil
}

// Prefetch implements memory.Prefetcher.
func (p *Provider) Prefetch(ctx context.Context, q memory.PrefetchQuery) (string, error) {
	mems, err := p.Search(ctx, q.Query)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, m := range mems {
		if t := strings.TrimSpace(m.Memory); t != "" {
			lines = append(lines, "- "+strings.ReplaceAll(t, "\n", " "))
		}
	}
	return strings.Join(lines, "\n"), nil
}

func (p *Provider) add(ctx context.Context, sessionID string, msgs []message, out any) error {
	body := map[string]any{
		"messages": msgs,
		"user_id":  p.opts.UserID,
		"metadata": map[string]any{"session_id": sessionID, "source": "nagent"},
		"infer":    true,
	}
	if p.opts.AgentID != "" {
		body["agent_id"] = p.opts.AgentID
	}
	if err := p.c.Do(ctx, http.MethodPost, AddPath, body, out); err != nil {
		return fmt.Errorf("mem0 add: %w", err)
	}
	return nil
}

// SyncTurn implements memory.TurnSyncer: with SyncTurns on, the turn's user
// input and answer go to mem0; otherwise it does nothing.
func (p *Provider) SyncTurn(ctx context.Context, t memory.SyncTurn) error {
	if !p.opts.SyncTurns || strings.TrimSpace(t.User) == "" {
		return nil
	}
	msgs := []message{{Role: "user", Content: t.User}}
	if t.Assistant != "" {
		msgs = append(msgs, message{Role: "assistant", Content: t.Assistant})
	}
	return p.add(ctx, t.SessionID, msgs, nil)
}
