-- The search document of each breadcrumb (store.EncodeDocument: the words
-- of its title, tags, description and view text), keyed by the breadcrumbs
-- row's rowid like breadcrumb_search. Searches rank their matches from
-- these (store.SearchExpr.Rank) instead of FTS5's bm25, whose statistics
-- span every row of the index, other owners' included. Every breadcrumb is
-- indexed again when the database is next opened.
CREATE TABLE search_docs (
    rowid INTEGER PRIMARY KEY,
    doc   TEXT NOT NULL
) STRICT;
INSERT OR IGNORE INTO search_pending (id) SELECT id FROM breadcrumbs;
