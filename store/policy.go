package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// PolicyDecision is one row of the policy audit trail: a tool-call decision
// as the policy engine took it.
type PolicyDecision struct {
	ID        int64     `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	SessionID string    `json:"session_id"`
	Tool      string    `json:"tool"`
	Phase     string    `json:"phase"`
	Allow     bool      `json:"allow"`
	Confirm   bool      `json:"confirm"`
	Reasons   []string  `json:"reasons"`
	// Constraints is a JSON object, or empty for none.
	Constraints json.RawMessage `json:"constraints,omitempty"`
	// Arguments is the call's JSON arguments with secrets redacted; the
	// caller redacts.
	Arguments json.RawMessage `json:"arguments"`
	// Revision is the policy revision that decided.
	Revision string `json:"revision"`
	// EvalMicros is how long the evaluation took, in microseconds.
	EvalMicros int64 `json:"eval_us"`
	// Error is set when evaluation failed, which is a denial.
	Error string `json:"error,omitempty"`
}

const qInsertPolicyDecision = `INSERT INTO policy_decisions
	(created_at, session_id, tool, phase, allow, confirm, reasons, constraints, arguments, revision, eval_us, error)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func init() { hotQueries = append(hotQueries, qInsertPolicyDecision) }

// SavePolicyDecision appends one audit record. A zero CreatedAt becomes the
// transaction's time.
func (tx *Tx) SavePolicyDecision(ctx context.Context, d PolicyDecision) error {
	if d.CreatedAt.IsZero() {
		d.CreatedAt = tx.now
	}
	reasons := d.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	rj, err := json.Marshal(reasons)
	if err != nil {
		return fmt.Errorf("store.SavePolicyDecision: %w", err)
	}
	constraints, args := string(d.Constraints), string(d.Arguments)
	if constraints == "" {
		constraints = "{}"
	}
	if args == "" {
		args = "{}"
	}
	_, err = tx.exec(ctx, qInsertPolicyDecision,
		d.CreatedAt.UTC(), d.SessionID, d.Tool, d.Phase, d.Allow, d.Confirm, string(rj), constraints, args, d.Revision, d.EvalMicros, d.Error)
	if err != nil {
		return fmt.Errorf("store.SavePolicyDecision: %w", err)
	}
	return nil
}

// SavePolicyDecisions appends audit records in one transaction.
func (db *DB) SavePolicyDecisions(ctx context.Context, ds []PolicyDecision) error {
	if len(ds) == 0 {
		return nil
	}
	return db.Update(ctx, func(tx *Tx) error {
		for _, d := range ds {
			if err := tx.SavePolicyDecision(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// PolicyDecisionFilter narrows ListPolicyDecisions.
type PolicyDecisionFilter struct {
	SessionID string // "" means every session
	Limit     int    // default 50
}

// ListPolicyDecisions returns audit records, newest first.
func (db *DB) ListPolicyDecisions(ctx context.Context, f PolicyDecisionFilter) ([]*PolicyDecision, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q := `SELECT id, created_at, session_id, tool, phase, allow, confirm, reasons, constraints, arguments, revision, eval_us, error
		FROM policy_decisions`
	args := []any{}
	if f.SessionID != "" {
		q += ` WHERE session_id = ?`
		args = append(args, f.SessionID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := db.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store.ListPolicyDecisions: %w", err)
	}
	defer rows.Close()
	var out []*PolicyDecision
	for rows.Next() {
		var d PolicyDecision
		var reasons, constraints, arguments string
		if err := rows.Scan(&d.ID, &d.CreatedAt, &d.SessionID, &d.Tool, &d.Phase, &d.Allow, &d.Confirm,
			&reasons, &constraints, &arguments, &d.Revision, &d.EvalMicros, &d.Error); err != nil {
			return nil, fmt.Errorf("store.ListPolicyDecisions: %w", err)
		}
		if err := json.Unmarshal([]byte(reasons), &d.Reasons); err != nil {
			return nil, fmt.Errorf("store.ListPolicyDecisions: reasons of %d: %w", d.ID, err)
		}
		if constraints != "{}" {
			d.Constraints = json.RawMessage(constraints)
		}
		d.Arguments = json.RawMessage(arguments)
		out = append(out, &d)
	}
	return out, rows.Err()
}
