-- The sandbox of execute_code: the live sandboxes (one per session), the
-- history of executions, and the audit of releases. Like policy_decisions,
-- history and release rows outlive their session on purpose (no foreign key).

-- One row per sandbox currently held by some nagent process (owner names
-- it: host:pid). A process that wants another one's sandbox released sets
-- release_requested; the owner's reaper releases it and deletes the row.
CREATE TABLE sandboxes (
    session_id        TEXT PRIMARY KEY,
    backend           TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('active', 'executing', 'releasing')),
    owner             TEXT NOT NULL,
    executions        INTEGER NOT NULL DEFAULT 0,
    created_at        DATETIME NOT NULL,
    last_used_at      DATETIME NOT NULL,
    release_requested INTEGER NOT NULL DEFAULT 0 CHECK (release_requested IN (0, 1)),
    release_force     INTEGER NOT NULL DEFAULT 0 CHECK (release_force IN (0, 1)),
    release_reason    TEXT NOT NULL DEFAULT ''
);

-- SandboxExecutionHistoryEntry: one row per execution.
CREATE TABLE sandbox_history (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL,
    seq           INTEGER NOT NULL,               -- the call number within the session's sandbox dir
    backend       TEXT NOT NULL,
    code_sha256   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('success', 'error')),
    exit_reason   TEXT NOT NULL CHECK (exit_reason IN ('ok', 'error', 'timeout', 'killed', 'oom', 'limit')),
    exit_code     INTEGER NOT NULL DEFAULT 0,
    result        TEXT NOT NULL DEFAULT '',       -- stdout and stderr, truncated (head and tail)
    allowed_tools TEXT NOT NULL DEFAULT '[]',     -- JSON array of names
    called_tools  TEXT NOT NULL DEFAULT '[]',     -- JSON array of {"name","status"}
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    created_at    DATETIME NOT NULL
);
CREATE INDEX sandbox_history_session ON sandbox_history (session_id, id);

-- ReleasedSandboxInfo: one row per release.
CREATE TABLE released_sandboxes (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    backend     TEXT NOT NULL,
    reason      TEXT NOT NULL,                    -- idle_timeout, session_deleted, manual, shutdown, stale_owner
    detail      TEXT NOT NULL DEFAULT '',
    forced      INTEGER NOT NULL DEFAULT 0 CHECK (forced IN (0, 1)),
    executions  INTEGER NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL,                -- when the sandbox was created
    last_used_at DATETIME NOT NULL,
    released_at DATETIME NOT NULL
);
CREATE INDEX released_sandboxes_session ON released_sandboxes (session_id, id);
