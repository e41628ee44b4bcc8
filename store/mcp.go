package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

// MCP transports.
const (
	MCPStdio          = "stdio"
	MCPSSE            = "sse"
	MCPStreamableHTTP = "streamable_http"
)

// MCPSite is one registered MCP server: how to reach it and how long to
// wait for it. Env and Headers may hold secrets; print only their keys.
type MCPSite struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Transport is stdio, sse or streamable_http.
	Transport string `json:"transport"`
	// Command, Args and Env start a stdio server.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"-"`
	// URL and Headers reach an sse or streamable_http server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"-"`
	Enabled bool              `json:"enabled"`
	// ConnectTimeout bounds initialize plus tools/list; CallTimeout bounds
	// one tools/call. Zero means the default.
	ConnectTimeout time.Duration `json:"-"`
	CallTimeout    time.Duration `json:"-"`
	// Source is "store" for sites added with `nagent mcp add`, "config" for
	// sites from config.yaml. It is not stored.
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PutMCPSite inserts s, or replaces the stored site with its ID.
func (db *DB) PutMCPSite(ctx context.Context, s MCPSite) error {
	args, _ := json.Marshal(nonNilStrings(s.Args))
	env, _ := json.Marshal(nonNilMap(s.Env))
	headers, _ := json.Marshal(nonNilMap(s.Headers))
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO mcp_sites
			(id, name, transport, command, args, env, url, headers, enabled, connect_timeout_ms, call_timeout_ms, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name, transport = excluded.transport,
				command = excluded.command, args = excluded.args, env = excluded.env, url = excluded.url,
				headers = excluded.headers, enabled = excluded.enabled,
				connect_timeout_ms = excluded.connect_timeout_ms, call_timeout_ms = excluded.call_timeout_ms,
				updated_at = excluded.updated_at`,
			s.ID, s.Name, s.Transport, s.Command, string(args), string(env), s.URL, string(headers), s.Enabled,
			s.ConnectTimeout.Milliseconds(), s.CallTimeout.Milliseconds(), tx.now, tx.now)
		if err != nil {
			if strings.Contains(err.Error(), "UNIQUE constraint failed: mcp_sites.name") {
				return errs.Errorf(errs.ECONFLICT, "an MCP site named %s already exists", s.Name)
			}
			return fmt.Errorf("store.PutMCPSite: %s: %w", s.Name, err)
		}
		return nil
	})
}

const mcpSiteColumns = `id, name, transport, command, args, env, url, headers, enabled, connect_timeout_ms, call_timeout_ms, created_at, updated_at`

// ListMCPSites returns the stored sites by name.
func (db *DB) ListMCPSites(ctx context.Context) ([]MCPSite, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+mcpSiteColumns+` FROM mcp_sites ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store.ListMCPSites: %w", err)
	}
	defer rows.Close()
	var out []MCPSite
	for rows.Next() {
		s, err := scanMCPSite(rows)
		if err != nil {
			return nil, fmt.Errorf("store.ListMCPSites: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// GetMCPSite returns the stored site whose id or name is key, or an
// ENOTFOUND error.
func (db *DB) GetMCPSite(ctx context.Context, key string) (MCPSite, error) {
	row := db.read.QueryRowContext(ctx, `SELECT `+mcpSiteColumns+` FROM mcp_sites WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1`, key, key, key)
	s, err := scanMCPSite(row)
	if errors.Is(err, sql.ErrNoRows) {
		return MCPSite{}, errs.Errorf(errs.ENOTFOUND, "no MCP site %s; list them with: nagent mcp list", key)
	}
	if err != nil {
		return MCPSite{}, fmt.Errorf("store.GetMCPSite: %w", err)
	}
	return s, nil
}

// DeleteMCPSite removes the stored site whose id or name is key, or returns
// an ENOTFOUND error.
func (db *DB) DeleteMCPSite(ctx context.Context, key string) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `DELETE FROM mcp_sites WHERE id = ? OR name = ?`, key, key)
		if err != nil {
			return fmt.Errorf("store.DeleteMCPSite: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.Errorf(errs.ENOTFOUND, "no MCP site %s; list them with: nagent mcp list", key)
		}
		return nil
	})
}

func scanMCPSite(row interface{ Scan(...any) error }) (MCPSite, error) {
	var s MCPSite
	var args, env, headers string
	var connectMS, callMS int64
	if err := row.Scan(&s.ID, &s.Name, &s.Transport, &s.Command, &args, &env, &s.URL, &headers, &s.Enabled,
		&connectMS, &callMS, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return s, err
	}
	for _, f := range []struct {
		raw string
		v   any
	}{{args, &s.Args}, {env, &s.Env}, {headers, &s.Headers}} {
		if err := json.Unmarshal([]byte(f.raw), f.v); err != nil {
			return s, fmt.Errorf("site %s: %w", s.Name, err)
		}
	}
	s.ConnectTimeout = time.Duration(connectMS) * time.Millisecond
	s.CallTimeout = time.Duration(callMS) * time.Millisecond
	s.Source = "store"
	return s, nil
}

func nonNilStrings(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
