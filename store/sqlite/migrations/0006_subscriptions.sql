-- Stored selectors (store.Subscription), each one agent's: every query
-- names the owner and the agent.
CREATE TABLE subscriptions (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL,
    selector    TEXT NOT NULL, -- the selector's JSON form
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX subscriptions_agent ON subscriptions (owner_id, agent_id, id);
