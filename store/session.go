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

// Session is a ConversationSession row.
type Session struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Source string `json:"source"`
	// ExternalMemoryEnabled is nil until the first write locks the selection.
	ExternalMemoryEnabled []string  `json:"external_memory_enabled"`
	CreatedAt             time.Time `json:"created_at"`
	UpdatedAt             time.Time `json:"updated_at"`
}

// Message is a ConversationMessage row.
type Message struct {
	ID        int64  `json:"-"`
	SessionID string `json:"-"`
	Seq       int    `json:"seq"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	// ToolCalls is a JSON array in the OpenAI tool-call shape, or nil.
	ToolCalls        json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	// Status marks a message kept from a turn that did not complete ("cancelled", "error").
	Status    string    `json:"status,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ToolCall is the persisted record of one tool execution.
type ToolCall struct {
	SessionID  string    `json:"-"`
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Arguments  string    `json:"arguments"`
	Status     string    `json:"status"`
	Result     string    `json:"result"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	CreatedAt  time.Time `json:"created_at"`
}

// TaskState is the run state of a session's latest turn.
type TaskState struct {
	SessionID      string    `json:"-"`
	Status         string    `json:"status"`
	IterationCount int       `json:"iteration_count"`
	Error          string    `json:"error,omitempty"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Summary is the rolling summary of a session.
type Summary struct {
	SessionID string    `json:"-"`
	Content   string    `json:"content"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Hot write statements, prepared once at Open (see DB.prepare).
const (
	qCreateSession        = `INSERT OR IGNORE INTO sessions (id, title, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`
	qLockExternalMemory   = `UPDATE sessions SET external_memory_enabled = ? WHERE id = ? AND external_memory_enabled IS NULL`
	qSelectExternalMemory = `SELECT external_memory_enabled FROM sessions WHERE id = ?`
	qNextSeq              = `SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?`
	qInsertMessage        = `INSERT INTO messages
			(session_id, seq, role, content, tool_calls, tool_call_id, name, reasoning_content, status, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qInsertToolCall = `INSERT INTO tool_calls
		(session_id, id, name, arguments, status, result, error, duration_ms, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qSaveTaskState = `INSERT INTO task_states (session_id, status, iteration_count, error, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET status = excluded.status,
			iteration_count = excluded.iteration_count, error = excluded.error, updated_at = excluded.updated_at`
	qSaveSummary = `INSERT INTO summaries (session_id, content, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`
	qTouchSession = `UPDATE sessions SET updated_at = ? WHERE id = ?`
)

var hotQueries = []string{qCreateSession, qLockExternalMemory, qSelectExternalMemory, qNextSeq, qInsertMessage, qInsertToolCall, qSaveTaskState, qSaveSummary, qTouchSession}

// CreateSession inserts s unless a session with its id exists (INSERT OR
// IGNORE). It reports whether a row was created.
func (tx *Tx) CreateSession(ctx context.Context, s Session) (bool, error) {
	res, err := tx.exec(ctx,
		qCreateSession,
		s.ID, s.Title, s.Source, tx.now, tx.now)
	if err != nil {
		return false, fmt.Errorf("store.CreateSession: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// LockExternalMemory sets the session's external-memory selection if it is
// not yet set (the first write wins) and returns the selection in force.
func (tx *Tx) LockExternalMemory(ctx context.Context, sessionID string, providers []string) ([]string, error) {
	if providers == nil {
		providers = []string{}
	}
	b, _ := json.Marshal(providers)
	if _, err := tx.exec(ctx,
		qLockExternalMemory,
		string(b), sessionID); err != nil {
		return nil, fmt.Errorf("store.LockExternalMemory: %w", err)
	}
	var raw sql.NullString
	if err := tx.queryRow(ctx, qSelectExternalMemory, sessionID).Scan(&raw); err != nil {
		return nil, fmt.Errorf("store.LockExternalMemory: %w", err)
	}
	var got []string
	if err := json.Unmarshal([]byte(raw.String), &got); err != nil {
		return nil, fmt.Errorf("store.LockExternalMemory: %w", err)
	}
	return got, nil
}

// SetTitle sets the session title if it is still empty.
func (tx *Tx) SetTitle(ctx context.Context, sessionID, title string) error {
	_, err := tx.exec(ctx, `UPDATE sessions SET title = ? WHERE id = ? AND title = ''`, title, sessionID)
	if err != nil {
		return fmt.Errorf("store.SetTitle: %w", err)
	}
	return nil
}

// AppendMessages appends msgs to the session in order, assigning each the
// next sequence number. It fills in Seq and CreatedAt on the given values.
func (tx *Tx) AppendMessages(ctx context.Context, sessionID string, msgs ...*Message) error {
	if len(msgs) == 0 {
		return nil
	}
	var next int
	if err := tx.queryRow(ctx, qNextSeq, sessionID).Scan(&next); err != nil {
		return fmt.Errorf("store.AppendMessages: %w", err)
	}
	for _, m := range msgs {
		m.SessionID, m.Seq, m.CreatedAt = sessionID, next, tx.now
		var toolCalls any
		if len(m.ToolCalls) > 0 {
			toolCalls = string(m.ToolCalls)
		}
		if _, err := tx.exec(ctx, qInsertMessage, sessionID, m.Seq, m.Role, m.Content, toolCalls, m.ToolCallID, m.Name, m.ReasoningContent, m.Status, m.CreatedAt); err != nil {
			return fmt.Errorf("store.AppendMessages: %w", err)
		}
		next++
	}
	return tx.touch(ctx, sessionID)
}

// SaveToolCall appends a tool-call record.
func (tx *Tx) SaveToolCall(ctx context.Context, c ToolCall) error {
	_, err := tx.exec(ctx, qInsertToolCall,
		c.SessionID, c.ID, c.Name, c.Arguments, c.Status, c.Result, c.Error, c.DurationMS, tx.now)
	if err != nil {
		return fmt.Errorf("store.SaveToolCall: %w", err)
	}
	return nil
}

// SaveTaskState replaces the session's task state.
func (tx *Tx) SaveTaskState(ctx context.Context, s TaskState) error {
	_, err := tx.exec(ctx, qSaveTaskState,
		s.SessionID, s.Status, s.IterationCount, s.Error, tx.now)
	if err != nil {
		return fmt.Errorf("store.SaveTaskState: %w", err)
	}
	return nil
}

// SaveSummary overwrites the session's rolling summary.
func (tx *Tx) SaveSummary(ctx context.Context, sessionID, content string) error {
	_, err := tx.exec(ctx, qSaveSummary,
		sessionID, content, tx.now)
	if err != nil {
		return fmt.Errorf("store.SaveSummary: %w", err)
	}
	return nil
}

func (tx *Tx) touch(ctx context.Context, sessionID string) error {
	_, err := tx.exec(ctx, qTouchSession, tx.now, sessionID)
	return err
}

// DeleteSession removes a session and everything recorded for it.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("store.DeleteSession: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.Errorf(errs.ENOTFOUND, "session %q not found", id)
		}
		return nil
	})
}

const sessionColumns = `id, title, source, external_memory_enabled, created_at, updated_at`

func scanSession(row interface{ Scan(...any) error }) (*Session, error) {
	var s Session
	var ext sql.NullString
	if err := row.Scan(&s.ID, &s.Title, &s.Source, &ext, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return nil, err
	}
	if ext.Valid {
		if err := json.Unmarshal([]byte(ext.String), &s.ExternalMemoryEnabled); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// GetSession returns one session, or an ENOTFOUND error.
func (db *DB) GetSession(ctx context.Context, id string) (*Session, error) {
	s, err := scanSession(db.read.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.Errorf(errs.ENOTFOUND, "session %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetSession: %w", err)
	}
	return s, nil
}

// SessionFilter narrows ListSessions.
type SessionFilter struct {
	Source string
	Limit  int // default 50
	Offset int
}

// ListSessions returns sessions, most recently updated first.
func (db *DB) ListSessions(ctx context.Context, f SessionFilter) ([]*Session, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q := strings.Builder{}
	q.WriteString(`SELECT ` + sessionColumns + ` FROM sessions`)
	var args []any
	if f.Source != "" {
		q.WriteString(` WHERE source = ?`)
		args = append(args, f.Source)
	}
	q.WriteString(` ORDER BY updated_at DESC, id LIMIT ? OFFSET ?`)
	args = append(args, f.Limit, f.Offset)
	rows, err := db.read.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store.ListSessions: %w", err)
	}
	defer rows.Close()
	var out []*Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			return nil, fmt.Errorf("store.ListSessions: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ListMessages returns the session's messages in order.
func (db *DB) ListMessages(ctx context.Context, sessionID string) ([]*Message, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, session_id, seq, role, content, tool_calls, tool_call_id, name,
		reasoning_content, status, created_at FROM messages WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("store.ListMessages: %w", err)
	}
	defer rows.Close()
	var out []*Message
	for rows.Next() {
		var m Message
		var toolCalls sql.NullString
		if err := rows.Scan(&m.ID, &m.SessionID, &m.Seq, &m.Role, &m.Content, &toolCalls, &m.ToolCallID, &m.Name,
			&m.ReasoningContent, &m.Status, &m.CreatedAt); err != nil {
			return nil, fmt.Errorf("store.ListMessages: %w", err)
		}
		if toolCalls.Valid {
			m.ToolCalls = json.RawMessage(toolCalls.String)
		}
		out = append(out, &m)
	}
	return out, rows.Err()
}

// ListToolCalls returns the session's tool-call records in execution order.
func (db *DB) ListToolCalls(ctx context.Context, sessionID string) ([]*ToolCall, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT session_id, id, name, arguments, status, result, error, duration_ms, created_at
		FROM tool_calls WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("store.ListToolCalls: %w", err)
	}
	defer rows.Close()
	var out []*ToolCall
	for rows.Next() {
		var c ToolCall
		if err := rows.Scan(&c.SessionID, &c.ID, &c.Name, &c.Arguments, &c.Status, &c.Result, &c.Error, &c.DurationMS, &c.CreatedAt); err != nil {
			return nil, fmt.Errorf("store.ListToolCalls: %w", err)
		}
		out = append(out, &c)
	}
	return out, rows.Err()
}

// GetTaskState returns the session's task state, or nil if no turn ran.
func (db *DB) GetTaskState(ctx context.Context, sessionID string) (*TaskState, error) {
	s := TaskState{SessionID: sessionID}
	err := db.read.QueryRowContext(ctx, `SELECT status, iteration_count, error, updated_at FROM task_states WHERE session_id = ?`, sessionID).
		Scan(&s.Status, &s.IterationCount, &s.Error, &s.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetTaskState: %w", err)
	}
	return &s, nil
}

// InterruptStaleTurns marks failed the turns still recorded running whose
// last step was written before cutoff: the process running them stopped
// (a running turn rewrites its task state on every step). It returns how
// many it marked.
func (db *DB) InterruptStaleTurns(ctx context.Context, cutoff time.Time) (int, error) {
	var n int64
	err := db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE task_states SET status = 'failed',
			error = 'interrupted: the process running this turn stopped before it ended', updated_at = ?
			WHERE status = 'running' AND updated_at < ?`, tx.now, cutoff.UTC())
		if err != nil {
			return fmt.Errorf("store.InterruptStaleTurns: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// GetSummary returns the session's rolling summary, or nil if none was saved.
func (db *DB) GetSummary(ctx context.Context, sessionID string) (*Summary, error) {
	s := Summary{SessionID: sessionID}
	err := db.read.QueryRowContext(ctx, `SELECT content, updated_at FROM summaries WHERE session_id = ?`, sessionID).
		Scan(&s.Content, &s.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetSummary: %w", err)
	}
	return &s, nil
}
