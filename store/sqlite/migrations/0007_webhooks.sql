-- Webhooks (store.Webhook), each one agent's, with their signing secrets
-- (kept to sign; never listed) and the fan-out cursor: the last event
-- seq considered. Times are Unix microseconds; 0 is "none".
CREATE TABLE webhooks (
    id             TEXT PRIMARY KEY,
    owner_id       TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    curator        INTEGER NOT NULL,
    -- The token it acts by (store.Webhook.TokenID, TokenIssued): a
    -- revocation naming it pauses the webhook.
    token_id       TEXT NOT NULL DEFAULT '',
    token_issued   INTEGER NOT NULL DEFAULT 0,
    url            TEXT NOT NULL,
    selector       TEXT NOT NULL,
    payload        TEXT NOT NULL,
    description    TEXT NOT NULL,
    secret         TEXT NOT NULL,
    prev_secret    TEXT NOT NULL DEFAULT '',
    prev_until     INTEGER NOT NULL DEFAULT 0,
    paused_reason  TEXT NOT NULL DEFAULT '', -- '' while not paused
    paused_at      INTEGER NOT NULL DEFAULT 0,
    failing_since  INTEGER NOT NULL DEFAULT 0,
    cursor         INTEGER NOT NULL,
    missed_through INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_agent ON webhooks (owner_id, agent_id, id);

-- One row per event (or test message) and webhook; status pending rows
-- are the queue, leased by a token until lease_until.
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL, -- 0 for a test message
    kind        TEXT NOT NULL,
    body        BLOB NOT NULL, -- the event (JSON; the payload is read when sent), or a test message's body
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    first_due   INTEGER NOT NULL,
    next_at     INTEGER NOT NULL,
    lease       TEXT NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0,
    reason      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, status, next_at, id);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, status, id);
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (status, updated_at);

CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id  TEXT NOT NULL,
    at          INTEGER NOT NULL,
    status      INTEGER NOT NULL,
    class       TEXT NOT NULL,
    latency_us  INTEGER NOT NULL,
    error       TEXT NOT NULL,
    excerpt     TEXT NOT NULL,
    verdict     TEXT NOT NULL
) STRICT;
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);

-- The last event seq pruned from the events table (Expire): a webhook
-- whose cursor is behind it missed events, and is told so.
CREATE TABLE events_pruned (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    through INTEGER NOT NULL
) STRICT;
-- An event is made ready once per webhook, whichever replica fans out.
CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, seq) WHERE seq > 0;
