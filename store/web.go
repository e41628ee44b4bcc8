package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// WebLogin is a dashboard login: the hash of its cookie and its CSRF token.
type WebLogin struct {
	TokenHash string
	CSRFToken string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SaveWebLogin stores a login and drops expired ones.
func (db *DB) SaveWebLogin(ctx context.Context, l WebLogin) error {
	return db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM web_logins WHERE expires_at < ?`, tx.now); err != nil {
			return fmt.Errorf("store.SaveWebLogin: %w", err)
		}
		if l.CreatedAt.IsZero() {
			l.CreatedAt = tx.now
		}
		_, err := tx.exec(ctx, `INSERT OR REPLACE INTO web_logins (token_hash, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			l.TokenHash, l.CSRFToken, l.CreatedAt.UTC(), l.ExpiresAt.UTC())
		if err != nil {
			return fmt.Errorf("store.SaveWebLogin: %w", err)
		}
		return nil
	})
}

// GetWebLogin returns the unexpired login with this token hash, or nil.
func (db *DB) GetWebLogin(ctx context.Context, tokenHash string) (*WebLogin, error) {
	l := WebLogin{TokenHash: tokenHash}
	err := db.read.QueryRowContext(ctx, `SELECT csrf_token, created_at, expires_at FROM web_logins WHERE token_hash = ? AND expires_at > ?`,
		tokenHash, db.Now().UTC()).Scan(&l.CSRFToken, &l.CreatedAt, &l.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetWebLogin: %w", err)
	}
	return &l, nil
}

// DeleteWebLogin removes a login (logout).
func (db *DB) DeleteWebLogin(ctx context.Context, tokenHash string) error {
	return db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM web_logins WHERE token_hash = ?`, tokenHash); err != nil {
			return fmt.Errorf("store.DeleteWebLogin: %w", err)
		}
		return nil
	})
}

// SessionQuery narrows SearchSessions.
type SessionQuery struct {
	Source string // "" means any
	// Status is the latest task status; "" means any, "none" means no
	// turn recorded one.
	Status string
	Text   string // a substring of the id or title
	Limit  int    // default 50
	Offset int
}

// SessionRow is a session with its latest task state.
type SessionRow struct {
	Session
	Status         string `json:"status"`
	IterationCount int    `json:"iteration_count"`
}

// SearchSessions returns sessions with their task state, most recently
// updated first.
func (db *DB) SearchSessions(ctx context.Context, f SessionQuery) ([]*SessionRow, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	var q strings.Builder
	q.WriteString(`SELECT s.id, s.title, s.source, s.external_memory_enabled, s.created_at, s.updated_at,
		COALESCE(t.status, ''), COALESCE(t.iteration_count, 0)
		FROM sessions s LEFT JOIN task_states t ON t.session_id = s.id WHERE 1 = 1`)
	var args []any
	if f.Source != "" {
		q.WriteString(` AND s.source = ?`)
		args = append(args, f.Source)
	}
	switch f.Status {
	case "":
	case "none":
		q.WriteString(` AND t.status IS NULL`)
	default:
		q.WriteString(` AND t.status = ?`)
		args = append(args, f.Status)
	}
	if f.Text != "" {
		like := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(f.Text) + "%"
		q.WriteString(` AND (s.id LIKE ? ESCAPE '\' OR s.title LIKE ? ESCAPE '\')`)
		args = append(args, like, like)
	}
	q.WriteString(` ORDER BY s.updated_at DESC, s.id LIMIT ? OFFSET ?`)
	args = append(args, f.Limit, f.Offset)
	rows, err := db.read.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store.SearchSessions: %w", err)
	}
	defer rows.Close()
	var out []*SessionRow
	for rows.Next() {
		var r SessionRow
		var ext sql.NullString
		if err := rows.Scan(&r.ID, &r.Title, &r.Source, &ext, &r.CreatedAt, &r.UpdatedAt, &r.Status, &r.IterationCount); err != nil {
			return nil, fmt.Errorf("store.SearchSessions: %w", err)
		}
		if ext.Valid {
			if err := json.Unmarshal([]byte(ext.String), &r.ExternalMemoryEnabled); err != nil {
				return nil, fmt.Errorf("store.SearchSessions: %w", err)
			}
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}
