-- Dashboard logins (package web): a browser that logged in with an API key
-- holds a random cookie; only its SHA-256 is stored, with the CSRF token
-- its state-changing requests must carry.
CREATE TABLE web_logins (
    token_hash TEXT PRIMARY KEY,
    csrf_token TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    expires_at DATETIME NOT NULL
);
CREATE INDEX web_logins_expires ON web_logins (expires_at);
