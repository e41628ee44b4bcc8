-- Knowledge bases (runtime/knowledge): the registered instances, their
-- secrets, and the documents and chunks of local knowledge bases.
-- Secrets sit in their own table so that no query over knowledge_bases can
-- return them; only the knowledge service reads them, to build a retriever.
CREATE TABLE knowledge_bases (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    type        TEXT NOT NULL,              -- a registered retriever type: local, dify, ...
    description TEXT NOT NULL DEFAULT '',   -- shown to the model in search_knowledge
    config      TEXT NOT NULL DEFAULT '{}', -- JSON object; never holds the secret
    enabled     INTEGER NOT NULL DEFAULT 1,
    created_at  DATETIME NOT NULL,
    updated_at  DATETIME NOT NULL
);

CREATE TABLE knowledge_secrets (
    kb_id      TEXT PRIMARY KEY REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    secret     TEXT NOT NULL,
    updated_at DATETIME NOT NULL
) WITHOUT ROWID;

-- One row per ingested file of a local knowledge base; hash lets a
-- re-ingest skip files that did not change.
CREATE TABLE knowledge_documents (
    kb_id       TEXT NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    path        TEXT NOT NULL, -- relative to the ingested directory, slash-separated
    hash        TEXT NOT NULL, -- sha256 of the content
    title       TEXT NOT NULL DEFAULT '',
    chunks      INTEGER NOT NULL DEFAULT 0,
    ingested_at DATETIME NOT NULL,
    PRIMARY KEY (kb_id, path)
) WITHOUT ROWID;

-- The chunks of local knowledge bases, ranked with BM25. The *_terms
-- columns are what is indexed: the text with a space around each CJK
-- character, since unicode61 does not split Chinese or Japanese into words;
-- a query matches CJK text by adjacent-character phrases. title and content
-- keep the original text. FTS5 tables take no foreign keys; the store
-- deletes a document's chunks with it.
CREATE VIRTUAL TABLE knowledge_chunks USING fts5 (
    title_terms, content_terms,
    title UNINDEXED, content UNINDEXED, kb_id UNINDEXED, path UNINDEXED, seq UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
