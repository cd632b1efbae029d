-- The due deliveries of each webhook, for claims: an index of the
-- pending ones only. The index of every delivery by status put each
-- webhook's pending ones on a page of their own, among its settled ones,
-- so a claim, probing every webhook, read a page per webhook; pending
-- deliveries are few and fit on a handful of pages.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, next_at, id) WHERE status = 'pending';
