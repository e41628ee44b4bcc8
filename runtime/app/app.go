// Package app wires the whole runtime graph from a configuration. Every entry
// point (serve, run, chat, and later the gateways) builds its App here.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/core"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/anthropic"
	"github.com/nagent/nagent/runtime/llm/openai"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/skills"
	"github.com/nagent/nagent/store"
	"github.com/nagent/nagent/wasm"
)

// App is the wired runtime.
type App struct {
	Config   *config.Config
	DB       *store.DB
	Memory   *memory.MemoryStore
	Policy   *policy.Engine
	External *memory.ExternalMemoryManager
	Tools    *tools.ToolService
	Provider llm.Provider
	Runner   *agent.AgentGraphRunner
	Chat     *chat.ChatCompletionService
	// Gateway is the path from chat channels (Feishu, terminal, ACP) to Chat.
	Gateway *gateway.Service
	Log     *slog.Logger
	// Plugins runs the WASM plugin tools of $NAGENT_HOME/plugins.
	Plugins *wasm.Host
	plugins *pluginHost
	// MCP keeps the MCP sites connected and their tools in the mcp slot.
	MCP *mcp.Service
	// Skills serves skills_list and skill_view.
	Skills *skills.Service
	// Knowledge searches the knowledge bases for search_knowledge.
	Knowledge *knowledge.KnowledgeService
	sources   *sourceRefresh
	sched     lazyScheduler // see Scheduler (scheduler.go)
	// Sandbox runs execute_code (nil when no sandbox backend works here).
	Sandbox *sandbox.Manager
	// ModelErr is set when Options.AllowNoModel let the runtime start
	// without a model; it names the missing setting.
	ModelErr error
}

// Options adjust wiring, mostly for tests.
type Options struct {
	Log *slog.Logger
	// Now is the clock for tools and records; nil means time.Now.
	Now func() time.Time
	// Provider replaces the configured provider.
	Provider llm.Provider
	// HTTPClient is used by the provider adapters.
	HTTPClient *http.Client
	// AllowNoModel starts the runtime even when no model is configured
	// (for a server that should still answer health checks); turns then
	// fail with ModelErr.
	AllowNoModel bool
	// MemoryProviders are extra external-memory providers, routed by name
	// like the configured ones (tests, embedders).
	MemoryProviders []memory.Provider
	// MemoryPolicy decides external-memory writes; nil means
	// memory.DefaultWritePolicy.
	MemoryPolicy memory.WritePolicy
	// WatchPlugins reloads plugins when $NAGENT_HOME/plugins changes, so
	// that `nagent plugin install` and `remove` reach a running server;
	// it also re-reads skills and knowledge bases every few seconds.
	WatchPlugins bool
}

// OpenStore opens session memory only, for commands that never call a model.
func OpenStore(ctx context.Context, cfg *config.Config) (*store.DB, error) {
	return store.Open(ctx, cfg.DBPath())
}

// New builds the runtime from cfg. It fails with a message naming the
// missing setting when the model is not configured.
func New(ctx context.Context, cfg *config.Config, opts Options) (*App, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	provider := opts.Provider
	var modelErr error
	if provider == nil {
		switch modelErr = cfg.RequireLLM(); {
		case modelErr == nil:
			client := opts.HTTPClient
			if client == nil {
				client = providerClient(cfg.Server.MaxConcurrentTurns)
			}
			provider = NewProvider(cfg.LLM, client)
		case opts.AllowNoModel:
			provider = missingModel{modelErr}
		default:
			return nil, modelErr
		}
	}
	db, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db.Now = opts.Now

	// A broken admin policy file does not stop the runtime: the engine
	// serves the embedded defaults and reports the error (LastError, /readyz).
	pol, err := policy.New(ctx, policy.Options{Dir: filepath.Join(cfg.Home, "policies"), Log: opts.Log, Audit: db})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("app: %w", err)
	}
	if err := pol.Start(); err != nil {
		opts.Log.Warn("policy hot reload is off", "err", err)
	}
	if opts.MemoryPolicy == nil {
		opts.MemoryPolicy = memoryWritePolicy{pol}
	}
	ts := tools.NewToolService(pol, tools.Options{
		MaxResultBytes: cfg.Agent.MaxToolResultBytes,
		DefaultTimeout: cfg.Agent.ToolTimeout.Std(),
		Now:            opts.Now,
	})
	if err := ts.Register(tools.CurrentTimeTool(opts.Now)); err != nil {
		pol.Close()
		db.Close()
		return nil, fmt.Errorf("app: %w", err)
	}

	ext, compressor, err := newExternalMemory(cfg, db, ts, provider, opts)
	if err != nil {
		pol.Close()
		db.Close()
		return nil, err
	}

	skillSvc, err := newSkills(ctx, cfg, ts, opts)
	if err != nil {
		pol.Close()
		db.Close()
		return nil, err
	}
	knowledgeSvc, err := newKnowledge(ctx, db, ts, opts)
	if err != nil {
		pol.Close()
		db.Close()
		return nil, err
	}

	plugins, err := newPlugins(ctx, cfg, db, ts, pol, opts)
	if err != nil {
		pol.Close()
		db.Close()
		return nil, err
	}

	mcpSvc, err := newMCP(ctx, cfg, db, ts, opts)
	if err != nil {
		plugins.close()
		pol.Close()
		db.Close()
		return nil, err
	}

	sandboxMgr, err := newSandbox(ctx, cfg, db, ts, opts)
	if err != nil {
		mcpSvc.Close()
		plugins.close()
		pol.Close()
		db.Close()
		return nil, err
	}

	mem := memory.NewMemoryStore(db, nil, nil, opts.Log)
	runner := &agent.AgentGraphRunner{
		Core:                &core.AgentCore{Provider: provider, Model: cfg.LLM.Model, Params: cfg.LLM.Params},
		Tools:               ts,
		Memory:              mem,
		External:            ext,
		Compressor:          compressor,
		MaxIterations:       cfg.Agent.MaxIterations,
		MaxQueuedPerSession: cfg.Server.MaxQueuedPerSession,
		TurnTimeout:         cfg.Agent.TurnTimeout.Std(),
		Log:                 opts.Log,
	}
	sources := startSourceRefresh(ctx, skillSvc, knowledgeSvc, ts, opts)
	chatSvc := &chat.ChatCompletionService{Runner: runner}
	return &App{
		Config: cfg, DB: db, Memory: mem, Policy: pol, External: ext, Tools: ts, Provider: provider,
		Runner: runner, Chat: chatSvc, Gateway: gateway.New(chatSvc, db, gateway.Options{Log: opts.Log}),
		Log: opts.Log, ModelErr: modelErr,
		Plugins: plugins.host, plugins: plugins, MCP: mcpSvc, Skills: skillSvc, Knowledge: knowledgeSvc, sources: sources,
		Sandbox: sandboxMgr,
	}, nil
}

// NewProvider builds the provider adapter that cfg selects.
func NewProvider(cfg config.LLM, client *http.Client) llm.Provider {
	retry := llm.RetryPolicy{MaxAttempts: cfg.MaxAttempts, BaseDelay: cfg.RetryBaseDelay.Std()}
	if cfg.Provider == "anthropic" {
		return anthropic.New(anthropic.Config{
			BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: client, Retry: retry, Timeout: cfg.Timeout.Std(),
		})
	}
	return openai.New(openai.Config{
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: client, Retry: retry, Timeout: cfg.Timeout.Std(),
	})
}

// Close waits for background work and closes the store.
func (a *App) Close() error {
	a.stopScheduler()
	a.Memory.Wait()
	a.sources.close()
	// Plugins stop after their running calls, which audit into the store.
	a.plugins.close()
	a.MCP.Close()
	if a.Sandbox != nil {
		a.Sandbox.Close() // kills running code; records the releases before the store closes
	}
	a.Policy.Close() // flushes the audit trail before the store closes
	return a.DB.Close()
}

// memoryWritePolicy lets the policy engine decide external-memory writes
// (package nagent.memory).
type memoryWritePolicy struct{ e *policy.Engine }

func (p memoryWritePolicy) DecideWrite(ctx context.Context, in memory.MemoryWriteInput) (bool, []string, error) {
	d, err := p.e.DecideMemoryWrite(ctx, policy.MemoryWrite{
		Operation: in.Operation, Provider: in.Provider, Target: in.Target, AgentContext: in.AgentContext,
		SessionID: in.SessionID, Source: in.Source, Trusted: in.Trusted, Time: in.Time,
	})
	return d.Allow, d.Reasons, err
}

// missingModel is the provider of a runtime started without a model.
type missingModel struct{ err error }

func (m missingModel) Chat(context.Context, *llm.Request, llm.DeltaFunc) (*llm.Response, error) {
	return nil, m.err
}

// providerClient is the HTTP client for model providers. It keeps an idle
// connection per concurrent turn, so turns reuse connections (and TLS
// sessions) instead of dialling anew; http.DefaultClient keeps only two.
func providerClient(maxTurns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(maxTurns, 16)
	t.MaxIdleConns = max(maxTurns, 16) * 2
	return &http.Client{Transport: t}
}
