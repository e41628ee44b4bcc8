// Package mcp owns the MCP domain: the registry of MCP sites (servers), the
// connection to each through mark3labs/mcp-go, the sync of their tools into
// the mcp slot of the ToolService, and the calls to those tools.
//
// # Tool names
//
// A remote tool T of site S is exposed as mcp_<S>_<T>. Site names match
// ^[a-z0-9][a-z0-9-]{0,23}$ and so never contain "_": the prefix mcp_<S>_
// is unambiguous, and two sites can never produce the same name. Characters
// of T outside [a-zA-Z0-9_-] become "_"; a name longer than 64 characters is
// cut and ends in 8 hex digits of the SHA-256 of T; a name that is still
// taken within the site gets _2, _3, ... The remote name is kept for calls.
//
// # Risk
//
// MCP annotations are hints from the server. readOnlyHint=true maps to low,
// destructiveHint=false (without readOnlyHint) to medium, and anything
// else, including no annotations (the spec's default is destructive), to
// high.
//
// # Health
//
// Each enabled site has a supervisor: it connects (initialize with protocol
// 2025-11-25, then tools/list), publishes the tools, pings every health
// interval and re-lists on notifications/tools/list_changed. When a ping or
// a call fails at the transport, the site is marked unhealthy, its tools leave
// the slot, and the supervisor reconnects with exponential backoff. A call
// to a down site is an error result, never a failed turn.
package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// Site is one MCP server: how to reach it and how long to wait for it.
type Site = store.MCPSite

// Transports.
const (
	TransportStdio          = store.MCPStdio
	TransportSSE            = store.MCPSSE
	TransportStreamableHTTP = store.MCPStreamableHTTP
)

// Defaults for a site's timeouts.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 60 * time.Second
)

var siteNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// ValidateSite checks a site before it is stored or connected, with an
// EINVALID error naming the field.
func ValidateSite(s Site) error {
	if !siteNamePattern.MatchString(s.Name) {
		return errs.Errorf(errs.EINVALID, "MCP site name %q must match %s (lower-case letters, digits and -; no _)", s.Name, siteNamePattern)
	}
	switch s.Transport {
	case TransportStdio:
		if s.Command == "" {
			return errs.Errorf(errs.EINVALID, "MCP site %s: transport stdio needs a command", s.Name)
		}
	case TransportSSE, TransportStreamableHTTP:
		if s.URL == "" {
			return errs.Errorf(errs.EINVALID, "MCP site %s: transport %s needs a url", s.Name, s.Transport)
		}
	default:
		return errs.Errorf(errs.EINVALID, "MCP site %s: transport is %q; use stdio, sse or streamable_http", s.Name, s.Transport)
	}
	if s.ConnectTimeout < 0 || s.CallTimeout < 0 {
		return errs.Errorf(errs.EINVALID, "MCP site %s: timeouts must not be negative", s.Name)
	}
	return nil
}

// NewSiteID returns a fresh site id.
func NewSiteID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "mcps_" + hex.EncodeToString(b)
}

// ConfigSites returns the sites of config.yaml, sorted by name.
func ConfigSites(cfg config.MCP) ([]Site, error) {
	var out []Site
	for name, c := range cfg.Sites {
		s := Site{
			ID: "config:" + name, Name: name, Transport: c.Transport, Command: c.Command, Args: c.Args, Env: c.Env,
			URL: c.URL, Headers: c.Headers, Enabled: c.Enabled == nil || *c.Enabled,
			ConnectTimeout: c.ConnectTimeout.Std(), CallTimeout: c.CallTimeout.Std(), Source: "config",
		}
		if err := ValidateSite(s); err != nil {
			return nil, fmt.Errorf("config: mcp.sites.%s: %w", name, err)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Site) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func connectTimeout(s Site) time.Duration {
	if s.ConnectTimeout > 0 {
		return s.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func callTimeout(s Site) time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return DefaultCallTimeout
}
