package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Conversation names one platform conversation: a chat, optionally a
// thread in it, optionally one user in it.
type Conversation struct {
	Platform string `json:"platform"`
	ChatID   string `json:"chat_id"`
	ThreadID string `json:"thread_id,omitempty"`
	UserID   string `json:"user_id,omitempty"`
}

// ConversationSession returns the session conv continues, or "" when it
// has none yet.
func (db *DB) ConversationSession(ctx context.Context, conv Conversation) (string, error) {
	var id string
	err := db.read.QueryRowContext(ctx, `SELECT session_id FROM gateway_conversations
		WHERE platform = ? AND chat_id = ? AND thread_id = ? AND user_id = ?`,
		conv.Platform, conv.ChatID, conv.ThreadID, conv.UserID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store.ConversationSession: %w", err)
	}
	return id, nil
}

// BindConversation makes conv continue sessionID from now on.
func (db *DB) BindConversation(ctx context.Context, conv Conversation, sessionID string) error {
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO gateway_conversations
			(platform, chat_id, thread_id, user_id, session_id, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (platform, chat_id, thread_id, user_id)
			DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`,
			conv.Platform, conv.ChatID, conv.ThreadID, conv.UserID, sessionID, tx.now, tx.now)
		if err != nil {
			return fmt.Errorf("store.BindConversation: %w", err)
		}
		return nil
	})
}

// MarkSeen records the given delivery keys of one platform message (its
// message id, its event id) in one transaction. It reports false, and
// records nothing, when any of them was recorded before: the message is a
// redelivery. Empty keys are ignored.
func (db *DB) MarkSeen(ctx context.Context, platform string, keys ...string) (fresh bool, err error) {
	err = db.Update(ctx, func(tx *Tx) error {
		fresh = true
		for _, k := range keys {
			if k == "" {
				continue
			}
			res, err := tx.tx.ExecContext(ctx, `INSERT OR IGNORE INTO gateway_seen (platform, key, received_at)
				VALUES (?, ?, ?)`, platform, k, tx.now)
			if err != nil {
				return fmt.Errorf("store.MarkSeen: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				fresh = false
			}
		}
		if !fresh {
			return errSeen
		}
		return nil
	})
	if errors.Is(err, errSeen) {
		return false, nil
	}
	return fresh, err
}

var errSeen = errors.New("seen before")

// ForgetSeen drops delivery keys recorded before cutoff; platforms stop
// redelivering long before.
func (db *DB) ForgetSeen(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `DELETE FROM gateway_seen WHERE received_at < ?`, cutoff.UTC())
		if err != nil {
			return fmt.Errorf("store.ForgetSeen: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}
