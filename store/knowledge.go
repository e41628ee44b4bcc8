package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/nagent/nagent/runtime/errs"
)

// KnowledgeBase is one registered knowledge-base instance. Its secret is
// stored apart and is never part of this struct.
type KnowledgeBase struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Config      json.RawMessage `json:"config"`
	Enabled     bool            `json:"enabled"`
	// HasSecret says whether a secret is stored, never what it is.
	HasSecret bool      `json:"has_secret"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// KnowledgeDocument is one ingested file of a local knowledge base.
type KnowledgeDocument struct {
	Path       string    `json:"path"`
	Hash       string    `json:"hash"`
	Title      string    `json:"title"`
	Chunks     int       `json:"chunks"`
	IngestedAt time.Time `json:"ingested_at"`
}

// KnowledgeChunk is one chunk of a document, with its BM25 score when it
// comes from SearchKnowledgeChunks (lower is better, as SQLite's bm25()
// returns it).
type KnowledgeChunk struct {
	Path    string  `json:"path"`
	Seq     int     `json:"seq"`
	Title   string  `json:"title"`
	Content string  `json:"content"`
	BM25    float64 `json:"bm25"`
}

// NewKnowledgeBaseID returns a fresh knowledge-base id.
func NewKnowledgeBaseID() string {
	var b [8]byte
	rand.Read(b[:])
	return "kb_" + hex.EncodeToString(b[:])
}

// CreateKnowledgeBase stores kb, and secret when not empty. An empty ID
// gets a fresh one; kb.ID is set on return.
func (db *DB) CreateKnowledgeBase(ctx context.Context, kb *KnowledgeBase, secret string) error {
	if kb.ID == "" {
		kb.ID = NewKnowledgeBaseID()
	}
	if len(kb.Config) == 0 {
		kb.Config = json.RawMessage(`{}`)
	}
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO knowledge_bases (id, name, type, description, config, enabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, kb.ID, kb.Name, kb.Type, kb.Description, string(kb.Config), kb.Enabled, tx.now, tx.now)
		if err != nil {
			if strings.Contains(err.Error(), "UNIQUE constraint failed") {
				return errs.Errorf(errs.ECONFLICT, "a knowledge base named %s already exists", kb.Name)
			}
			return fmt.Errorf("store.CreateKnowledgeBase: %w", err)
		}
		kb.CreatedAt, kb.UpdatedAt = tx.now, tx.now
		if secret != "" {
			kb.HasSecret = true
			return tx.setKnowledgeSecret(ctx, kb.ID, secret)
		}
		return nil
	})
}

// SetKnowledgeSecret replaces the secret of a knowledge base; an empty
// secret removes it.
func (db *DB) SetKnowledgeSecret(ctx context.Context, id, secret string) error {
	return db.Update(ctx, func(tx *Tx) error { return tx.setKnowledgeSecret(ctx, id, secret) })
}

func (tx *Tx) setKnowledgeSecret(ctx context.Context, id, secret string) error {
	if secret == "" {
		_, err := tx.tx.ExecContext(ctx, `DELETE FROM knowledge_secrets WHERE kb_id = ?`, id)
		return err
	}
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO knowledge_secrets (kb_id, secret, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (kb_id) DO UPDATE SET secret = excluded.secret, updated_at = excluded.updated_at`, id, secret, tx.now)
	if err != nil {
		return fmt.Errorf("store.SetKnowledgeSecret: %w", err)
	}
	return nil
}

// GetKnowledgeSecret returns the secret of a knowledge base, or "" when it
// has none. Only the knowledge service calls it.
func (db *DB) GetKnowledgeSecret(ctx context.Context, id string) (string, error) {
	var s string
	err := db.read.QueryRowContext(ctx, `SELECT secret FROM knowledge_secrets WHERE kb_id = ?`, id).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store.GetKnowledgeSecret: %w", err)
	}
	return s, nil
}

const kbColumns = `k.id, k.name, k.type, k.description, k.config, k.enabled, k.created_at, k.updated_at,
	EXISTS (SELECT 1 FROM knowledge_secrets s WHERE s.kb_id = k.id)`

func scanKnowledgeBase(row interface{ Scan(...any) error }) (*KnowledgeBase, error) {
	var kb KnowledgeBase
	var config string
	if err := row.Scan(&kb.ID, &kb.Name, &kb.Type, &kb.Description, &config, &kb.Enabled, &kb.CreatedAt, &kb.UpdatedAt, &kb.HasSecret); err != nil {
		return nil, err
	}
	kb.Config = json.RawMessage(config)
	return &kb, nil
}

// GetKnowledgeBase returns the knowledge base with the given id or name,
// or an ENOTFOUND error.
func (db *DB) GetKnowledgeBase(ctx context.Context, idOrName string) (*KnowledgeBase, error) {
	kb, err := scanKnowledgeBase(db.read.QueryRowContext(ctx, `SELECT `+kbColumns+` FROM knowledge_bases k
		WHERE k.id = ? OR k.name = ? ORDER BY k.id = ? DESC LIMIT 1`, idOrName, idOrName, idOrName))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.Errorf(errs.ENOTFOUND, "no knowledge base %q", idOrName)
	}
	if err != nil {
		return nil, fmt.Errorf("store.GetKnowledgeBase: %w", err)
	}
	return kb, nil
}

// ListKnowledgeBases returns every knowledge base by name.
func (db *DB) ListKnowledgeBases(ctx context.Context) ([]*KnowledgeBase, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+kbColumns+` FROM knowledge_bases k ORDER BY k.name`)
	if err != nil {
		return nil, fmt.Errorf("store.ListKnowledgeBases: %w", err)
	}
	defer rows.Close()
	var out []*KnowledgeBase
	for rows.Next() {
		kb, err := scanKnowledgeBase(rows)
		if err != nil {
			return nil, fmt.Errorf("store.ListKnowledgeBases: %w", err)
		}
		out = append(out, kb)
	}
	return out, rows.Err()
}

// SetKnowledgeBaseEnabled enables or disables a knowledge base.
func (db *DB) SetKnowledgeBaseEnabled(ctx context.Context, id string, enabled bool) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE knowledge_bases SET enabled = ?, updated_at = ? WHERE id = ?`, enabled, tx.now, id)
		if err != nil {
			return fmt.Errorf("store.SetKnowledgeBaseEnabled: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.Errorf(errs.ENOTFOUND, "no knowledge base %q", id)
		}
		return nil
	})
}

// DeleteKnowledgeBase removes a knowledge base with its secret, documents
// and chunks.
func (db *DB) DeleteKnowledgeBase(ctx context.Context, id string) error {
	return db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.tx.ExecContext(ctx, `DELETE FROM knowledge_chunks WHERE kb_id = ?`, id); err != nil {
			return fmt.Errorf("store.DeleteKnowledgeBase: %w", err)
		}
		res, err := tx.tx.ExecContext(ctx, `DELETE FROM knowledge_bases WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("store.DeleteKnowledgeBase: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.Errorf(errs.ENOTFOUND, "no knowledge base %q", id)
		}
		return nil
	})
}

// ListKnowledgeDocuments returns the ingested documents of a knowledge
// base by path.
func (db *DB) ListKnowledgeDocuments(ctx context.Context, kbID string) ([]*KnowledgeDocument, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT path, hash, title, chunks, ingested_at FROM knowledge_documents
		WHERE kb_id = ? ORDER BY path`, kbID)
	if err != nil {
		return nil, fmt.Errorf("store.ListKnowledgeDocuments: %w", err)
	}
	defer rows.Close()
	var out []*KnowledgeDocument
	for rows.Next() {
		var d KnowledgeDocument
		if err := rows.Scan(&d.Path, &d.Hash, &d.Title, &d.Chunks, &d.IngestedAt); err != nil {
			return nil, fmt.Errorf("store.ListKnowledgeDocuments: %w", err)
		}
		out = append(out, &d)
	}
	return out, rows.Err()
}

// PutKnowledgeDocument replaces a document of a knowledge base and all its
// chunks in one transaction.
func (db *DB) PutKnowledgeDocument(ctx context.Context, kbID string, doc *KnowledgeDocument, chunks []KnowledgeChunk) error {
	return db.Update(ctx, func(tx *Tx) error {
		if err := tx.deleteKnowledgeDocument(ctx, kbID, doc.Path); err != nil {
			return err
		}
		doc.Chunks, doc.IngestedAt = len(chunks), tx.now
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO knowledge_documents (kb_id, path, hash, title, chunks, ingested_at)
			VALUES (?, ?, ?, ?, ?, ?)`, kbID, doc.Path, doc.Hash, doc.Title, doc.Chunks, tx.now); err != nil {
			return fmt.Errorf("store.PutKnowledgeDocument: %s: %w", doc.Path, err)
		}
		for _, c := range chunks {
			if _, err := tx.tx.ExecContext(ctx, `INSERT INTO knowledge_chunks (title_terms, content_terms, title, content, kb_id, path, seq)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, spaceCJK(c.Title), spaceCJK(c.Content), c.Title, c.Content, kbID, doc.Path, c.Seq); err != nil {
				return fmt.Errorf("store.PutKnowledgeDocument: %s: %w", doc.Path, err)
			}
		}
		return nil
	})
}

// DeleteKnowledgeDocument removes a document and its chunks; a missing
// document is not an error.
func (db *DB) DeleteKnowledgeDocument(ctx context.Context, kbID, path string) error {
	return db.Update(ctx, func(tx *Tx) error { return tx.deleteKnowledgeDocument(ctx, kbID, path) })
}

func (tx *Tx) deleteKnowledgeDocument(ctx context.Context, kbID, path string) error {
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM knowledge_chunks WHERE kb_id = ? AND path = ?`, kbID, path); err != nil {
		return fmt.Errorf("store.DeleteKnowledgeDocument: %w", err)
	}
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM knowledge_documents WHERE kb_id = ? AND path = ?`, kbID, path); err != nil {
		return fmt.Errorf("store.DeleteKnowledgeDocument: %w", err)
	}
	return nil
}

// SearchKnowledgeChunks returns up to limit chunks of a knowledge base
// matching any of terms, best BM25 rank first. Title matches weigh twice
// as much as content matches. A term holding CJK characters matches them
// as a phrase of adjacent characters.
func (db *DB) SearchKnowledgeChunks(ctx context.Context, kbID string, terms []string, limit int) ([]KnowledgeChunk, error) {
	if len(terms) == 0 || limit <= 0 {
		return nil, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(strings.TrimSpace(spaceCJK(t)), `"`, `""`) + `"`
	}
	rows, err := db.read.QueryContext(ctx, `SELECT path, seq, title, content, bm25(knowledge_chunks, 2.0, 1.0) AS score
		FROM knowledge_chunks WHERE knowledge_chunks MATCH ? AND kb_id = ? ORDER BY score LIMIT ?`,
		"{title_terms content_terms}: ("+strings.Join(quoted, " OR ")+")", kbID, limit)
	if err != nil {
		return nil, fmt.Errorf("store.SearchKnowledgeChunks: %w", err)
	}
	defer rows.Close()
	var out []KnowledgeChunk
	for rows.Next() {
		var c KnowledgeChunk
		if err := rows.Scan(&c.Path, &c.Seq, &c.Title, &c.Content, &c.BM25); err != nil {
			return nil, fmt.Errorf("store.SearchKnowledgeChunks: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// spaceCJK puts a space around every CJK character, so that the unicode61
// tokenizer indexes each as its own token.
func spaceCJK(s string) string {
	if !strings.ContainsFunc(s, isCJK) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) * 2)
	for _, r := range s {
		if isCJK(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}
