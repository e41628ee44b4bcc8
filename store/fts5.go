package store

import (
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

// The ncruces driver does not build FTS5 into SQLite; it is an extension
// that every connection must load. The holographic memory provider's facts
// index (migration 0005) needs it.
func init() { sqlite3.AutoExtension(fts5.Register) }
