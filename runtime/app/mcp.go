package app

import (
	"context"
	"fmt"
	"time"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// mcpReloadInterval is how often a live server re-reads the MCP sites.
const mcpReloadInterval = 2 * time.Second

// NewMCPService builds the MCP service for cfg: the sites of config.yaml and
// those stored with `nagent mcp add`, publishing into slot (may be nil). It
// does not connect; call Start.
func NewMCPService(cfg *config.Config, db *store.DB, slot mcp.Slot, opts Options) (*mcp.Service, error) {
	sites, err := mcp.ConfigSites(cfg.MCP)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	var reg mcp.Registry
	if db != nil {
		reg = db
	}
	var reload time.Duration
	if opts.WatchPlugins { // a live server: `nagent mcp add` and `remove` reach it
		reload = mcpReloadInterval
	}
	return mcp.NewService(mcp.Options{
		Registry: reg, Sites: sites, Slot: slot, HealthInterval: cfg.MCP.HealthInterval.Std(), ReloadInterval: reload, Log: opts.Log,
	}), nil
}

// newMCP connects the enabled MCP sites and keeps their tools in ts's mcp
// slot, each routed to the MCP executor. A site that does not answer is
// reported unhealthy and retried; it never stops the runtime.
func newMCP(ctx context.Context, cfg *config.Config, db *store.DB, ts *tools.ToolService, opts Options) (*mcp.Service, error) {
	svc, err := NewMCPService(cfg, db, ts, opts)
	if err != nil {
		return nil, err
	}
	if err := svc.Start(ctx); err != nil {
		return nil, fmt.Errorf("app: mcp: %w", err)
	}
	return svc, nil
}
