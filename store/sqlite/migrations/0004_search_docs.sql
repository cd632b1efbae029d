-- The search document of each breadcrumb (store.EncodeDocument: the words
-- of its title, tags, description and view text), keyed by the breadcrumbs
-- row's rowid like breadcrumb_search. Searches rank their matches from
-- these (store.SearchExpr.Rank) instead of FTS5's bm25, whose statistics
-- span every row of the index, other owners' included.
CREATE TABLE search_docs (
    rowid INTEGER PRIMARY KEY,
    doc   TEXT NOT NULL
) STRICT;

-- The documents of the breadcrumbs indexed so far are rebuilt from the
-- full-text index itself, word by word in order, since their view text
-- (supplied by the writer) is nowhere else; those not indexed yet
-- (search_pending) get theirs when they are.
CREATE VIRTUAL TABLE temp.search_instances USING fts5vocab(main, 'breadcrumb_search', 'instance');
INSERT INTO search_docs (rowid, doc)
SELECT doc,
    coalesce(max(CASE WHEN col = 'title' THEN words END), '') || char(10) ||
    coalesce(max(CASE WHEN col = 'tags' THEN words END), '') || char(10) ||
    coalesce(max(CASE WHEN col = 'description' THEN words END), '') || char(10) ||
    coalesce(max(CASE WHEN col = 'body' THEN words END), '')
FROM (SELECT doc, col, group_concat(term, ' ' ORDER BY offset) AS words
      FROM temp.search_instances WHERE col <> 'owner' GROUP BY doc, col)
WHERE doc IN (SELECT rowid FROM breadcrumbs)
GROUP BY doc;
DROP TABLE temp.search_instances;
