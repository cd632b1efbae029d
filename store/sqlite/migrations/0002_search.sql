-- Full-text search: one row per breadcrumb, keyed by the breadcrumb's
-- rowid. ctxkit splits text into words itself (store.Words) and stores them
-- space-separated, so the tokenizer only splits on spaces and both backends
-- match the same words. Contentless: the words are in breadcrumbs already.
CREATE VIRTUAL TABLE breadcrumb_search USING fts5(
    title, tags, description, body,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- Breadcrumbs written before search existed, indexed when the database is
-- next opened.
CREATE TABLE search_pending (id TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
INSERT INTO search_pending (id) SELECT id FROM breadcrumbs;
