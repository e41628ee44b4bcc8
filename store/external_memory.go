package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

// MemorySnapshot is the frozen static snapshot of a session's external memory.
type MemorySnapshot struct {
	SessionID string    `json:"session_id"`
	Enabled   []string  `json:"enabled"`
	Snapshot  string    `json:"snapshot"`
	CreatedAt time.Time `json:"created_at"`
}

// FreezeMemorySnapshot stores the session's snapshot unless one is stored
// already (the first write wins). The loop calls it in a turn's final
// transaction, so freezing costs no transaction of its own.
func (tx *Tx) FreezeMemorySnapshot(ctx context.Context, s MemorySnapshot) error {
	enabled := s.Enabled
	if enabled == nil {
		enabled = []string{}
	}
	b, _ := json.Marshal(enabled)
	if _, err := tx.tx.ExecContext(ctx, `INSERT OR IGNORE INTO external_memory_snapshots (session_id, enabled, snapshot, created_at)
		VALUES (?, ?, ?, ?)`, s.SessionID, string(b), s.Snapshot, tx.now); err != nil {
		return fmt.Errorf("store.FreezeMemorySnapshot: %w", err)
	}
	return nil
}

// GetMemorySnapshot returns the session's frozen snapshot, or nil if none was
// frozen yet.
func (db *DB) GetMemorySnapshot(ctx context.Context, sessionID string) (*MemorySnapshot, error) {
	s := MemorySnapshot{SessionID: sessionID}
	var enabled string
	err := db.read.QueryRowContext(ctx, `SELECT enabled, snapshot, created_at FROM external_memory_snapshots WHERE session_id = ?`, sessionID).
		Scan(&enabled, &s.Snapshot, &s.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetMemorySnapshot: %w", err)
	}
	if err := json.Unmarshal([]byte(enabled), &s.Enabled); err != nil {
		return nil, fmt.Errorf("store.GetMemorySnapshot: %w", err)
	}
	return &s, nil
}

// HistoryCompression is the latest compression of a session's history:
// messages [HeadEnd, Upto) are replaced by Summary in provider requests.
type HistoryCompression struct {
	SessionID string    `json:"session_id"`
	HeadEnd   int       `json:"head_end"`
	Upto      int       `json:"upto"`
	Summary   string    `json:"summary"`
	Salvage   string    `json:"salvage,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SaveHistoryCompression replaces the session's compression.
func (db *DB) SaveHistoryCompression(ctx context.Context, c HistoryCompression) error {
	err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO history_compressions (session_id, head_end, upto, summary, salvage, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET head_end = excluded.head_end, upto = excluded.upto,
				summary = excluded.summary, salvage = excluded.salvage, updated_at = excluded.updated_at`,
			c.SessionID, c.HeadEnd, c.Upto, c.Summary, c.Salvage, tx.now)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.SaveHistoryCompression: %w", err)
	}
	return nil
}

// GetHistoryCompression returns the session's compression, or nil.
func (db *DB) GetHistoryCompression(ctx context.Context, sessionID string) (*HistoryCompression, error) {
	c := HistoryCompression{SessionID: sessionID}
	err := db.read.QueryRowContext(ctx, `SELECT head_end, upto, summary, salvage, updated_at FROM history_compressions WHERE session_id = ?`, sessionID).
		Scan(&c.HeadEnd, &c.Upto, &c.Summary, &c.Salvage, &c.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetHistoryCompression: %w", err)
	}
	return &c, nil
}

// MemoryWrite is one attempted write to external memory through a tool.
type MemoryWrite struct {
	ID           int64     `json:"id"`
	CreatedAt    time.Time `json:"created_at"`
	SessionID    string    `json:"session_id"`
	ToolCallID   string    `json:"tool_call_id,omitempty"`
	Provider     string    `json:"provider"`
	Target       string    `json:"target"`
	Operation    string    `json:"operation"`
	Content      string    `json:"content,omitempty"`
	OldText      string    `json:"old_text,omitempty"`
	AgentContext string    `json:"agent_context"`
	Allowed      bool      `json:"allowed"`
	Reasons      []string  `json:"reasons"`
	Error        string    `json:"error,omitempty"`
}

// RecordMemoryWrite appends w to the audit trail of memory writes.
func (db *DB) RecordMemoryWrite(ctx context.Context, w MemoryWrite) error {
	reasons := w.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	rj, _ := json.Marshal(reasons)
	err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO external_memory_writes
			(created_at, session_id, tool_call_id, provider, target, operation, content, old_text, agent_context, allowed, reasons, error)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tx.now, w.SessionID, w.ToolCallID, w.Provider, w.Target, w.Operation, w.Content, w.OldText,
			w.AgentContext, w.Allowed, string(rj), w.Error)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.RecordMemoryWrite: %w", err)
	}
	return nil
}

// ListMemoryWrites returns recorded memory writes, newest first; a non-empty
// sessionID narrows them to one session. limit <= 0 means 100.
func (db *DB) ListMemoryWrites(ctx context.Context, sessionID string, limit int) ([]*MemoryWrite, error) {
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT id, created_at, session_id, tool_call_id, provider, target, operation, content, old_text,
		agent_context, allowed, reasons, error FROM external_memory_writes`
	var args []any
	if sessionID != "" {
		q += ` WHERE session_id = ?`
		args = append(args, sessionID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store.ListMemoryWrites: %w", err)
	}
	defer rows.Close()
	var out []*MemoryWrite
	for rows.Next() {
		var w MemoryWrite
		var reasons string
		if err := rows.Scan(&w.ID, &w.CreatedAt, &w.SessionID, &w.ToolCallID, &w.Provider, &w.Target, &w.Operation,
			&w.Content, &w.OldText, &w.AgentContext, &w.Allowed, &reasons, &w.Error); err != nil {
			return nil, fmt.Errorf("store.ListMemoryWrites: %w", err)
		}
		_ = json.Unmarshal([]byte(reasons), &w.Reasons)
		out = append(out, &w)
	}
	return out, rows.Err()
}

// MemoryFailureCount is the failure counter of one provider operation.
type MemoryFailureCount struct {
	Provider     string    `json:"provider"`
	Operation    string    `json:"operation"`
	Failures     int64     `json:"failures"`
	Timeouts     int64     `json:"timeouts"`
	LastError    string    `json:"last_error"`
	LastFailedAt time.Time `json:"last_failed_at"`
}

// CountMemoryFailure adds one failure to the counter of a provider operation.
func (db *DB) CountMemoryFailure(ctx context.Context, provider, operation string, timeout bool, msg string) error {
	t := 0
	if timeout {
		t = 1
	}
	err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO external_memory_failures (provider, operation, failures, timeouts, last_error, last_failed_at)
			VALUES (?, ?, 1, ?, ?, ?)
			ON CONFLICT (provider, operation) DO UPDATE SET failures = failures + 1, timeouts = timeouts + excluded.timeouts,
				last_error = excluded.last_error, last_failed_at = excluded.last_failed_at`,
			provider, operation, t, msg, tx.now)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.CountMemoryFailure: %w", err)
	}
	return nil
}

// ListMemoryFailures returns every failure counter, by provider and operation.
func (db *DB) ListMemoryFailures(ctx context.Context) ([]MemoryFailureCount, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT provider, operation, failures, timeouts, last_error, last_failed_at
		FROM external_memory_failures ORDER BY provider, operation`)
	if err != nil {
		return nil, fmt.Errorf("store.ListMemoryFailures: %w", err)
	}
	defer rows.Close()
	var out []MemoryFailureCount
	for rows.Next() {
		var c MemoryFailureCount
		if err := rows.Scan(&c.Provider, &c.Operation, &c.Failures, &c.Timeouts, &c.LastError, &c.LastFailedAt); err != nil {
			return nil, fmt.Errorf("store.ListMemoryFailures: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Fact is one fact of the holographic provider.
type Fact struct {
	ID       int64  `json:"id"`
	Content  string `json:"content"`
	Category string `json:"category,omitempty"`
	// Terms is the tokenised content the full-text index holds.
	Terms string `json:"-"`
	// Vector is the fact's HRR vector; AddFacts stores it, the reads leave
	// it nil (see FactVectors).
	Vector    []float32 `json:"-"`
	Trust     float64   `json:"trust"`
	Helpful   int       `json:"helpful"`
	Unhelpful int       `json:"unhelpful"`
	SessionID string    `json:"session_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// BM25 is the full-text rank of a search hit (lower is better, as
	// SQLite's bm25() returns it); zero outside SearchFacts.
	BM25 float64 `json:"-"`
}

// AddFacts inserts facts in one transaction and fills in their IDs. A fact
// whose content is already stored is not duplicated: its ID is returned and
// its trust is left as is.
func (db *DB) AddFacts(ctx context.Context, facts ...*Fact) error {
	err := db.Update(ctx, func(tx *Tx) error {
		for _, f := range facts {
			if f.Trust == 0 {
				f.Trust = 0.5
			}
			res, err := tx.tx.ExecContext(ctx, `INSERT OR IGNORE INTO memory_facts
				(content, category, terms, trust, session_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				f.Content, f.Category, f.Terms, f.Trust, f.SessionID, tx.now, tx.now)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				if err := tx.tx.QueryRowContext(ctx, `SELECT id FROM memory_facts WHERE content = ?`, f.Content).Scan(&f.ID); err != nil {
					return err
				}
				continue
			}
			if f.ID, err = res.LastInsertId(); err != nil {
				return err
			}
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO memory_facts_fts (rowid, terms) VALUES (?, ?)`, f.ID, f.Terms); err != nil {
				return err
			}
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO memory_fact_vectors (fact_id, vector) VALUES (?, ?)`, f.ID, encodeVector(f.Vector)); err != nil {
				return err
			}
			f.CreatedAt, f.UpdatedAt = tx.now, tx.now
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store.AddFacts: %w", err)
	}
	return nil
}

// SearchFacts returns up to limit facts whose terms match any of the given
// terms, best full-text rank first, with BM25 set.
func (db *DB) SearchFacts(ctx context.Context, terms []string, limit int) ([]*Fact, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	rows, err := db.read.QueryContext(ctx, `SELECT f.id, f.content, f.category, f.terms, f.trust, f.helpful, f.unhelpful,
			f.session_id, f.created_at, f.updated_at, m.score
		FROM (SELECT rowid, bm25(memory_facts_fts) AS score FROM memory_facts_fts WHERE memory_facts_fts MATCH ?
			ORDER BY score LIMIT ?) AS m
		JOIN memory_facts AS f ON f.id = m.rowid ORDER BY m.score`, strings.Join(quoted, " OR "), limit)
	if err != nil {
		return nil, fmt.Errorf("store.SearchFacts: %w", err)
	}
	defer rows.Close()
	var out []*Fact
	for rows.Next() {
		f, err := scanFact(rows, true)
		if err != nil {
			return nil, fmt.Errorf("store.SearchFacts: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// GetFact returns one fact, or an ENOTFOUND error.
func (db *DB) GetFact(ctx context.Context, id int64) (*Fact, error) {
	f, err := scanFact(db.read.QueryRowContext(ctx, `SELECT id, content, category, terms, trust, helpful, unhelpful,
		session_id, created_at, updated_at FROM memory_facts WHERE id = ?`, id), false)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.Errorf(errs.ENOTFOUND, "fact %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetFact: %w", err)
	}
	return f, nil
}

// FactFeedback records whether a fact helped and moves its trust by delta,
// clamped to [0, 1]. It returns the fact after the update.
func (db *DB) FactFeedback(ctx context.Context, id int64, helpful bool, delta float64) (*Fact, error) {
	col := "unhelpful"
	if helpful {
		col = "helpful"
	}
	err := db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE memory_facts SET `+col+` = `+col+` + 1,
			trust = MIN(1.0, MAX(0.0, trust + ?)), updated_at = ? WHERE id = ?`, delta, tx.now, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.Errorf(errs.ENOTFOUND, "fact %d not found", id)
		}
		return nil
	})
	if err != nil {
		if errs.Code(err) == errs.ENOTFOUND {
			return nil, err
		}
		return nil, fmt.Errorf("store.FactFeedback: %w", err)
	}
	return db.GetFact(ctx, id)
}

// CountFacts returns how many facts are stored.
func (db *DB) CountFacts(ctx context.Context) (int, error) {
	var n int
	if err := db.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_facts`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store.CountFacts: %w", err)
	}
	return n, nil
}

func scanFact(row interface{ Scan(...any) error }, withRank bool) (*Fact, error) {
	var f Fact
	dest := []any{&f.ID, &f.Content, &f.Category, &f.Terms, &f.Trust, &f.Helpful, &f.Unhelpful, &f.SessionID, &f.CreatedAt, &f.UpdatedAt}
	if withRank {
		dest = append(dest, &f.BM25)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	return &f, nil
}

// FactVectors returns the HRR vectors of the given facts, by id.
func (db *DB) FactVectors(ctx context.Context, ids []int64) (map[int64][]float32, error) {
	out := make(map[int64][]float32, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := db.read.QueryContext(ctx, `SELECT fact_id, vector FROM memory_fact_vectors WHERE fact_id IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store.FactVectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("store.FactVectors: %w", err)
		}
		out[id] = decodeVector(b)
	}
	return out, rows.Err()
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
