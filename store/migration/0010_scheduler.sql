-- Scheduler: scheduled agent runs (runtime/scheduler), each run's record and
-- delivery, and the dashboard inbox that the "inbox" delivery target fills.
-- Scheduling times are INTEGER Unix milliseconds (UTC), so that "due" is an
-- indexed integer comparison; created_at/updated_at follow the other tables.
CREATE TABLE schedules (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL CHECK (kind IN ('cron', 'every', 'once')),
    -- cron: a 5-field expression or @daily-style descriptor; every: a Go
    -- duration ("15m"), counted from created_at; once: an RFC 3339 time.
    spec            TEXT NOT NULL,
    timezone        TEXT NOT NULL DEFAULT 'UTC', -- IANA name the cron spec is read in
    prompt          TEXT NOT NULL,
    delivery_kind   TEXT NOT NULL DEFAULT 'none' CHECK (delivery_kind IN ('none', 'webhook', 'inbox', 'feishu')),
    delivery_target TEXT NOT NULL DEFAULT '', -- webhook URL or Feishu chat id
    enabled         INTEGER NOT NULL DEFAULT 1,
    catch_up        TEXT NOT NULL DEFAULT 'skip' CHECK (catch_up IN ('skip', 'run_once')),
    next_run_at     INTEGER, -- NULL: no further run (a once schedule that ran, or paused)
    last_run_at     INTEGER,
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL
);
CREATE INDEX schedules_due ON schedules (enabled, next_run_at);

CREATE TABLE schedule_runs (
    id                TEXT PRIMARY KEY,
    schedule_id       TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    trigger_kind      TEXT NOT NULL CHECK (trigger_kind IN ('tick', 'catch_up', 'manual')),
    scheduled_for     INTEGER NOT NULL,
    started_at        INTEGER,
    finished_at       INTEGER,
    status            TEXT NOT NULL CHECK (status IN
        ('running', 'completed', 'failed', 'cancelled', 'skipped_overlap', 'skipped_missed')),
    session_id        TEXT NOT NULL DEFAULT '',
    content           TEXT NOT NULL DEFAULT '',
    error             TEXT NOT NULL DEFAULT '',
    note              TEXT NOT NULL DEFAULT '',
    delivery_status   TEXT NOT NULL DEFAULT 'none' CHECK (delivery_status IN ('none', 'pending', 'delivered', 'failed')),
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    delivery_error    TEXT NOT NULL DEFAULT '',
    owner             TEXT NOT NULL DEFAULT '' -- "<host>:<pid>" of the process running it
);
CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, scheduled_for);
CREATE INDEX schedule_runs_running ON schedule_runs (status) WHERE status = 'running';

-- The dashboard inbox: results of schedules delivered to "inbox". Rows stay
-- when their schedule is removed.
CREATE TABLE inbox_messages (
    id            TEXT PRIMARY KEY,
    schedule_id   TEXT NOT NULL DEFAULT '',
    schedule_name TEXT NOT NULL DEFAULT '',
    run_id        TEXT NOT NULL DEFAULT '',
    session_id    TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL DEFAULT '',
    content       TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    read_at       INTEGER
);
CREATE INDEX inbox_messages_created ON inbox_messages (created_at);
