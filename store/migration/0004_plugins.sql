-- WASM plugins: the state each plugin had at its last load, the per-plugin
-- key-value store behind nagent.kv_*, and the audit trail of calls plugins
-- made on the nagent host module. Key-value data and audit rows outlive an
-- uninstall on purpose: reinstalling a plugin finds its data again, and an
-- audit trail is not deleted with what it audits.
CREATE TABLE plugins (
    name       TEXT PRIMARY KEY,
    version    TEXT NOT NULL DEFAULT '',
    digest     TEXT NOT NULL DEFAULT '', -- sha256 of plugin.yaml and the module
    status     TEXT NOT NULL CHECK (status IN ('ready', 'unusable', 'error')),
    error      TEXT NOT NULL DEFAULT '',
    tools      TEXT NOT NULL DEFAULT '[]', -- JSON array of tool names
    updated_at DATETIME NOT NULL
);

CREATE TABLE plugin_kv (
    plugin     TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      BLOB NOT NULL,
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (plugin, key)
) WITHOUT ROWID;

CREATE TABLE plugin_host_calls (
    id          INTEGER PRIMARY KEY,
    created_at  DATETIME NOT NULL,
    plugin      TEXT NOT NULL,
    tool        TEXT NOT NULL DEFAULT '',
    session_id  TEXT NOT NULL DEFAULT '',
    function    TEXT NOT NULL,              -- log, http_request, kv_get, kv_set, kv_delete
    detail      TEXT NOT NULL DEFAULT '',   -- e.g. "GET https://api.example.com/x -> 200"
    outcome     TEXT NOT NULL CHECK (outcome IN ('ok', 'denied', 'error')),
    error       TEXT NOT NULL DEFAULT '',
    duration_us INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX plugin_host_calls_plugin ON plugin_host_calls (plugin, id);
