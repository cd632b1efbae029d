-- Stored selectors (store.Subscription), each one agent's: every query
-- names the owner and the agent, and row-level security keeps an owner's
-- rows to its own scope.
CREATE TABLE subscriptions (
    id          uuid PRIMARY KEY,
    owner_id    text NOT NULL,
    agent_id    text NOT NULL,
    name        text NOT NULL,
    description text NOT NULL,
    selector    text NOT NULL, -- the selector's JSON form
    created_at  timestamptz NOT NULL
);
CREATE INDEX subscriptions_agent ON subscriptions (owner_id, agent_id, id);

ALTER TABLE subscriptions ENABLE ROW LEVEL SECURITY;
ALTER TABLE subscriptions FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON subscriptions
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
