-- External memory: the frozen static snapshot of each session, history
-- compressions, the audit trail of memory writes, provider failure counters,
-- and the facts of the holographic retrieval provider with their FTS5 index.

-- The static snapshot of external memory that went into a session's system
-- message on its first turn. It is frozen, so the system message stays
-- byte-identical for the whole session (provider prompt caches keep working).
CREATE TABLE external_memory_snapshots (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    enabled    TEXT NOT NULL, -- JSON array: the selection the snapshot was taken for
    snapshot   TEXT NOT NULL,
    created_at DATETIME NOT NULL
);

-- The latest compression of a session's history: messages [head_end, upto)
-- (0-based positions in the session's message order) are replaced in
-- provider requests by summary. The messages table keeps every message.
CREATE TABLE history_compressions (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    head_end   INTEGER NOT NULL,
    upto       INTEGER NOT NULL,
    summary    TEXT NOT NULL,
    salvage    TEXT NOT NULL DEFAULT '', -- what pre_compress_all returned, folded into summary
    updated_at DATETIME NOT NULL
);

-- Every write the external_memory / multi_external_memory tools attempted,
-- allowed or not. Rows outlive their session (no foreign key): an audit
-- trail is not deleted with the conversation it audits.
CREATE TABLE external_memory_writes (
    id            INTEGER PRIMARY KEY,
    created_at    DATETIME NOT NULL,
    session_id    TEXT NOT NULL DEFAULT '',
    tool_call_id  TEXT NOT NULL DEFAULT '',
    provider      TEXT NOT NULL, -- "builtin" or "project:<name>"
    target        TEXT NOT NULL, -- "memory.md" or "user.md"
    operation     TEXT NOT NULL, -- add, replace, remove
    content       TEXT NOT NULL DEFAULT '',
    old_text      TEXT NOT NULL DEFAULT '',
    agent_context TEXT NOT NULL DEFAULT '',
    allowed       INTEGER NOT NULL CHECK (allowed IN (0, 1)),
    reasons       TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    error         TEXT NOT NULL DEFAULT ''    -- set when an allowed write failed
);
CREATE INDEX external_memory_writes_session ON external_memory_writes (session_id, id);

-- Failure counters per provider and operation, for the dashboard.
CREATE TABLE external_memory_failures (
    provider       TEXT NOT NULL,
    operation      TEXT NOT NULL,
    failures       INTEGER NOT NULL DEFAULT 0,
    timeouts       INTEGER NOT NULL DEFAULT 0, -- the failures that were timeouts
    last_error     TEXT NOT NULL DEFAULT '',
    last_failed_at DATETIME NOT NULL,
    PRIMARY KEY (provider, operation)
);

-- Facts of the holographic provider. terms is the tokenised text that the
-- FTS5 index holds; the HRR vector is kept apart (memory_fact_vectors), so
-- that the rows a search reads stay small.
CREATE TABLE memory_facts (
    id         INTEGER PRIMARY KEY,
    content    TEXT NOT NULL,
    category   TEXT NOT NULL DEFAULT '',
    terms      TEXT NOT NULL,
    trust      REAL NOT NULL DEFAULT 0.5 CHECK (trust >= 0 AND trust <= 1),
    helpful    INTEGER NOT NULL DEFAULT 0,
    unhelpful  INTEGER NOT NULL DEFAULT 0,
    session_id TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX memory_facts_content ON memory_facts (content);

-- The HRR vector of each fact, as little-endian float32.
CREATE TABLE memory_fact_vectors (
    fact_id INTEGER PRIMARY KEY REFERENCES memory_facts (id) ON DELETE CASCADE,
    vector  BLOB NOT NULL
);

-- The full-text index of memory_facts.terms (rowid = memory_facts.id). The
-- terms are pre-tokenised (lower-case words, CJK bigrams), so the unicode61
-- tokenizer only splits on the spaces between them.
CREATE VIRTUAL TABLE memory_facts_fts USING fts5 (terms, tokenize = 'unicode61 remove_diacritics 0');
