// Package honcho owns the honcho retrieval provider: the Honcho v3 REST API
// (https://docs.honcho.dev/v3/api-reference) over HTTP, a user-modelling
// memory queried through its dialectic chat endpoint. It uses
//
//	POST /v3/workspaces/{workspace_id}/peers/{peer_id}/chat    {"query", "reasoning_level"} → {"content"}
//	POST /v3/workspaces                                         {"id"}          (get or create)
//	POST /v3/workspaces/{workspace_id}/peers                    {"id"}          (get or create)
//	POST /v3/workspaces/{workspace_id}/sessions                 {"id", "peers"} (get or create)
//	POST /v3/workspaces/{workspace_id}/sessions/{session_id}/messages  {"messages": [{"content", "peer_id"}]}
//
// with the header "Authorization: Bearer <api key>". The last four are only
// used when SyncTurns is on.
package honcho

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/internal/httpjson"
)

// Name is the provider's name in a session's selection.
const Name = "honcho"

// Options configure the provider.
type Options struct {
	// BaseURL defaults to https://api.honcho.dev.
	BaseURL     string
	APIKey      string
	WorkspaceID string // default "nagent"
	// PeerID is the user's peer (default "user"); AssistantPeerID the
	// agent's (default "nagent").
	PeerID          string
	AssistantPeerID string
	// ReasoningLevel of the dialectic chat: minimal, low (default), medium,
	// high or max.
	ReasoningLevel string
	// SyncTurns sends each completed turn to Honcho as session messages.
	// Off by default: the design keeps sync_turn a no-op for retrieval
	// providers.
	SyncTurns  bool
	HTTPClient *http.Client
}

// Provider is the honcho provider.
type Provider struct {
	c    *httpjson.Client
	opts Options

	mu       sync.Mutex
	ready    bool            // workspace and peers exist
	sessions map[string]bool // Honcho sessions known to exist
}

var (
	_ memory.Prefetcher = (*Provider)(nil)
	_ memory.TurnSyncer = (*Provider)(nil)
)

// New returns the provider.
func New(opts Options) *Provider {
	if opts.BaseURL == "" {
		opts.BaseURL = "https://api.honcho.dev"
	}
	if opts.WorkspaceID == "" {
		opts.WorkspaceID = "nagent"
	}
	if opts.PeerID == "" {
		opts.PeerID = "user"
	}
	if opts.AssistantPeerID == "" {
		opts.AssistantPeerID = "nagent"
	}
	if opts.ReasoningLevel == "" {
		opts.ReasoningLevel = "low"
	}
	return &Provider{
		c:        &httpjson.Client{BaseURL: opts.BaseURL, Auth: "Bearer " + opts.APIKey, HTTP: opts.HTTPClient},
		opts:     opts,
		sessions: make(map[string]bool),
	}
}

// Name implements memory.Provider.
func (p *Provider) Name() string { return Name }

func (p *Provider) ws() string { return "/v3/workspaces/" + url.PathEscape(p.opts.WorkspaceID) }

// Chat asks the dialectic endpoint what Honcho knows about the user that
// bears on query.
func (p *Provider) Chat(ctx context.Context, query string) (string, error) {
	var out struct {
		Content *string `json:"content"`
	}
	body := map[string]any{"query": query, "reasoning_level": p.opts.ReasoningLevel, "stream": false}
	if err := p.c.Do(ctx, http.MethodPost, p.ws()+"/peers/"+url.PathEscape(p.opts.PeerID)+"/chat", body, &out); err != nil {
		return "", fmt.Errorf("honcho chat: %w", err)
	}
	if out.Content == nil {
		return "", nil
	}
	return strings.TrimSpace(*out.Content), nil
}

// Prefetch implements memory.Prefetcher.
func (p *Provider) Prefetch(ctx context.Context, q memory.PrefetchQuery) (string, error) {
	return p.Chat(ctx, q.Query)
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// SyncTurn implements memory.TurnSyncer: with SyncTurns on, the turn's user
// input and answer become messages of the Honcho session of the same id.
func (p *Provider) SyncTurn(ctx context.Context, t memory.SyncTurn) error {
	if !p.opts.SyncTurns || strings.TrimSpace(t.User) == "" {
		return nil
	}
	sid := unsafeID.ReplaceAllString(t.SessionID, "-")
	if len(sid) > 100 {
		sid = sid[:100]
	}
	if err := p.ensure(ctx, sid); err != nil {
		return err
	}
	msgs := []map[string]any{{"content": t.User, "peer_id": p.opts.PeerID}}
	if t.Assistant != "" {
		msgs = append(msgs, map[string]any{"content": t.Assistant, "peer_id": p.opts.AssistantPeerID})
	}
	if err := p.c.Do(ctx, http.MethodPost, p.ws()+"/sessions/"+url.PathEscape(sid)+"/messages",
		map[string]any{"messages": msgs}, nil); err != nil {
		return fmt.Errorf("honcho messages: %w", err)
	}
	return nil
}

// ensure gets or creates the workspace, the two peers and the session.
func (p *Provider) ensure(ctx context.Context, sid string) error {
	p.mu.Lock()
	ready, known := p.ready, p.sessions[sid]
	p.mu.Unlock()
	if !ready {
		if err := p.c.Do(ctx, http.MethodPost, "/v3/workspaces", map[string]any{"id": p.opts.WorkspaceID}, nil); err != nil {
			return fmt.Errorf("honcho workspace: %w", err)
		}
		for _, peer := range []string{p.opts.PeerID, p.opts.AssistantPeerID} {
			if err := p.c.Do(ctx, http.MethodPost, p.ws()+"/peers", map[string]any{"id": peer}, nil); err != nil {
				return fmt.Errorf("honcho peer: %w", err)
			}
		}
		p.mu.Lock()
		p.ready = true
		p.mu.Unlock()
	}
	if !known {
		body := map[string]any{"id": sid, "peers": map[string]any{p.opts.PeerID: map[string]any{}, p.opts.AssistantPeerID: map[string]any{}}}
		if err := p.c.Do(ctx, http.MethodPost, p.ws()+"/sessions", body, nil); err != nil {
			return fmt.Errorf("honcho session: %w", err)
		}
		p.mu.Lock()
		p.sessions[sid] = true
		p.mu.Unlock()
	}
	return nil
}
