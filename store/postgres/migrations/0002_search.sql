-- Full-text search. ctxkit splits text into words itself (store.Words) and
-- writes the tsvector directly (weights A title, B tags, C description,
-- D view text), so both backends match the same words whatever the
-- database's text search configuration. Rows written before this
-- migration have a NULL search and are indexed by the next server to open
-- the database.
ALTER TABLE breadcrumbs ADD COLUMN search tsvector;
CREATE INDEX breadcrumbs_search ON breadcrumbs USING gin (search);

-- The words of each breadcrumb, for finding candidates. Under row-level
-- security PostgreSQL uses an index only for conditions built from
-- leakproof functions; the tsvector match (@@) is not one, so the GIN index
-- above serves only roles that bypass row-level security. Text equality and
-- comparison are leakproof: this table's b-tree finds the candidates, and
-- @@ and ts_rank then run on those alone. COLLATE "C" makes a prefix a
-- range of bytes.
CREATE TABLE search_terms (
    owner_id      text NOT NULL,
    term          text COLLATE "C" NOT NULL,
    breadcrumb_id uuid NOT NULL REFERENCES breadcrumbs (id) ON DELETE CASCADE,
    PRIMARY KEY (owner_id, term, breadcrumb_id)
);
CREATE INDEX search_terms_id ON search_terms (breadcrumb_id);

ALTER TABLE search_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE search_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON search_terms
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');
