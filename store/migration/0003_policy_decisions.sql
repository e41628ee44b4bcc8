-- The audit trail of the policy engine: one row per tool-call decision.
-- Rows outlive their session on purpose (no foreign key): an audit trail is
-- not deleted with the conversation it audits.
CREATE TABLE policy_decisions (
    id          INTEGER PRIMARY KEY,
    created_at  DATETIME NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    tool        TEXT NOT NULL,
    phase       TEXT NOT NULL CHECK (phase IN ('expose', 'call')),
    allow       INTEGER NOT NULL CHECK (allow IN (0, 1)),
    confirm     INTEGER NOT NULL CHECK (confirm IN (0, 1)),
    reasons     TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    constraints TEXT NOT NULL DEFAULT '{}', -- JSON object
    arguments   TEXT NOT NULL DEFAULT '{}', -- JSON, with secrets redacted and size capped
    revision    TEXT NOT NULL,              -- the policy revision that decided
    eval_us     INTEGER NOT NULL DEFAULT 0, -- evaluation time in microseconds
    error       TEXT NOT NULL DEFAULT ''    -- set when evaluation failed (a denial)
);
CREATE INDEX policy_decisions_session ON policy_decisions (session_id, id);
