package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ctxkit/ctxkit/store"
)

// micro is t in Unix microseconds, 0 for the zero time.
func micro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicro is micro's inverse.
func fromMicro(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func microPtr(us int64) *time.Time {
	if us == 0 {
		return nil
	}
	t := fromMicro(us)
	return &t
}

// queueTx is inTx for the webhook tables, with two differences. The
// event feed is not woken: their writes are no events (a settle per
// attempt would otherwise make the feed read the events table each
// time). And the commit is not flushed to disk by itself (synchronous
// NORMAL, for this transaction only): a crash of the process loses
// nothing of it (WAL), and a power loss can lose only a suffix of these
// commits, which at-least-once delivery absorbs: a lost fan-out is made
// again from its cursor (moved in the same transaction; its deliveries
// keep their ids, store.EventDeliveryID, so one already sent comes again
// under the same webhook-id), a lost lease
// was never needed, and a lost settle repeats its delivery (a duplicate,
// which the receiver drops by its webhook-id). The next breadcrumb
// write, synchronous FULL, flushes them anyway. Without this, each
// attempt cost a disk flush, and delivery and breadcrumb writes
// competed for the disk.
func (d *DB) queueTx(ctx context.Context, f func(*sql.Tx) error) error {
	if e := d.corrupt.Load(); e != nil {
		return e
	}
	if err := d.gate.enter(ctx, false); err != nil {
		return err
	}
	defer d.gate.leave()
	// Damage found while this transaction waited at the gate stops it too.
	if e := d.corrupt.Load(); e != nil {
		return e
	}
	c, err := d.w.Conn(ctx)
	if err != nil {
		return d.fail(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return d.fail(err)
	}
	defer func() {
		if _, err := c.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
			// Never hand the connection back to breadcrumb writes
			// without their flush: drop it.
			c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return d.fail(err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return d.fail(err)
	}
	if err := tx.Commit(); err != nil {
		c.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		return d.fail(err)
	}
	d.ckpt.wake()
	return nil
}

const webhookColumns = `id, owner_id, agent_id, curator, url, selector, payload, description, paused_reason, paused_at,
	failing_since, cursor, missed_through, created_at, updated_at, token_id, token_issued`

func scanWebhook(row interface{ Scan(...any) error }) (store.Webhook, error) {
	var (
		w                                   store.Webhook
		sel, payload                        string
		pausedAt, failing, created, updated int64
		issued                              int64
	)
	if err := row.Scan(&w.ID, &w.OwnerID, &w.AgentID, &w.Curator, &w.URL, &sel, &payload, &w.Description, &w.PausedReason,
		&pausedAt, &failing, &w.Cursor, &w.MissedThrough, &created, &updated, &w.TokenID, &issued); err != nil {
		return w, err
	}
	w.TokenIssued = fromMicro(issued)
	w.Payload, w.Paused = store.WebhookPayload(payload), w.PausedReason != ""
	w.PausedAt, w.FailingSince = microPtr(pausedAt), microPtr(failing)
	w.CreatedAt, w.UpdatedAt = fromMicro(created), fromMicro(updated)
	var err error
	if w.Selector, err = store.ParseSelector([]byte(sel)); err != nil {
		return w, fmt.Errorf("webhook %s: stored selector: %w", w.ID, err)
	}
	return w, nil
}

// CreateWebhook implements store.Webhooks.
func (d *DB) CreateWebhook(ctx context.Context, a store.Actor, in store.Webhook) (store.Webhook, store.WebhookKeys, error) {
	var (
		w    store.Webhook
		keys store.WebhookKeys
	)
	secret, err := store.NewWebhookSecret()
	if err != nil {
		return w, keys, err
	}
	if w, err = store.NewWebhook(a, in, 0, d.stamp()); err != nil {
		return w, keys, err
	}
	sel, err := json.Marshal(w.Selector)
	if err != nil {
		return w, keys, err
	}
	err = d.queueTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhooks WHERE owner_id = ? AND agent_id = ?`, a.OwnerID, a.AgentID).Scan(&n); err != nil {
			return err
		}
		if n >= store.MaxWebhooks {
			return store.ErrTooManyWebhooks
		}
		// From the newest event on: in the transaction, so no event
		// committed before the webhook existed is delivered, and none after.
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&w.Cursor); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhooks (id, owner_id, agent_id, curator, url, selector, payload, description,
			secret, cursor, created_at, updated_at, token_id, token_issued) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.OwnerID, w.AgentID, w.Curator, w.URL, string(sel), string(w.Payload), w.Description, secret, w.Cursor,
			micro(w.CreatedAt), micro(w.UpdatedAt), w.TokenID, micro(w.TokenIssued))
		return err
	})
	if err != nil {
		return store.Webhook{}, keys, err
	}
	return w, store.WebhookKeys{Current: secret}, nil
}

// Webhooks implements store.Webhooks.
func (d *DB) Webhooks(ctx context.Context, a store.Actor) ([]store.Webhook, error) {
	return d.webhooks(ctx, `WHERE owner_id = ? AND agent_id = ? ORDER BY id`, a.OwnerID, a.AgentID)
}

// AllWebhooks implements store.Webhooks.
func (d *DB) AllWebhooks(ctx context.Context) ([]store.Webhook, error) {
	return d.webhooks(ctx, `ORDER BY id`)
}

func (d *DB) webhooks(ctx context.Context, where string, args ...any) ([]store.Webhook, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhooks `+where, args...)
	if err != nil {
		return nil, d.fail(err)
	}
	defer rows.Close()
	out := []store.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, d.fail(rows.Err())
}

// Webhook implements store.Webhooks.
func (d *DB) Webhook(ctx context.Context, a store.Actor, id string) (store.Webhook, error) {
	return d.webhook(ctx, d.r, a, id)
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (d *DB) webhook(ctx context.Context, q rowQuerier, a store.Actor, id string) (store.Webhook, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Webhook{}, store.ErrWebhookNotFound
	}
	w, err := scanWebhook(q.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND owner_id = ? AND agent_id = ?`,
		u.String(), a.OwnerID, a.AgentID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Webhook{}, store.ErrWebhookNotFound
	}
	return w, d.fail(err)
}

// UpdateWebhook implements store.Webhooks.
func (d *DB) UpdateWebhook(ctx context.Context, a store.Actor, id string, p store.WebhookPatch) (store.Webhook, error) {
	var w store.Webhook
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		var err error
		if w, err = d.webhook(ctx, tx, a, id); err != nil {
			return err
		}
		if err := p.Apply(&w, d.stamp()); err != nil {
			return err
		}
		sel, err := json.Marshal(w.Selector)
		if err != nil {
			return err
		}
		var pausedAt, failing int64
		if w.PausedAt != nil {
			pausedAt = micro(*w.PausedAt)
		}
		failingSet := ``
		if p.Paused != nil && !*p.Paused {
			failingSet = `, failing_since = 0`
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhooks SET url = ?, selector = ?, description = ?, paused_reason = ?, paused_at = ?,
			updated_at = ?, curator = ?, token_id = ?, token_issued = ?`+failingSet+` WHERE id = ?`, w.URL, string(sel), w.Description,
			w.PausedReason, pausedAt, micro(w.UpdatedAt), w.Curator, w.TokenID, micro(w.TokenIssued), w.ID)
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT failing_since FROM webhooks WHERE id = ?`, w.ID).Scan(&failing); err != nil {
			return err
		}
		w.FailingSince = microPtr(failing)
		return nil
	})
	return w, err
}

// DeleteWebhook implements store.Webhooks.
func (d *DB) DeleteWebhook(ctx context.Context, a store.Actor, id string) error {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.ErrWebhookNotFound
	}
	return d.queueTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND owner_id = ? AND agent_id = ?`, u.String(), a.OwnerID, a.AgentID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrWebhookNotFound
		}
		return nil
	})
}

// RotateWebhookSecret implements store.Webhooks.
func (d *DB) RotateWebhookSecret(ctx context.Context, a store.Actor, id string, overlap time.Duration) (store.Webhook, store.WebhookKeys, error) {
	var (
		w    store.Webhook
		keys store.WebhookKeys
	)
	secret, err := store.NewWebhookSecret()
	if err != nil {
		return w, keys, err
	}
	now := d.stamp()
	err = d.queueTx(ctx, func(tx *sql.Tx) error {
		var err error
		if w, err = d.webhook(ctx, tx, a, id); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT secret FROM webhooks WHERE id = ?`, w.ID).Scan(&keys.Previous); err != nil {
			return err
		}
		keys.Current, keys.PreviousUntil = secret, now.Add(overlap)
		w.UpdatedAt = now
		_, err = tx.ExecContext(ctx, `UPDATE webhooks SET secret = ?, prev_secret = ?, prev_until = ?, updated_at = ? WHERE id = ?`,
			keys.Current, keys.Previous, micro(keys.PreviousUntil), micro(now), w.ID)
		return err
	})
	if err != nil {
		return store.Webhook{}, store.WebhookKeys{}, err
	}
	return w, keys, nil
}

const deliveryColumns = `id, webhook_id, seq, kind, status, attempts, first_due, next_at, reason, created_at, updated_at`

func scanDelivery(row interface{ Scan(...any) error }, extra ...any) (store.Delivery, error) {
	var (
		dl                            store.Delivery
		status                        string
		first, next, created, updated int64
	)
	dest := append([]any{&dl.ID, &dl.WebhookID, &dl.Seq, &dl.Kind, &status, &dl.Attempts, &first, &next, &dl.Reason, &created, &updated}, extra...)
	if err := row.Scan(dest...); err != nil {
		return dl, err
	}
	dl.Status = store.DeliveryStatus(status)
	dl.FirstDue, dl.NextAt, dl.CreatedAt, dl.UpdatedAt = fromMicro(first), fromMicro(next), fromMicro(created), fromMicro(updated)
	return dl, nil
}

// Deliveries implements store.Webhooks.
func (d *DB) Deliveries(ctx context.Context, a store.Actor, webhookID string, q store.DeliveryQuery) (store.DeliveryPage, error) {
	q, err := store.CheckDeliveryQuery(q)
	if err != nil {
		return store.DeliveryPage{}, err
	}
	w, err := d.Webhook(ctx, a, webhookID)
	if err != nil {
		return store.DeliveryPage{}, err
	}
	where, args := `webhook_id = ?`, []any{w.ID}
	if q.Status != "" {
		where, args = where+` AND status = ?`, append(args, string(q.Status))
	}
	if q.Cursor != "" {
		where, args = where+` AND id < ?`, append(args, q.Cursor)
	}
	rows, err := d.r.QueryContext(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE `+where+` ORDER BY id DESC LIMIT ?`,
		append(args, q.Limit+1)...)
	if err != nil {
		return store.DeliveryPage{}, d.fail(err)
	}
	defer rows.Close()
	page := store.DeliveryPage{Items: []store.Delivery{}}
	for rows.Next() {
		dl, err := scanDelivery(rows)
		if err != nil {
			return page, d.fail(err)
		}
		page.Items = append(page.Items, dl)
	}
	if len(page.Items) > q.Limit {
		page.Items = page.Items[:q.Limit]
		page.NextCursor = page.Items[q.Limit-1].ID
	}
	return page, d.fail(rows.Err())
}

// maxAttemptsShown bounds the attempts Delivery returns (the newest).
const maxAttemptsShown = 200

// Delivery implements store.Webhooks.
func (d *DB) Delivery(ctx context.Context, a store.Actor, webhookID, id string) (store.Delivery, []store.DeliveryAttempt, error) {
	w, err := d.Webhook(ctx, a, webhookID)
	if err != nil {
		return store.Delivery{}, nil, err
	}
	if _, err := uuid.Parse(id); err != nil {
		return store.Delivery{}, nil, store.ErrDeliveryNotFound
	}
	var body []byte
	dl, err := scanDelivery(d.r.QueryRowContext(ctx, `SELECT `+deliveryColumns+`, body FROM webhook_deliveries WHERE id = ? AND webhook_id = ?`,
		id, w.ID), &body)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Delivery{}, nil, store.ErrDeliveryNotFound
	}
	if err != nil {
		return dl, nil, d.fail(err)
	}
	dl.Body = body
	rows, err := d.r.QueryContext(ctx, `SELECT delivery_id, webhook_id, at, status, class, latency_us, error, excerpt, verdict
		FROM webhook_attempts WHERE delivery_id = ? ORDER BY id DESC LIMIT ?`, dl.ID, maxAttemptsShown)
	if err != nil {
		return dl, nil, d.fail(err)
	}
	defer rows.Close()
	out := []store.DeliveryAttempt{}
	for rows.Next() {
		var (
			at        store.DeliveryAttempt
			us, latus int64
		)
		if err := rows.Scan(&at.DeliveryID, &at.WebhookID, &us, &at.Status, &at.Class, &latus, &at.Error, &at.Excerpt, &at.Verdict); err != nil {
			return dl, nil, d.fail(err)
		}
		at.At, at.LatencyMS = fromMicro(us), float64(latus)/1000
		out = append(out, at)
	}
	return dl, out, d.fail(rows.Err())
}

// Redeliver implements store.Webhooks.
func (d *DB) Redeliver(ctx context.Context, a store.Actor, webhookID, id string) (store.Delivery, error) {
	var dl store.Delivery
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		w, err := d.webhook(ctx, tx, a, webhookID)
		if err != nil {
			return err
		}
		if _, err := uuid.Parse(id); err != nil {
			return store.ErrDeliveryNotFound
		}
		now := micro(d.stamp())
		dl, err = scanDelivery(tx.QueryRowContext(ctx, `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, first_due = ?1,
			next_at = ?1, lease = '', lease_until = 0, reason = '', updated_at = ?1
			WHERE id = ?2 AND webhook_id = ?3 AND status != 'pending' RETURNING `+deliveryColumns, now, id, w.ID))
		if errors.Is(err, sql.ErrNoRows) {
			var st string
			if tx.QueryRowContext(ctx, `SELECT status FROM webhook_deliveries WHERE id = ? AND webhook_id = ?`, id, w.ID).Scan(&st) == nil {
				return &store.Error{Code: store.CodeInvalid, Path: "delivery", Msg: "the delivery is pending already: it is being delivered"}
			}
			return store.ErrDeliveryNotFound
		}
		return err
	})
	return dl, err
}

// RedeliverFailed implements store.Webhooks.
func (d *DB) RedeliverFailed(ctx context.Context, a store.Actor, webhookID string, limit int) (int, error) {
	var n int64
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		w, err := d.webhook(ctx, tx, a, webhookID)
		if err != nil {
			return err
		}
		now := micro(d.stamp())
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, first_due = ?1, next_at = ?1,
			lease = '', lease_until = 0, reason = '', updated_at = ?1
			WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ?2 AND status = 'failed' ORDER BY id LIMIT ?3)`, now, w.ID, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// EnqueueTest implements store.Webhooks.
func (d *DB) EnqueueTest(ctx context.Context, a store.Actor, webhookID string, body []byte) (store.Delivery, error) {
	var dl store.Delivery
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		w, err := d.webhook(ctx, tx, a, webhookID)
		if err != nil {
			return err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		now := micro(d.stamp())
		dl, err = scanDelivery(tx.QueryRowContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, seq, kind, body, status, first_due,
			next_at, created_at, updated_at) VALUES (?1, ?2, 0, 'test', ?3, 'pending', ?4, ?4, ?4, ?4) RETURNING `+deliveryColumns,
			id.String(), w.ID, body, now))
		return err
	})
	return dl, err
}

// prunedRead, when set (by tests), runs after WebhookChanges has read the
// pruned mark and before it reads the events.
var prunedRead func()

// WebhookChanges implements store.Webhooks: backlog's read, bounded by
// mark. The single writer commits events in number order, so every event
// at or below a LatestSeq answer has committed.
func (d *DB) WebhookChanges(ctx context.Context, w store.Webhook, mark int64, limit int, withContext bool) ([]store.Change, int64, error) {
	return store.ChangesPastPrunes(ctx, w.Cursor, mark, d.prunedThrough, func(after int64) ([]store.Change, error) {
		var cs []store.Change
		cols, from, args := d.eventsFrom(withContext)
		err := d.readEvents(ctx, `SELECT `+eventColumnsE+`, e.owner_id, e.visibility, e.created_by`+cols+from+` WHERE e.seq > ? AND e.seq <= ?
		AND (e.owner_id = ? AND (e.visibility != 'private' OR e.created_by = ? OR ?)) ORDER BY e.seq LIMIT ?`,
			append(append(append(args, after, mark), actorArgs(w.Actor())...), limit), true, withContext, func(c *store.Change) { cs = append(cs, *c) })
		return cs, err
	}, prunedRead)
}

// prunedThrough is the last event seq Expire pruned (0: none).
func (d *DB) prunedThrough(ctx context.Context) (int64, error) {
	var pruned int64
	err := d.r.QueryRowContext(ctx, `SELECT COALESCE((SELECT through FROM events_pruned WHERE id = 1), 0)`).Scan(&pruned)
	if err != nil {
		return 0, d.fail(err)
	}
	return pruned, nil
}

// AdvanceWebhooks implements store.Webhooks. A round moves most webhooks
// from one cursor to one mark, so the compare-and-sets are grouped by
// (cursor, upto, missed): one statement each, which returns the webhooks
// it moved. A statement per webhook held the single writer for
// milliseconds a round (each was parsed afresh), and breadcrumb writes
// waited behind it. Advances are stored as if one after another: a
// webhook named again starts a new run of groups, after the deliveries
// of the one before.
func (d *DB) AdvanceWebhooks(ctx context.Context, as []store.Advance) ([]error, error) {
	errs := make([]error, len(as))
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		now := micro(d.stamp())
		as, errs := as, errs // each run is cut off the front of both
		var insert *sql.Stmt
		defer func() {
			if insert != nil {
				insert.Close()
			}
		}()
		for len(as) > 0 {
			// The longest run of advances of distinct webhooks.
			n, seen := 0, map[string]bool{}
			for n < len(as) && !seen[as[n].Webhook.ID] {
				seen[as[n].Webhook.ID] = true
				n++
			}
			moved, err := advanceRun(ctx, tx, as[:n])
			if err != nil {
				return err
			}
			for i, a := range as[:n] {
				if !moved[a.Webhook.ID] {
					errs[i] = store.ErrCursorMoved
					continue
				}
				for _, nd := range a.Deliveries {
					if insert == nil {
						if insert, err = tx.PrepareContext(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, seq, kind, body, status,
							first_due, next_at, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6, ?6, ?6)
							ON CONFLICT DO NOTHING`); err != nil {
							return err
						}
					}
					if _, err := insert.ExecContext(ctx, store.EventDeliveryID(a.Webhook.ID, nd.Seq, nd.At), a.Webhook.ID, nd.Seq, nd.Kind, nd.Event, now); err != nil {
						return err
					}
				}
			}
			as, errs = as[n:], errs[n:]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// advanceRun moves the cursors of run, advances of distinct webhooks,
// by one statement per (cursor, upto, missed), and returns the webhooks
// whose cursor was still the one their advance names.
func advanceRun(ctx context.Context, tx *sql.Tx, run []store.Advance) (map[string]bool, error) {
	type step struct{ cursor, upto, missed int64 }
	groups := map[step][]string{}
	var order []step
	for _, a := range run {
		k := step{a.Webhook.Cursor, a.Upto, a.Missed}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], a.Webhook.ID)
	}
	moved := make(map[string]bool, len(run))
	for _, k := range order {
		for chunk := range slices.Chunk(groups[k], leaseChunk) {
			args := []any{k.upto, k.missed, k.cursor}
			for _, id := range chunk {
				args = append(args, id)
			}
			rows, err := tx.QueryContext(ctx, `UPDATE webhooks SET cursor = ?1, missed_through = max(missed_through, ?2)
				WHERE cursor = ?3 AND id IN (`+strings.Repeat(",?", len(chunk))[1:]+`) RETURNING id`, args...)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return nil, err
				}
				moved[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
		}
	}
	return moved, nil
}

type webhookTarget struct {
	owner   string
	url     string
	keys    store.WebhookKeys
	failing time.Time
	hook    store.Webhook
}

// ClaimDeliveries implements store.Webhooks: it ranks the due deliveries
// of each webhook (at most PerWebhook each), takes the oldest due within
// the room of its webhook (1 while failing) and of its owner, and leases
// them. The ranking and the webhooks' targets are read without the
// single writer; the lease, one statement, takes it and leases only what
// is still due, unleased and of an unpaused webhook: a delivery settled,
// leased or paused since the read is left out of the claim. Ranking
// inside the write held the writer for milliseconds a claim, and
// breadcrumb writes waited behind it.
func (d *DB) ClaimDeliveries(ctx context.Context, c store.DeliveryClaim) ([]store.ClaimedDelivery, error) {
	if c.Limit <= 0 || c.PerWebhook <= 0 {
		return nil, nil
	}
	if e := d.corrupt.Load(); e != nil {
		return nil, e
	}
	now := d.stamp()
	ids, hooks, targets, err := d.claimCandidates(ctx, c, now)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	if claimRead != nil {
		claimRead()
	}
	lease := c.Lease
	if lease <= 0 {
		lease = time.Minute
	}
	// One statement leases the whole claim, under one token: a lease
	// names the claim, and each settle names its delivery besides.
	tok, err := uuid.NewRandom()
	if err != nil {
		return nil, err
	}
	leased := make(map[string]store.Delivery, len(ids))
	err = d.queueTx(ctx, func(tx *sql.Tx) error {
		// The lease runs from now, when the claim holds the writer,
		// not from the candidates' read: a claim that waited at the
		// gate would hand out a lease already run out.
		now := d.stamp()
		// A statement takes at most 32,766 parameters, so a large claim
		// is leased in chunks, all in this transaction.
		for chunk := range slices.Chunk(ids, leaseChunk) {
			args := []any{tok.String(), micro(now.Add(lease)), micro(now)}
			for _, id := range chunk {
				args = append(args, id)
			}
			// ?3 comes before the list: its "?"s are numbered on from it.
			// The + keep the planner on the key (one lookup an id), not
			// on an index of every pending delivery.
			rows, err := tx.QueryContext(ctx, `UPDATE webhook_deliveries SET lease = ?1, lease_until = ?2 WHERE +status = 'pending'
				AND +next_at <= ?3 AND lease_until <= ?3 AND (SELECT w.paused_reason FROM webhooks w WHERE w.id = webhook_id) = ''
				AND id IN (`+strings.Repeat(",?", len(chunk))[1:]+`) RETURNING `+deliveryColumns+`, body`, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var body []byte
				dl, err := scanDelivery(rows, &body)
				if err != nil {
					rows.Close()
					return err
				}
				dl.Body = body
				leased[dl.ID] = dl
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []store.ClaimedDelivery
	for i, id := range ids {
		dl, ok := leased[id]
		if !ok {
			continue
		}
		t := targets[hooks[i]]
		out = append(out, store.ClaimedDelivery{Delivery: dl, OwnerID: t.owner, URL: t.url, Keys: t.keys, FailingSince: t.failing,
			Lease: tok.String(), Hook: t.hook})
	}
	return out, nil
}

// claimRead, when set (by tests), runs after ClaimDeliveries has read
// its candidates and before it leases them.
var claimRead func()

// claimCandidatesQuery ranks the due deliveries of a claim at ?1: per
// webhook, its first ?2 (an index range each, so a long backlog of one is
// never scanned whole), from the index of pending deliveries only. Each
// webhook's range of an index of every delivery sat on a page of its own,
// among its settled deliveries, and a claim read one page per webhook,
// again after every commit (a reading connection drops its cache when the
// log changes); pending deliveries are few, and fit on a few pages.
const claimCandidatesQuery = `SELECT d.id, d.webhook_id, w.owner_id, w.failing_since, w.url, w.secret, w.prev_secret, w.prev_until,
	w.agent_id, w.curator, w.payload, w.token_id, w.token_issued FROM webhooks w JOIN webhook_deliveries d ON d.rowid IN (
	SELECT x.rowid FROM webhook_deliveries x WHERE x.webhook_id = w.id AND x.status = 'pending' AND x.next_at <= ?1
	AND x.lease_until <= ?1 ORDER BY x.next_at, x.id LIMIT ?2)
	WHERE w.paused_reason = '' ORDER BY d.next_at, d.id`

// claimCandidates reads, in one statement, the deliveries a claim would
// take at now (in order), their webhooks and those webhooks' targets.
func (d *DB) claimCandidates(ctx context.Context, c store.DeliveryClaim, now time.Time) (ids, hooks []string, targets map[string]*webhookTarget, err error) {
	rows, err := d.r.QueryContext(ctx, claimCandidatesQuery, micro(now), c.PerWebhook)
	if err != nil {
		return nil, nil, nil, d.fail(err)
	}
	taken, ownerTaken := map[string]int{}, map[string]int{}
	targets = map[string]*webhookTarget{}
	for rows.Next() && len(ids) < c.Limit {
		var (
			id, hook       string
			t              webhookTarget
			failing, until int64
			issued         int64
			payload        string
		)
		if err := rows.Scan(&id, &hook, &t.owner, &failing, &t.url, &t.keys.Current, &t.keys.Previous, &until,
			&t.hook.AgentID, &t.hook.Curator, &payload, &t.hook.TokenID, &issued); err != nil {
			rows.Close()
			return nil, nil, nil, d.fail(err)
		}
		if taken[hook] >= c.Room(hook, failing != 0) || ownerTaken[t.owner] >= c.OwnerRoom(t.owner) {
			continue
		}
		taken[hook]++
		ownerTaken[t.owner]++
		ids, hooks = append(ids, id), append(hooks, hook)
		if targets[hook] == nil {
			t.keys.PreviousUntil, t.failing = fromMicro(until), fromMicro(failing)
			t.hook.ID, t.hook.OwnerID, t.hook.Payload, t.hook.TokenIssued = hook, t.owner, store.WebhookPayload(payload), fromMicro(issued)
			targets[hook] = &t
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, nil, d.fail(err)
	}
	return ids, hooks, targets, nil
}

// leaseChunk is how many deliveries one statement of a claim leases.
const leaseChunk = 1000

// SettleDeliveries implements store.Webhooks.
func (d *DB) SettleDeliveries(ctx context.Context, ss []store.Settle) ([]error, error) {
	errs := make([]error, len(ss))
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		now := d.stamp()
		st, err := prepareSettle(ctx, tx)
		if err != nil {
			return err
		}
		defer st.close()
		for i, s := range ss {
			err := st.settle(ctx, now, s)
			if errors.Is(err, store.ErrLeaseLost) {
				errs[i] = err
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// settleStmts are a settle group's statements, prepared once for the
// group: parsing them again for each settle cost more than running them.
type settleStmts struct {
	delivery, recovered, failing, attempt *sql.Stmt
}

func prepareSettle(ctx context.Context, tx *sql.Tx) (*settleStmts, error) {
	var st settleStmts
	for _, p := range []struct {
		to  **sql.Stmt
		sql string
	}{
		{&st.delivery, `UPDATE webhook_deliveries SET status = ?, next_at = ?, attempts = attempts + ?, reason = ?,
			lease = '', lease_until = 0, updated_at = ? WHERE id = ? AND lease = ? AND status = 'pending' RETURNING webhook_id`},
		{&st.recovered, `UPDATE webhooks SET failing_since = 0 WHERE id = ? AND failing_since != 0`},
		{&st.failing, `UPDATE webhooks SET failing_since = ? WHERE id = ? AND failing_since = 0`},
		{&st.attempt, insertAttempt},
	} {
		stmt, err := tx.PrepareContext(ctx, p.sql)
		if err != nil {
			st.close()
			return nil, err
		}
		*p.to = stmt
	}
	return &st, nil
}

func (st *settleStmts) close() {
	for _, s := range []*sql.Stmt{st.delivery, st.recovered, st.failing, st.attempt} {
		if s != nil {
			s.Close()
		}
	}
}

func (st *settleStmts) settle(ctx context.Context, now time.Time, s store.Settle) error {
	if s.Lease == "" {
		return store.ErrLeaseLost
	}
	next := micro(s.NextAt)
	if next == 0 {
		next = micro(now)
	}
	attempted := 0
	if s.Attempted {
		attempted = 1
	}
	var hook string
	err := st.delivery.QueryRowContext(ctx, string(s.Status), next, attempted, store.ValidText(s.Reason), micro(now), s.DeliveryID, s.Lease).Scan(&hook)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrLeaseLost
	}
	if err != nil {
		return err
	}
	switch {
	case s.Status == store.DeliveryDelivered:
		_, err = st.recovered.ExecContext(ctx, hook)
	case !s.Failed.IsZero():
		_, err = st.failing.ExecContext(ctx, micro(s.Failed), hook)
	}
	if err != nil || s.Attempt == nil {
		return err
	}
	_, err = st.attempt.ExecContext(ctx, attemptArgs(*s.Attempt)...)
	return err
}

// PauseRevoked implements store.Webhooks.
func (d *DB) PauseRevoked(ctx context.Context, webhookID, tokenID string, issued time.Time) error {
	return d.queueTx(ctx, func(tx *sql.Tx) error {
		now := micro(d.stamp())
		_, err := tx.ExecContext(ctx, `UPDATE webhooks SET paused_reason = ?1, paused_at = CASE WHEN paused_at = 0 THEN ?2 ELSE paused_at END,
			updated_at = ?2 WHERE id = ?3 AND token_id = ?4 AND token_issued = ?5 AND paused_reason != ?1`,
			store.RevokedReason, now, webhookID, tokenID, micro(issued))
		return err
	})
}

// PauseFailing implements store.Webhooks.
func (d *DB) PauseFailing(ctx context.Context, webhookID string, since time.Time, reason string) error {
	return d.queueTx(ctx, func(tx *sql.Tx) error {
		now := micro(d.stamp())
		_, err := tx.ExecContext(ctx, `UPDATE webhooks SET paused_reason = ?, paused_at = ?, updated_at = ?
			WHERE id = ? AND paused_reason = '' AND failing_since != 0 AND failing_since <= ?`, reason, now, now, webhookID, micro(since))
		return err
	})
}

// TrimDeliveries implements store.Webhooks.
func (d *DB) TrimDeliveries(ctx context.Context, perWebhook int) ([]store.DeliveryBacklog, error) {
	var out []store.DeliveryBacklog
	err := d.queueTx(ctx, func(tx *sql.Tx) error {
		now := micro(d.stamp())
		rows, err := tx.QueryContext(ctx, `SELECT w.id, COUNT(d.id), COALESCE(MIN(d.first_due), 0) FROM webhooks w
			LEFT JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.status = 'pending' GROUP BY w.id ORDER BY w.id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				b      store.DeliveryBacklog
				oldest int64
			)
			if err := rows.Scan(&b.WebhookID, &b.Pending, &oldest); err != nil {
				rows.Close()
				return err
			}
			b.Oldest = fromMicro(oldest)
			out = append(out, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		reason := fmt.Sprintf("backlog over %d pending deliveries: the oldest were dead-lettered", perWebhook)
		for i := range out {
			b := &out[i]
			over := b.Pending - perWebhook
			if perWebhook <= 0 || over <= 0 {
				continue
			}
			res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'failed', reason = ?, updated_at = ?
				WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' AND lease_until <= ?
				ORDER BY first_due, id LIMIT ?)`, reason, now, b.WebhookID, now, over)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			b.Trimmed, b.Pending = int(n), b.Pending-int(n)
			var oldest int64
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MIN(first_due), 0) FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending'`,
				b.WebhookID).Scan(&oldest); err != nil {
				return err
			}
			b.Oldest = fromMicro(oldest)
		}
		return nil
	})
	return out, err
}

// RecordAttempt implements store.Webhooks. An attempt at a delivery
// deleted since (with its webhook) is dropped.
func (d *DB) RecordAttempt(ctx context.Context, at store.DeliveryAttempt) error {
	return d.queueTx(ctx, func(tx *sql.Tx) error { return recordAttempt(ctx, tx, at) })
}

const insertAttempt = `INSERT INTO webhook_attempts (delivery_id, webhook_id, at, status, class, latency_us, error, excerpt, verdict)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ?)`

func attemptArgs(at store.DeliveryAttempt) []any {
	return []any{at.DeliveryID, at.WebhookID, micro(at.At), at.Status, at.Class, int64(at.LatencyMS * 1000), store.CutExcerpt(at.Error),
		store.CutExcerpt(at.Excerpt), at.Verdict, at.DeliveryID}
}

func recordAttempt(ctx context.Context, tx *sql.Tx, at store.DeliveryAttempt) error {
	_, err := tx.ExecContext(ctx, insertAttempt, attemptArgs(at)...)
	return err
}

// notePruned remembers the last event seq Expire is about to prune.
func notePruned(ctx context.Context, tx *sql.Tx, backlog int) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO events_pruned (id, through)
		SELECT 1, m FROM (SELECT MAX(seq) - ? AS m FROM events) WHERE m > 0
		ON CONFLICT (id) DO UPDATE SET through = max(through, excluded.through)`, backlog)
	return err
}

// pruneDeliveries drops attempts, and settled deliveries, older than
// store.DeliveryRetention.
func pruneDeliveries(ctx context.Context, tx *sql.Tx, now time.Time) error {
	horizon := now.Add(-store.DeliveryRetention).UnixMicro()
	if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE at < ?`, horizon); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'failed') AND updated_at < ?`, horizon)
	return err
}

// WatchCommits implements store.CommitWatcher.
func (d *DB) WatchCommits(fn func()) (stop func()) { return d.feed.Watch(fn) }
