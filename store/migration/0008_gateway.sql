-- GatewayService (runtime/gateway): which session a platform conversation
-- continues, and which platform messages were already taken, so that a
-- redelivered message never produces a second answer.
CREATE TABLE gateway_conversations (
    platform   TEXT NOT NULL,             -- feishu, cli, acp, tui
    chat_id    TEXT NOT NULL,
    thread_id  TEXT NOT NULL DEFAULT '',
    user_id    TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (platform, chat_id, thread_id, user_id)
);
CREATE INDEX gateway_conversations_session ON gateway_conversations (session_id);

CREATE TABLE gateway_seen (
    platform    TEXT NOT NULL,
    key         TEXT NOT NULL,            -- "msg:<message id>" or "evt:<event id>"
    received_at DATETIME NOT NULL,
    PRIMARY KEY (platform, key)
);
CREATE INDEX gateway_seen_received ON gateway_seen (received_at);
