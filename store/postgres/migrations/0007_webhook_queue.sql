-- The delivery queue under load: every delivery is inserted, leased,
-- settled and its attempt kept, and every fan-out round moves the
-- cursor of each webhook it reads for, so these rows are written far
-- more than they are read.
--
-- Room on each page lets an update that changes no indexed column (a
-- lease, a cursor) stay on its page as a heap-only tuple: no new index
-- entries, and dead versions pruned on the page instead of bloating the
-- table that every claim and fan-out round scans.
ALTER TABLE webhooks SET (fillfactor = 50);
ALTER TABLE webhook_deliveries SET (fillfactor = 70);

-- The claim's index holds pending deliveries only: a delivery settled
-- (delivered or dead-lettered) leaves it instead of adding an entry, and
-- a claim never walks past settled ones. The pruning's index holds only
-- settled ones, which is all it deletes. The migration runs in one
-- transaction, so DROP INDEX locks webhook_deliveries (ACCESS EXCLUSIVE)
-- while the new indexes are built over the whole table: on a deploy with
-- a large queue, every claim, settle and read of deliveries waits for it.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, next_at, id) WHERE status = 'pending';
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE status IN ('delivered', 'failed');
DROP INDEX webhook_deliveries_settled;
