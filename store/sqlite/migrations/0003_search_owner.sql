-- The search table gains an owner column first: one opaque word per owner
-- (store/sqlite ownerWord), so every search matches "owner : word AND
-- (query)" and the full-text index itself keeps to the caller's owner.
-- Every breadcrumb is indexed again when the database is next opened.
DROP TABLE breadcrumb_search;
CREATE VIRTUAL TABLE breadcrumb_search USING fts5(
    owner, title, tags, description, body,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);
INSERT OR IGNORE INTO search_pending (id) SELECT id FROM breadcrumbs;
