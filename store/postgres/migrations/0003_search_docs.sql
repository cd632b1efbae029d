-- The search document of each breadcrumb (store.EncodeDocument: the words
-- of its title, tags, description and view text). Searches rank their
-- matches from these (store.SearchExpr.Rank), so both backends rank alike
-- and from the caller's visible matches alone. Every breadcrumb is indexed
-- again (search NULL) by the next server to open the database.
CREATE TABLE search_docs (
    breadcrumb_id uuid PRIMARY KEY REFERENCES breadcrumbs (id) ON DELETE CASCADE,
    owner_id      text NOT NULL,
    doc           text NOT NULL
);

ALTER TABLE search_docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE search_docs FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON search_docs
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');

-- Row-level security would hide every row from the migration: it runs as
-- maintenance for this statement.
SELECT set_config('ctxkit.system', 'on', true);
UPDATE breadcrumbs SET search = NULL;
SELECT set_config('ctxkit.system', 'off', true);
