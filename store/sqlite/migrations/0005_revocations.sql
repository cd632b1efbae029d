-- Token revocations (store.Revocation): one token by its id (token_id), or
-- an agent's tokens issued before issued_before (agent_id). Rows are never
-- deleted, so servers load only those past the last seq they saw; an
-- AUTOINCREMENT seq is never reused.
CREATE TABLE revocations (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id      TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    issued_before INTEGER, -- Unix microseconds; NULL for a token id
    revoked_at    INTEGER NOT NULL,
    revoked_by    TEXT NOT NULL
);
