// Package store wraps SQLite: the embedded schema migrations and the
// repositories of session memory. It knows SQL and nothing about the loop.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // registers the "sqlite3" driver
)

//go:embed migration/*.sql
var migrations embed.FS

// DB is a SQLite database in WAL mode with one writer connection and a pool
// of read-only connections.
type DB struct {
	path  string
	write *sql.DB
	read  *sql.DB
	// Now is the clock used for created/updated times.
	Now func() time.Time

	stmts map[string]*sql.Stmt // hotQueries, prepared once on the writer; read-only after Open
}

// Open opens (creating if needed) the database file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	pragmas := "&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(normal)"
	u := "file:" + (&url.URL{Path: path}).EscapedPath()
	write, err := sql.Open("sqlite3", u+"?_txlock=immediate&_pragma=journal_mode(wal)"+pragmas)
	if err != nil {
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(0)
	db := &DB{path: path, write: write, Now: time.Now}
	if err := db.migrate(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("store.Open: %s: %w", path, err)
	}
	if err := db.prepare(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	read, err := sql.Open("sqlite3", u+"?mode=ro&_txlock=deferred"+pragmas)
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("store.Open: %w", err)
	}
	read.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	db.read = read
	return db, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	for _, st := range db.stmts {
		st.Close()
	}
	return errors.Join(db.read.Close(), db.write.Close())
}

// Path is the database file.
func (db *DB) Path() string { return db.path }

// SchemaVersion returns the applied migration count.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.read.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// Ready reports whether the database answers and every embedded migration
// has been applied.
func (db *DB) Ready(ctx context.Context) error {
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("store: database unreachable: %w", err)
	}
	names, err := migrationNames()
	if err != nil {
		return err
	}
	if v != len(names) {
		return fmt.Errorf("store: schema version %d, want %d", v, len(names))
	}
	return nil
}

func migrationNames() ([]string, error) {
	names, err := fs.Glob(migrations, "migration/*.sql")
	sort.Strings(names)
	return names, err
}

// migrate applies the embedded migrations past PRAGMA user_version, each in
// its own transaction.
func (db *DB) migrate(ctx context.Context) error {
	names, err := migrationNames()
	if err != nil {
		return err
	}
	var version int
	if err := db.write.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > len(names) {
		return fmt.Errorf("schema version %d is newer than this binary knows (%d); upgrade nagent", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		tx, err := db.write.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", names[i], err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", names[i], err)
		}
	}
	return nil
}

// Update runs fn in one write transaction, committing if fn returns nil.
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, db: db, now: db.Now().UTC()}
	if err := fn(tx); err != nil {
		sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// Tx is one write transaction. Its methods are the write side of the
// repositories; every write of one loop step goes through one Tx.
type Tx struct {
	tx  *sql.Tx
	db  *DB
	now time.Time
}

// prepare prepares the hot write statements once on the writer connection;
// preparing dominates small writes. It runs before any transaction holds
// the single writer connection.
func (db *DB) prepare(ctx context.Context) error {
	db.stmts = make(map[string]*sql.Stmt, len(hotQueries))
	for _, q := range hotQueries {
		st, err := db.write.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		db.stmts[q] = st
	}
	return nil
}

// queryRow runs a cached single-row query inside the transaction.
func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := tx.db.stmts[query]; ok {
		return tx.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.tx.QueryRowContext(ctx, query, args...)
}

// exec runs a cached statement inside the transaction.
func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := tx.db.stmts[query]; ok {
		return tx.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.tx.ExecContext(ctx, query, args...)
}
