-- The search document of each breadcrumb (store.EncodeDocument: the words
-- of its title, tags, description and view text). Searches rank their
-- matches from these (store.SearchExpr.Rank), so both backends rank alike
-- and from the caller's visible matches alone.
CREATE TABLE search_docs (
    breadcrumb_id uuid PRIMARY KEY REFERENCES breadcrumbs (id) ON DELETE CASCADE,
    owner_id      text NOT NULL,
    doc           text NOT NULL
);

-- Uncompressed: every search reads the documents of its matches, and
-- decompressing them would cost more than the disk saved.
ALTER TABLE search_docs ALTER COLUMN doc SET STORAGE EXTERNAL;

ALTER TABLE search_docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE search_docs FORCE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON search_docs
    USING (owner_id = current_setting('ctxkit.owner_id', true) OR current_setting('ctxkit.system', true) = 'on');

-- The documents of the breadcrumbs indexed so far are rebuilt from their
-- tsvector (weights A title, B tags, C description, D view text; words in
-- position order), since their view text (supplied by the writer) is
-- nowhere else. A tsvector keeps a word's first 256 positions only: a
-- word repeated more often counts fewer times until the breadcrumb's next
-- write. Row-level security would hide every row from the migration: it
-- runs as maintenance.
SELECT set_config('ctxkit.system', 'on', true);
INSERT INTO search_docs (breadcrumb_id, owner_id, doc)
SELECT b.id, b.owner_id,
    (SELECT string_agg(coalesce((SELECT string_agg(u.lexeme, ' ' ORDER BY p.pos)
                                 FROM unnest(b.search) AS u, unnest(u.positions, u.weights) AS p(pos, weight)
                                 WHERE p.weight = f.weight), ''), E'\n' ORDER BY f.weight)
     FROM unnest(ARRAY['A', 'B', 'C', 'D']) AS f(weight))
FROM breadcrumbs b WHERE b.search IS NOT NULL;
SELECT set_config('ctxkit.system', 'off', true);
