-- Session memory: sessions, messages, tool calls, task states, summaries.
CREATE TABLE sessions (
    id                      TEXT PRIMARY KEY,
    title                   TEXT NOT NULL DEFAULT '',
    source                  TEXT NOT NULL,
    -- JSON array of external-memory provider names; NULL until the first write locks it.
    external_memory_enabled TEXT,
    created_at              DATETIME NOT NULL,
    updated_at              DATETIME NOT NULL
);
CREATE INDEX sessions_updated ON sessions (updated_at);

CREATE TABLE messages (
    id                INTEGER PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL,
    role              TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content           TEXT NOT NULL DEFAULT '',
    tool_calls        TEXT, -- JSON array in the OpenAI tool-call shape
    tool_call_id      TEXT NOT NULL DEFAULT '',
    name              TEXT NOT NULL DEFAULT '',
    reasoning_content TEXT NOT NULL DEFAULT '',
    -- 'cancelled' or 'error' marks a message kept from a turn that did not complete.
    status            TEXT NOT NULL DEFAULT '',
    created_at        DATETIME NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE tool_calls (
    seq         INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- the model's call id; some providers reuse ids across rounds, so it is not unique
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    arguments   TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL CHECK (status IN ('success', 'error', 'denied')),
    result      TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL
);
CREATE INDEX tool_calls_session ON tool_calls (session_id, id);

CREATE TABLE task_states (
    session_id      TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    status          TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    iteration_count INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    updated_at      DATETIME NOT NULL
);

CREATE TABLE summaries (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    content    TEXT NOT NULL,
    updated_at DATETIME NOT NULL
);
