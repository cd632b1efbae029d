-- Breadcrumbs. context holds the record as jsonb for queries and indexes;
-- context_text holds the canonical bytes clients get back (and the checksum
-- covers), since jsonb reorders keys and rewrites numbers. Indexed text
-- (owner_id, schema_name) is bounded by ctxkit's input limits, well under a
-- b-tree entry's maximum.
CREATE TABLE breadcrumbs (
    id               uuid PRIMARY KEY,
    owner_id         text NOT NULL,
    title            text NOT NULL,
    description      text NOT NULL,
    semantic_version text NOT NULL,
    context          jsonb NOT NULL,
    context_text     text NOT NULL,
    tags             text[] NOT NULL,
    schema_name      text NOT NULL,
    llm_hints        text,
    visibility       text NOT NULL CHECK (visibility IN ('team', 'private', 'public')),
    sensitivity      text NOT NULL,
    version          bigint NOT NULL,
    checksum         text NOT NULL,
    expires_at       timestamptz,
    max_reads        bigint NOT NULL,
    reads            bigint NOT NULL,
    created_at       timestamptz NOT NULL,
    created_by       text NOT NULL,
    updated_at       timestamptz NOT NULL,
    updated_by       text NOT NULL,
    size_bytes       bigint NOT NULL
);
CREATE INDEX breadcrumbs_owner ON breadcrumbs (owner_id, id);
CREATE INDEX breadcrumbs_schema ON breadcrumbs (owner_id, schema_name, id);
CREATE INDEX breadcrumbs_expiry ON breadcrumbs (expires_at) WHERE expires_at IS NOT NULL;

-- Tag filters. The tags column above is what reads return; this table is
-- what filters use. A GIN index on the column would not serve them: under
-- row-level security PostgreSQL only uses an index for conditions built
-- from leakproof functions, and array containment (@>) is not one, while
-- text equality is.
CREATE TABLE breadcrumb_tags (
    owner_id      text NOT NULL,
    tag           text NOT NULL,
    breadcrumb_id uuid NOT NULL REFERENCES breadcrumbs (id) ON DELETE CASCADE,
    PRIMARY KEY (owner_id, tag, breadcrumb_id)
);
CREATE INDEX breadcrumb_tags_id ON breadcrumb_tags (breadcrumb_id);

-- Every version ever written, as the record's JSON; kept after a delete.
CREATE TABLE history (
    breadcrumb_id uuid NOT NULL,
    version       bigint NOT NULL,
    owner_id      text NOT NULL,
    record        text NOT NULL,
    PRIMARY KEY (breadcrumb_id, version)
);

-- The change feed. seq comes from a sequence; writers take an advisory lock
-- before drawing it, so changes commit in seq order and a reader that has
-- seen seq N has seen every change before it.
CREATE SEQUENCE event_seq;
CREATE TABLE events (
    seq           bigint PRIMARY KEY,
    kind          text NOT NULL,
    breadcrumb_id uuid NOT NULL,
    owner_id      text NOT NULL,
    version       bigint NOT NULL,
    visibility    text NOT NULL,
    created_by    text NOT NULL,
    tags          text[] NOT NULL,
    schema_name   text NOT NULL,
    at            timestamptz NOT NULL
);
CREATE INDEX events_owner ON events (owner_id, seq);

-- Keys are per agent: another agent's key never replays (or reveals) a record.
CREATE TABLE idempotency (
    owner_id     text NOT NULL,
    agent_id     text NOT NULL,
    key          text NOT NULL,
    request_hash text NOT NULL,
    record       text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (owner_id, agent_id, key)
);
CREATE INDEX idempotency_age ON idempotency (created_at);

-- Row-level security: a second wall behind the owner filter every query
-- has. Each transaction names its owner with set_config(..., true) (SET
-- LOCAL); maintenance (expiry, the newest event number) sets ctxkit.system.
-- FORCE makes the policies apply to the tables' owner, the role ctxkit
-- connects as. Superusers and BYPASSRLS roles are not subject to them.
ALTER TABLE breadcrumbs ENABLE ROW LEVEL SECURITY;
ALTER TABLE breadcrumbs FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON breadcrumbs
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
CREATE POLICY public_reads ON breadcrumbs FOR SELECT
    USING (visibility = 'public' AND current_setting('ctxkit.owner_id', true) <> '');

ALTER TABLE breadcrumb_tags ENABLE ROW LEVEL SECURITY;
ALTER TABLE breadcrumb_tags FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON breadcrumb_tags
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');

ALTER TABLE history ENABLE ROW LEVEL SECURITY;
ALTER TABLE history FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON history
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');

ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON events
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');

ALTER TABLE idempotency ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON idempotency
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
