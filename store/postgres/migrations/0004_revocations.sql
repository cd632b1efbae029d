-- Token revocations (store.Revocation): one token by its id (token_id), or
-- an agent's tokens issued before issued_before (agent_id). Rows are never
-- deleted; writers take an advisory lock before drawing seq, so rows commit
-- in seq order and a server that has loaded seq N has every one before it.
CREATE SEQUENCE revocation_seq;
CREATE TABLE revocations (
    seq           bigint PRIMARY KEY,
    owner_id      text NOT NULL,
    token_id      text NOT NULL,
    agent_id      text NOT NULL,
    issued_before timestamptz,
    revoked_at    timestamptz NOT NULL,
    revoked_by    text NOT NULL
);

-- An owner's curator records revocations of its own owner's tokens only;
-- servers read them all as maintenance (ctxkit.system).
ALTER TABLE revocations ENABLE ROW LEVEL SECURITY;
ALTER TABLE revocations FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON revocations
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
