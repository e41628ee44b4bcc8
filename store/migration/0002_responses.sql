-- Responses API objects: the stored JSON of each response, by id, so that
-- GET /v1/responses/{id} can return it and previous_response_id can find the
-- session a response belongs to.
CREATE TABLE responses (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    body       TEXT NOT NULL, -- the response object as JSON
    created_at DATETIME NOT NULL
);
CREATE INDEX responses_session ON responses (session_id);
