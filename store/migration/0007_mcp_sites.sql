-- MCP sites: the remote tool servers N-Agent connects to (runtime/mcp).
-- Sites from config.yaml are not stored here; a stored site of the same
-- name is shadowed by the configured one. env and headers may hold secrets:
-- no API returns their values.
CREATE TABLE mcp_sites (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL UNIQUE,  -- the <site> in tool names mcp_<site>_<tool>
    transport          TEXT NOT NULL CHECK (transport IN ('stdio', 'sse', 'streamable_http')),
    command            TEXT NOT NULL DEFAULT '',
    args               TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
    env                TEXT NOT NULL DEFAULT '{}', -- JSON object of strings
    url                TEXT NOT NULL DEFAULT '',
    headers            TEXT NOT NULL DEFAULT '{}', -- JSON object of strings
    enabled            INTEGER NOT NULL DEFAULT 1,
    connect_timeout_ms INTEGER NOT NULL DEFAULT 0, -- 0: the default
    call_timeout_ms    INTEGER NOT NULL DEFAULT 0, -- 0: the default
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL
);
