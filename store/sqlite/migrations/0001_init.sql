CREATE TABLE breadcrumbs (
    id               TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL,
    title            TEXT NOT NULL,
    description      TEXT NOT NULL,
    semantic_version TEXT NOT NULL,
    context          TEXT NOT NULL,
    tags             TEXT NOT NULL,  -- JSON array, sorted
    schema_name      TEXT NOT NULL,
    llm_hints        TEXT,
    visibility       TEXT NOT NULL,
    sensitivity      TEXT NOT NULL,
    version          INTEGER NOT NULL,
    checksum         TEXT NOT NULL,
    expires_at       INTEGER,        -- unix microseconds
    max_reads        INTEGER NOT NULL,
    reads            INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    created_by       TEXT NOT NULL,
    updated_at       INTEGER NOT NULL,
    updated_by       TEXT NOT NULL,
    size_bytes       INTEGER NOT NULL
) STRICT;
CREATE INDEX breadcrumbs_owner ON breadcrumbs (owner_id, id);
CREATE INDEX breadcrumbs_schema ON breadcrumbs (owner_id, schema_name, id);
CREATE INDEX breadcrumbs_expiry ON breadcrumbs (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE breadcrumb_tags (
    tag           TEXT NOT NULL,
    breadcrumb_id TEXT NOT NULL REFERENCES breadcrumbs (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, breadcrumb_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX breadcrumb_tags_id ON breadcrumb_tags (breadcrumb_id);

-- Every version ever written, as the record's JSON; kept after a delete.
CREATE TABLE history (
    breadcrumb_id TEXT NOT NULL,
    version       INTEGER NOT NULL,
    record        TEXT NOT NULL,
    PRIMARY KEY (breadcrumb_id, version)
) STRICT, WITHOUT ROWID;

-- The change feed: a growing sequence, with what filtering needs.
CREATE TABLE events (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind          TEXT NOT NULL,
    breadcrumb_id TEXT NOT NULL,
    owner_id      TEXT NOT NULL,
    version       INTEGER NOT NULL,
    visibility    TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    tags          TEXT NOT NULL,
    schema_name   TEXT NOT NULL,
    at            INTEGER NOT NULL
) STRICT;
CREATE INDEX events_owner ON events (owner_id, seq);

-- Keys are per agent: another agent's key never replays (or reveals) a record.
CREATE TABLE idempotency (
    owner_id     TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    record       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (owner_id, agent_id, key)
) STRICT, WITHOUT ROWID;
