-- history becomes a rowid table, its key a unique index. A version's
-- record (the breadcrumb's JSON, context and all) is often larger than
-- the quarter of a page a row of a WITHOUT ROWID table keeps in place:
-- the rest went to an overflow page of its own, so each version of a
-- breadcrumb of a couple of KiB took a whole page more, written to the
-- log and then to the file. A rowid table keeps a record of up to
-- nearly a page in place, next to the ones written before it.
CREATE TABLE history_rows (
    breadcrumb_id TEXT NOT NULL,
    version       INTEGER NOT NULL,
    record        TEXT NOT NULL,
    PRIMARY KEY (breadcrumb_id, version)
) STRICT;
INSERT INTO history_rows (breadcrumb_id, version, record)
SELECT breadcrumb_id, version, record FROM history ORDER BY breadcrumb_id, version;
DROP TABLE history;
ALTER TABLE history_rows RENAME TO history;
