package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/nagent/nagent/runtime/errs"
)

// SaveResponse stores the JSON body of a Responses API object under id,
// linked to its session. Saving an id again replaces its body.
func (db *DB) SaveResponse(ctx context.Context, id, sessionID string, body []byte) error {
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO responses (id, session_id, body, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, body = excluded.body`,
			id, sessionID, string(body), tx.now)
		if err != nil {
			return fmt.Errorf("store.SaveResponse: %w", err)
		}
		return nil
	})
}

// GetResponse returns the session and JSON body of a stored response, or an
// ENOTFOUND error.
func (db *DB) GetResponse(ctx context.Context, id string) (sessionID string, body []byte, err error) {
	var text string
	err = db.read.QueryRowContext(ctx, `SELECT session_id, body FROM responses WHERE id = ?`, id).Scan(&sessionID, &text)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, errs.Errorf(errs.ENOTFOUND, "response %q not found", id)
	}
	if err != nil {
		return "", nil, fmt.Errorf("store.GetResponse: %w", err)
	}
	return sessionID, []byte(text), nil
}
