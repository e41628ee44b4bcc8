package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// PluginState is the state a plugin had at its last load.
type PluginState struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Status is "ready", "unusable" (its check failed) or "error" (it did not load).
	Status    string    `json:"status"`
	Error     string    `json:"error,omitempty"`
	Tools     []string  `json:"tools"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PluginHostCall is one audited call a plugin made on the nagent host module.
type PluginHostCall struct {
	ID        int64     `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Plugin    string    `json:"plugin"`
	Tool      string    `json:"tool"`
	SessionID string    `json:"session_id"`
	Function  string    `json:"function"`
	Detail    string    `json:"detail"`
	// Outcome is "ok", "denied" or "error".
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	DurationUS int64  `json:"duration_us"`
}

// SavePluginStates replaces the recorded plugin states with states.
func (db *DB) SavePluginStates(ctx context.Context, states []PluginState) error {
	return db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.tx.ExecContext(ctx, `DELETE FROM plugins`); err != nil {
			return fmt.Errorf("store.SavePluginStates: %w", err)
		}
		for _, s := range states {
			names := s.Tools
			if names == nil {
				names = []string{}
			}
			tj, _ := json.Marshal(names)
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO plugins (name, version, digest, status, error, tools, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, s.Name, s.Version, s.Digest, s.Status, s.Error, string(tj), tx.now); err != nil {
				return fmt.Errorf("store.SavePluginStates: %s: %w", s.Name, err)
			}
		}
		return nil
	})
}

// ListPluginStates returns the recorded plugin states by name.
func (db *DB) ListPluginStates(ctx context.Context) ([]PluginState, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT name, version, digest, status, error, tools, updated_at FROM plugins ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store.ListPluginStates: %w", err)
	}
	defer rows.Close()
	var out []PluginState
	for rows.Next() {
		var s PluginState
		var tj string
		if err := rows.Scan(&s.Name, &s.Version, &s.Digest, &s.Status, &s.Error, &tj, &s.UpdatedAt); err != nil {
			return nil, fmt.Errorf("store.ListPluginStates: %w", err)
		}
		if err := json.Unmarshal([]byte(tj), &s.Tools); err != nil {
			return nil, fmt.Errorf("store.ListPluginStates: %s: %w", s.Name, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// PluginKVGet returns the value stored under key for plugin, and whether
// there is one.
func (db *DB) PluginKVGet(ctx context.Context, plugin, key string) ([]byte, bool, error) {
	var v []byte
	err := db.read.QueryRowContext(ctx, `SELECT value FROM plugin_kv WHERE plugin = ? AND key = ?`, plugin, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store.PluginKVGet: %w", err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// PluginKVSet stores value under key for plugin, replacing any earlier value.
func (db *DB) PluginKVSet(ctx context.Context, plugin, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			plugin, key, value, tx.now)
		if err != nil {
			return fmt.Errorf("store.PluginKVSet: %w", err)
		}
		return nil
	})
}

// PluginKVDelete removes key for plugin; a missing key is not an error.
func (db *DB) PluginKVDelete(ctx context.Context, plugin, key string) error {
	return db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.tx.ExecContext(ctx, `DELETE FROM plugin_kv WHERE plugin = ? AND key = ?`, plugin, key); err != nil {
			return fmt.Errorf("store.PluginKVDelete: %w", err)
		}
		return nil
	})
}

// SavePluginHostCalls appends audit records in one transaction. A zero
// CreatedAt becomes the transaction's time.
func (db *DB) SavePluginHostCalls(ctx context.Context, calls []PluginHostCall) error {
	if len(calls) == 0 {
		return nil
	}
	return db.Update(ctx, func(tx *Tx) error {
		for _, c := range calls {
			if c.CreatedAt.IsZero() {
				c.CreatedAt = tx.now
			}
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO plugin_host_calls
				(created_at, plugin, tool, session_id, function, detail, outcome, error, duration_us)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.CreatedAt.UTC(), c.Plugin, c.Tool, c.SessionID, c.Function, c.Detail, c.Outcome, c.Error, c.DurationUS); err != nil {
				return fmt.Errorf("store.SavePluginHostCalls: %w", err)
			}
		}
		return nil
	})
}

// ListPluginHostCalls returns a plugin's audited host calls, oldest first,
// at most limit (default 100) of the latest.
func (db *DB) ListPluginHostCalls(ctx context.Context, plugin string, limit int) ([]PluginHostCall, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.read.QueryContext(ctx, `SELECT id, created_at, plugin, tool, session_id, function, detail, outcome, error, duration_us
		FROM (SELECT * FROM plugin_host_calls WHERE plugin = ? ORDER BY id DESC LIMIT ?) ORDER BY id`, plugin, limit)
	if err != nil {
		return nil, fmt.Errorf("store.ListPluginHostCalls: %w", err)
	}
	defer rows.Close()
	var out []PluginHostCall
	for rows.Next() {
		var c PluginHostCall
		if err := rows.Scan(&c.ID, &c.CreatedAt, &c.Plugin, &c.Tool, &c.SessionID, &c.Function, &c.Detail, &c.Outcome, &c.Error, &c.DurationUS); err != nil {
			return nil, fmt.Errorf("store.ListPluginHostCalls: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
