-- Webhooks (store.Webhook), each one agent's, with their signing secrets
-- (kept to sign; never listed) and the fan-out cursor: the last event seq
-- considered. Times are Unix microseconds (0: none), as the dispatcher's
-- lease arithmetic compares them.
CREATE TABLE webhooks (
    id             text PRIMARY KEY,
    owner_id       text NOT NULL,
    agent_id       text NOT NULL,
    curator        boolean NOT NULL,
    -- The token it acts by (store.Webhook.TokenID, TokenIssued): a
    -- revocation naming it pauses the webhook.
    token_id       text NOT NULL DEFAULT '',
    token_issued   bigint NOT NULL DEFAULT 0,
    url            text NOT NULL,
    selector       text NOT NULL,
    payload        text NOT NULL,
    description    text NOT NULL,
    secret         text NOT NULL,
    prev_secret    text NOT NULL DEFAULT '',
    prev_until     bigint NOT NULL DEFAULT 0,
    paused_reason  text NOT NULL DEFAULT '', -- '' while not paused
    paused_at      bigint NOT NULL DEFAULT 0,
    failing_since  bigint NOT NULL DEFAULT 0,
    cursor         bigint NOT NULL,
    missed_through bigint NOT NULL DEFAULT 0,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL
);
CREATE INDEX webhooks_agent ON webhooks (owner_id, agent_id, id);

-- One row per event (or test message) and webhook; pending rows are the
-- queue, leased by a token until lease_until (claimed FOR UPDATE SKIP
-- LOCKED, so each goes to one replica).
CREATE TABLE webhook_deliveries (
    id          text PRIMARY KEY,
    webhook_id  text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    owner_id    text NOT NULL,
    seq         bigint NOT NULL, -- 0 for a test message
    kind        text NOT NULL,
    body        bytea NOT NULL, -- the event (JSON; the payload is read when sent), or a test message's body
    status      text NOT NULL,
    attempts    integer NOT NULL DEFAULT 0,
    first_due   bigint NOT NULL,
    next_at     bigint NOT NULL,
    lease       text NOT NULL DEFAULT '',
    lease_until bigint NOT NULL DEFAULT 0,
    reason      text NOT NULL DEFAULT '',
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, status, next_at, id);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, status, id);
CREATE INDEX webhook_deliveries_settled ON webhook_deliveries (status, updated_at);
-- An event is made ready once per webhook, whichever replica fans out.
CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (webhook_id, seq) WHERE seq > 0;

CREATE TABLE webhook_attempts (
    id          bigserial PRIMARY KEY,
    delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    webhook_id  text NOT NULL,
    owner_id    text NOT NULL,
    at          bigint NOT NULL,
    status      integer NOT NULL,
    class       text NOT NULL,
    latency_us  bigint NOT NULL,
    error       text NOT NULL,
    excerpt     text NOT NULL,
    verdict     text NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);

-- The last event seq pruned from the events table (Expire): a webhook
-- whose cursor is behind it missed events, and is told so.
CREATE TABLE events_pruned (
    id      integer PRIMARY KEY CHECK (id = 1),
    through bigint NOT NULL
);

ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON webhooks
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON webhook_deliveries
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
ALTER TABLE webhook_attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_attempts FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON webhook_attempts
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
