package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

// LiveSandbox is a sandbox some nagent process currently holds (table
// sandboxes).
type LiveSandbox struct {
	SessionID  string    `json:"session_id"`
	Backend    string    `json:"backend"`
	State      string    `json:"state"`
	Owner      string    `json:"owner"` // host:pid of the holding process
	Executions int       `json:"executions"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	// ReleaseRequested is set by another process asking the owner to release.
	ReleaseRequested bool   `json:"release_requested"`
	ReleaseForce     bool   `json:"release_force"`
	ReleaseReason    string `json:"release_reason,omitempty"`
}

// SandboxExecution is one row of sandbox_history (the design's
// SandboxExecutionHistoryEntry).
type SandboxExecution struct {
	ID           int64           `json:"id"`
	SessionID    string          `json:"session_id"`
	Seq          int             `json:"seq"`
	Backend      string          `json:"backend"`
	CodeSHA256   string          `json:"code_sha256"`
	Status       string          `json:"status"`
	ExitReason   string          `json:"exit_reason"`
	ExitCode     int             `json:"exit_code"`
	Result       string          `json:"result"`
	AllowedTools []string        `json:"allowed_tools"`
	CalledTools  json.RawMessage `json:"called_tools"`
	DurationMS   int64           `json:"duration_ms"`
	CreatedAt    time.Time       `json:"created_at"`
}

// ReleasedSandbox is one row of released_sandboxes (the design's
// ReleasedSandboxInfo).
type ReleasedSandbox struct {
	ID         int64     `json:"id"`
	SessionID  string    `json:"session_id"`
	Backend    string    `json:"backend"`
	Reason     string    `json:"reason"`
	Detail     string    `json:"detail,omitempty"`
	Forced     bool      `json:"forced"`
	Executions int       `json:"executions"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	ReleasedAt time.Time `json:"released_at"`
}

// PutLiveSandbox inserts the live row of a session's sandbox, or updates
// it when s.Owner already holds it (keeping a pending release request).
// ECONFLICT when another owner holds the session's row.
func (db *DB) PutLiveSandbox(ctx context.Context, s LiveSandbox) error {
	res, err := db.write.ExecContext(ctx, `INSERT INTO sandboxes
		(session_id, backend, state, owner, executions, created_at, last_used_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET backend = excluded.backend, state = excluded.state,
			executions = excluded.executions, last_used_at = excluded.last_used_at
		WHERE sandboxes.owner = excluded.owner`,
		s.SessionID, s.Backend, s.State, s.Owner, s.Executions, s.CreatedAt.UTC(), s.LastUsedAt.UTC())
	if err != nil {
		return fmt.Errorf("store.PutLiveSandbox: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.Errorf(errs.ECONFLICT, "the sandbox of session %q is held by another process", s.SessionID)
	}
	return nil
}

// DeleteLiveSandbox removes the live row of a session's sandbox, if owner
// holds it ("" matches any owner).
func (db *DB) DeleteLiveSandbox(ctx context.Context, sessionID, owner string) error {
	_, err := db.write.ExecContext(ctx, `DELETE FROM sandboxes WHERE session_id = ? AND (? = '' OR owner = ?)`, sessionID, owner, owner)
	if err != nil {
		return fmt.Errorf("store.DeleteLiveSandbox: %w", err)
	}
	return nil
}

// RequestSandboxRelease asks the owner of a session's sandbox to release
// it. ENOTFOUND when no process holds one.
func (db *DB) RequestSandboxRelease(ctx context.Context, sessionID string, force bool, reason string) error {
	res, err := db.write.ExecContext(ctx, `UPDATE sandboxes SET release_requested = 1,
		release_force = MAX(release_force, ?), release_reason = ? WHERE session_id = ?`, force, reason, sessionID)
	if err != nil {
		return fmt.Errorf("store.RequestSandboxRelease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.Errorf(errs.ENOTFOUND, "no live sandbox for session %q", sessionID)
	}
	return nil
}

const liveSandboxColumns = `session_id, backend, state, owner, executions, created_at, last_used_at,
	release_requested, release_force, release_reason`

func scanLiveSandbox(row interface{ Scan(...any) error }) (*LiveSandbox, error) {
	var s LiveSandbox
	err := row.Scan(&s.SessionID, &s.Backend, &s.State, &s.Owner, &s.Executions, &s.CreatedAt, &s.LastUsedAt,
		&s.ReleaseRequested, &s.ReleaseForce, &s.ReleaseReason)
	return &s, err
}

// GetLiveSandbox returns the live row of a session's sandbox, or ENOTFOUND.
func (db *DB) GetLiveSandbox(ctx context.Context, sessionID string) (*LiveSandbox, error) {
	s, err := scanLiveSandbox(db.read.QueryRowContext(ctx, `SELECT `+liveSandboxColumns+` FROM sandboxes WHERE session_id = ?`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.Errorf(errs.ENOTFOUND, "no live sandbox for session %q", sessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetLiveSandbox: %w", err)
	}
	return s, nil
}

// ListLiveSandboxes returns every live row, most recently used first.
func (db *DB) ListLiveSandboxes(ctx context.Context) ([]*LiveSandbox, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+liveSandboxColumns+` FROM sandboxes ORDER BY last_used_at DESC`)
	if err != nil {
		return nil, fmt.Errorf("store.ListLiveSandboxes: %w", err)
	}
	defer rows.Close()
	var out []*LiveSandbox
	for rows.Next() {
		s, err := scanLiveSandbox(rows)
		if err != nil {
			return nil, fmt.Errorf("store.ListLiveSandboxes: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// SaveSandboxExecution appends one history row. A zero CreatedAt becomes now.
func (db *DB) SaveSandboxExecution(ctx context.Context, e SandboxExecution) error {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = db.Now()
	}
	allowed := e.AllowedTools
	if allowed == nil {
		allowed = []string{}
	}
	aj, err := json.Marshal(allowed)
	if err != nil {
		return fmt.Errorf("store.SaveSandboxExecution: %w", err)
	}
	called := string(e.CalledTools)
	if called == "" || called == "null" {
		called = "[]"
	}
	_, err = db.write.ExecContext(ctx, `INSERT INTO sandbox_history
		(session_id, seq, backend, code_sha256, status, exit_reason, exit_code, result, allowed_tools, called_tools, duration_ms, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.SessionID, e.Seq, e.Backend, e.CodeSHA256, e.Status, e.ExitReason, e.ExitCode, e.Result, string(aj), called, e.DurationMS, e.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("store.SaveSandboxExecution: %w", err)
	}
	return nil
}

// ListSandboxExecutions returns a session's history, newest first ("" means
// every session; limit <= 0 means 50).
func (db *DB) ListSandboxExecutions(ctx context.Context, sessionID string, limit int) ([]*SandboxExecution, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := db.read.QueryContext(ctx, `SELECT id, session_id, seq, backend, code_sha256, status, exit_reason, exit_code,
		result, allowed_tools, called_tools, duration_ms, created_at FROM sandbox_history
		WHERE ? = '' OR session_id = ? ORDER BY id DESC LIMIT ?`, sessionID, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("store.ListSandboxExecutions: %w", err)
	}
	defer rows.Close()
	var out []*SandboxExecution
	for rows.Next() {
		var e SandboxExecution
		var allowed, called string
		if err := rows.Scan(&e.ID, &e.SessionID, &e.Seq, &e.Backend, &e.CodeSHA256, &e.Status, &e.ExitReason, &e.ExitCode,
			&e.Result, &allowed, &called, &e.DurationMS, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("store.ListSandboxExecutions: %w", err)
		}
		if err := json.Unmarshal([]byte(allowed), &e.AllowedTools); err != nil {
			return nil, fmt.Errorf("store.ListSandboxExecutions: allowed_tools of %d: %w", e.ID, err)
		}
		e.CalledTools = json.RawMessage(called)
		out = append(out, &e)
	}
	return out, rows.Err()
}

// SaveReleasedSandbox appends one release row. A zero ReleasedAt becomes now.
func (db *DB) SaveReleasedSandbox(ctx context.Context, r ReleasedSandbox) error {
	if r.ReleasedAt.IsZero() {
		r.ReleasedAt = db.Now()
	}
	_, err := db.write.ExecContext(ctx, `INSERT INTO released_sandboxes
		(session_id, backend, reason, detail, forced, executions, created_at, last_used_at, released_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.SessionID, r.Backend, r.Reason, r.Detail, r.Forced, r.Executions, r.CreatedAt.UTC(), r.LastUsedAt.UTC(), r.ReleasedAt.UTC())
	if err != nil {
		return fmt.Errorf("store.SaveReleasedSandbox: %w", err)
	}
	return nil
}

// ListReleasedSandboxes returns release rows, newest first ("" means every
// session; limit <= 0 means 50).
func (db *DB) ListReleasedSandboxes(ctx context.Context, sessionID string, limit int) ([]*ReleasedSandbox, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := db.read.QueryContext(ctx, `SELECT id, session_id, backend, reason, detail, forced, executions,
		created_at, last_used_at, released_at FROM released_sandboxes
		WHERE ? = '' OR session_id = ? ORDER BY id DESC LIMIT ?`, sessionID, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("store.ListReleasedSandboxes: %w", err)
	}
	defer rows.Close()
	var out []*ReleasedSandbox
	for rows.Next() {
		var r ReleasedSandbox
		if err := rows.Scan(&r.ID, &r.SessionID, &r.Backend, &r.Reason, &r.Detail, &r.Forced, &r.Executions,
			&r.CreatedAt, &r.LastUsedAt, &r.ReleasedAt); err != nil {
			return nil, fmt.Errorf("store.ListReleasedSandboxes: %w", err)
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}

// SessionExists reports whether a session row exists.
func (db *DB) SessionExists(ctx context.Context, id string) (bool, error) {
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE id = ?`, id).Scan(&n); err != nil {
		return false, fmt.Errorf("store.SessionExists: %w", err)
	}
	return n > 0, nil
}
