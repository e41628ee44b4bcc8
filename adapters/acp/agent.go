// Package acp is the Agent Client Protocol entry adapter: `nagent acp`
// speaks ACP v1 (JSON-RPC 2.0, one JSON message per line over stdio) to an
// editor such as Zed, and runs each prompt through GatewayService.
//
// An ACP session id is the N-Agent session id, and the session's source is
// acp, so the sessions an editor starts are the ones the dashboard and
// `nagent session list` show. Loop events become session/update
// notifications; a policy confirm becomes session/request_permission. The
// runtime has no plan step, so no plan update is ever sent.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/store"
)

// Gateway runs one turn of a platform conversation; *gateway.Service
// implements it.
type Gateway interface {
	Handle(ctx context.Context, msg gateway.Message, emit agent.EmitFunc) (*agent.Result, error)
}

// History reads stored sessions, for session/load and session/list;
// *store.DB implements it.
type History interface {
	GetSession(ctx context.Context, id string) (*store.Session, error)
	ListSessions(ctx context.Context, f store.SessionFilter) ([]*store.Session, error)
	ListMessages(ctx context.Context, sessionID string) ([]*store.Message, error)
	ListToolCalls(ctx context.Context, sessionID string) ([]*store.ToolCall, error)
}

// MCP connects the editor's MCP servers; *mcp.Service implements it.
type MCP interface {
	Attach(ctx context.Context, site mcp.Site) (mcp.SiteStatus, error)
	Detach(ctx context.Context, name string) error
}

// Options wire an Agent.
type Options struct {
	Gateway Gateway
	History History
	// MCP may be nil; the editor's MCP servers are then refused.
	MCP     MCP
	Log     *slog.Logger
	Version string
}

// Agent serves one editor connection.
type Agent struct {
	opts Options
	conn *Conn
	pool *sitePool

	mu       sync.Mutex
	client   ClientCapabilities
	sessions map[string]*session
}

// New returns an agent; Serve runs it.
func New(opts Options) *Agent {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "0.1"
	}
	a := &Agent{opts: opts, sessions: make(map[string]*session)}
	a.pool = &sitePool{mcp: opts.MCP, log: opts.Log, refs: make(map[string]*pooledSite)}
	return a
}

// Serve speaks ACP over in and out until in ends or ctx does, then
// releases every session's MCP servers.
func (a *Agent) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	a.conn = NewConn(out, a, a.opts.Log)
	err := a.conn.Serve(ctx, in)
	a.mu.Lock()
	sessions := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.sessions = map[string]*session{}
	a.mu.Unlock()
	for _, s := range sessions {
		a.pool.release(context.WithoutCancel(ctx), s.sites)
	}
	return err
}

// ClientCapabilities returns what the editor said it can do.
func (a *Agent) ClientCapabilities() ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client
}

// session is one ACP session of this connection.
type session struct {
	id, cwd string
	sites   []string // attached MCP sites, released with the session

	mu      sync.Mutex
	running map[*int]context.CancelFunc // the prompts running, normally one
	allowed map[string]bool             // tools approved with allow_always
}

// start registers a running prompt; the returned func unregisters it.
func (s *session) start(cancel context.CancelFunc) (done func()) {
	key := new(int)
	s.mu.Lock()
	if s.running == nil {
		s.running = make(map[*int]context.CancelFunc)
	}
	s.running[key] = cancel
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
	}
}

// cancelRunning cancels every running prompt of the session.
func (s *session) cancelRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.running {
		cancel()
	}
}

// HandleRequest implements Handler.
func (a *Agent) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "initialize":
		var p initializeParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return a.initialize(p), nil
	case "authenticate":
		return struct{}{}, nil
	case "session/new":
		var p newSessionParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return a.newSession(ctx, p)
	case "session/load":
		var p loadSessionParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return a.loadSession(ctx, p)
	case "session/prompt":
		var p promptParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return a.prompt(ctx, p)
	case "session/close":
		var p sessionIDParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return struct{}{}, a.closeSession(ctx, p.SessionID)
	case "session/list":
		var p listSessionsParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return a.listSessions(ctx, p)
	}
	return nil, &Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q is not supported by N-Agent", method)}
}

// HandleNotification implements Handler.
func (a *Agent) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	switch method {
	case "session/cancel":
		var p sessionIDParams
		if err := json.Unmarshal(params, &p); err != nil {
			a.opts.Log.Warn("acp: session/cancel with bad params", "err", err)
			return
		}
		if s := a.session(p.SessionID); s != nil {
			s.cancelRunning()
		}
	case "$/cancel_request":
		// Requests here are either short or prompts, which session/cancel
		// stops; nothing else is worth interrupting.
	default:
		a.opts.Log.Debug("acp: notification ignored", "method", method)
	}
}

func decode(params json.RawMessage, v any) error {
	if len(params) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	return nil
}

func (a *Agent) initialize(p initializeParams) initializeResult {
	a.mu.Lock()
	a.client = p.ClientCapabilities
	a.mu.Unlock()
	client := "unknown"
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	a.opts.Log.Info("acp: initialize", "client", client, "protocol_version", p.ProtocolVersion,
		"fs_read", p.ClientCapabilities.FS.ReadTextFile, "fs_write", p.ClientCapabilities.FS.WriteTextFile,
		"terminal", p.ClientCapabilities.Terminal)
	return initializeResult{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: agentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  promptCapabilities{EmbeddedContext: true},
			MCPCapabilities:     mcpCapabilities{HTTP: true, SSE: true},
			SessionCapabilities: sessionCapabilities{Close: &struct{}{}, List: &struct{}{}},
		},
		AuthMethods: []any{},
		AgentInfo:   implementation{Name: "nagent", Title: "N-Agent", Version: a.opts.Version},
	}
}

func (a *Agent) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *Agent) newSession(ctx context.Context, p newSessionParams) (newSessionResult, error) {
	s := &session{id: chat.NewSessionID(), cwd: p.Cwd, allowed: map[string]bool{}}
	sites, err := a.pool.attach(ctx, p.MCPServers)
	if err != nil {
		return newSessionResult{}, err
	}
	s.sites = sites
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.opts.Log.Info("acp: session started", "session_id", s.id, "cwd", s.cwd, "mcp_sites", sites)
	return newSessionResult{SessionID: s.id}, nil
}

func (a *Agent) closeSession(ctx context.Context, id string) error {
	a.mu.Lock()
	s := a.sessions[id]
	delete(a.sessions, id)
	a.mu.Unlock()
	if s == nil {
		return &Error{Code: CodeNotFound, Message: fmt.Sprintf("session %s is not open", id)}
	}
	s.cancelRunning()
	a.pool.release(ctx, s.sites)
	return nil
}

func (a *Agent) listSessions(ctx context.Context, p listSessionsParams) (listSessionsResult, error) {
	list, err := a.opts.History.ListSessions(ctx, store.SessionFilter{Source: gateway.PlatformACP, Limit: 200})
	if err != nil {
		return listSessionsResult{}, err
	}
	out := listSessionsResult{Sessions: []sessionInfo{}}
	for _, s := range list {
		cwd := p.Cwd
		if open := a.session(s.ID); open != nil {
			if p.Cwd != "" && open.cwd != p.Cwd {
				continue
			}
			cwd = open.cwd
		}
		if cwd == "" {
			cwd = "/"
		}
		out.Sessions = append(out.Sessions, sessionInfo{SessionID: s.ID, Cwd: cwd, Title: s.Title, UpdatedAt: s.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")})
	}
	return out, nil
}

// prompt runs one turn and answers its stop reason.
func (a *Agent) prompt(ctx context.Context, p promptParams) (promptResult, error) {
	s := a.session(p.SessionID)
	if s == nil {
		// A session from an earlier process that the editor did not load:
		// continue it, as a stored session.
		if _, err := a.opts.History.GetSession(ctx, p.SessionID); err != nil {
			return promptResult{}, notFound(p.SessionID, err)
		}
		s = a.adopt(p.SessionID, "", nil)
	}
	text := promptText(p.Prompt)
	if strings.TrimSpace(text) == "" {
		return promptResult{}, &Error{Code: CodeInvalidParams, Message: "the prompt has no text or resource content"}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.start(cancel)()

	r := &renderer{conn: a.conn, sessionID: s.id, log: a.opts.Log}
	res, err := a.opts.Gateway.Handle(ctx, gateway.Message{
		Conversation:    gateway.Conversation{Platform: gateway.PlatformACP, ChatID: s.id},
		SessionID:       s.id,
		Text:            text,
		Confirmer:       &confirmer{a: a, s: s},
		TrustedMetadata: map[string]any{"acp_cwd": s.cwd},
	}, r.emit)

	// A cancel that arrives as the turn ends still answers cancelled, as
	// the protocol asks.
	if ctx.Err() != nil || (res != nil && res.Reason == agent.ReasonCancelled) {
		return promptResult{StopReason: StopCancelled}, nil
	}
	if err != nil {
		var e *errs.Error
		if errors.As(err, &e) && e.Code == errs.EINVALID {
			return promptResult{}, &Error{Code: CodeInvalidParams, Message: errs.MessageOrError(err)}
		}
		return promptResult{}, &Error{Code: CodeInternalError, Message: errs.MessageOrError(err)}
	}
	r.finish(res)
	switch {
	case res.Reason == agent.ReasonIterationLimit:
		return promptResult{StopReason: StopMaxTurnRequests}, nil
	case res.FinishReason == "length":
		return promptResult{StopReason: StopMaxTokens}, nil
	}
	return promptResult{StopReason: StopEndTurn}, nil
}

// adopt registers a stored session with this connection.
func (a *Agent) adopt(id, cwd string, sites []string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[id]; s != nil {
		return s
	}
	s := &session{id: id, cwd: cwd, sites: sites, allowed: map[string]bool{}}
	a.sessions[id] = s
	return s
}

func notFound(id string, err error) error {
	if errs.Code(err) == errs.ENOTFOUND {
		return &Error{Code: CodeNotFound, Message: fmt.Sprintf("session %s not found; start a new one with session/new", id)}
	}
	return err
}

// promptText turns the prompt's content blocks into the user message:
// text as is, an embedded resource as its text fenced under its URI, and a
// resource link as a mention.
func promptText(blocks []contentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource":
			if b.Resource == nil {
				continue
			}
			if b.Resource.Text != "" || b.Resource.Blob == "" {
				parts = append(parts, fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", b.Resource.URI, b.Resource.Text))
			} else {
				parts = append(parts, fmt.Sprintf("[binary resource %s (%s) not included]", b.Resource.URI, b.Resource.MimeType))
			}
		case "resource_link":
			name := b.Title
			if name == "" {
				name = b.Name
			}
			parts = append(parts, fmt.Sprintf("[resource: %s <%s>]", name, b.URI))
		default:
			parts = append(parts, fmt.Sprintf("[%s content omitted: N-Agent accepts text and resources]", b.Type))
		}
	}
	return strings.Join(parts, "\n\n")
}
