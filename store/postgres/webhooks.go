package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctxkit/ctxkit/store"
)

// micro is t in Unix microseconds, 0 for the zero time.
func micro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

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

// tx runs f in a transaction scoped to sc; f does its own reads and
// writes on c.
func (d *DB) tx(ctx context.Context, sc scope, f func(c *pgxpool.Conn) error) error {
	return d.inTx(ctx, sc, func(c *pgxpool.Conn) (*pgx.Batch, error) { return nil, f(c) })
}

var system = scope{system: true}

// queue is the scope of the webhook queue's own writes: fan-out rounds
// (AdvanceWebhooks), leases (ClaimDeliveries), settles and lease
// releases (SettleDeliveries), attempts (RecordAttempt) and backlog trims
// (TrimDeliveries). Their commits do not wait for the WAL flush
// (synchronous_commit off, for the transaction only): under load they
// are hundreds a second, and breadcrumb writes, whose commits do wait,
// queued behind their flushes. A crash of the ctxkit process loses
// nothing of them; a crash of the database server can lose the last of
// them (those of its last 3 × wal_writer_delay at most), never part of
// one, and never one a flushed commit follows: the next breadcrumb write
// or webhook change flushes them too. At-least-once delivery absorbs the
// loss. A lost fan-out is made again from its cursor, moved in the same
// transaction (its events are durable: their writes were flushed); had
// one of its deliveries been sent, the event comes again under the same
// webhook-id (store.EventDeliveryID), which the receiver drops. A lost lease was never needed. A lost
// settle repeats its delivery, a duplicate the receiver drops by its
// webhook-id; a lost release or trim leaves its deliveries pending, to
// be sent or trimmed again; a lost attempt is a line missing from a
// delivery's history. What a user asks for and waits on (webhook
// create, patch, delete, secret rotation, redeliveries, test messages),
// the pauses (rare, and a paused webhook waits on its user) and Expire's
// sweep (once a period) keep the flush, as breadcrumb writes do.
var queue = scope{system: true, queue: true}

const webhookColumns = `id, owner_id, agent_id, curator, url, selector, payload, description, paused_reason, paused_at,
	failing_since, cursor, missed_through, created_at, updated_at, token_id, token_issued`

func scanWebhook(row pgx.Row) (store.Webhook, error) {
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

// CreateWebhook implements store.Webhooks. The agent's creates are
// serialized by an advisory lock, as subscriptions' are.
func (d *DB) CreateWebhook(ctx context.Context, a store.Actor, in store.Webhook) (store.Webhook, store.WebhookKeys, error) {
	var keys store.WebhookKeys
	secret, err := store.NewWebhookSecret()
	if err != nil {
		return store.Webhook{}, keys, err
	}
	w, err := store.NewWebhook(a, in, 0, d.stamp())
	if err != nil {
		return w, keys, err
	}
	sel, err := json.Marshal(w.Selector)
	if err != nil {
		return w, keys, err
	}
	// The newest event of any owner: the webhook receives what commits
	// from then on.
	if w.Cursor, err = d.LatestSeq(ctx); err != nil {
		return store.Webhook{}, keys, err
	}
	err = d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		if _, err := c.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext('webhook/' || $2 || '/' || $3))`, int32(subscriptionLock), a.OwnerID, a.AgentID); err != nil {
			return err
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE owner_id = $1 AND agent_id = $2`, a.OwnerID, a.AgentID).Scan(&n); err != nil {
			return err
		}
		if n >= store.MaxWebhooks {
			return store.ErrTooManyWebhooks
		}
		_, err := c.Exec(ctx, `INSERT INTO webhooks (id, owner_id, agent_id, curator, url, selector, payload, description,
			secret, cursor, created_at, updated_at, token_id, token_issued) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
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
	return d.webhooks(ctx, scope{owner: a.OwnerID}, `WHERE owner_id = $1 AND agent_id = $2 ORDER BY id`, a.OwnerID, a.AgentID)
}

// AllWebhooks implements store.Webhooks.
func (d *DB) AllWebhooks(ctx context.Context) ([]store.Webhook, error) {
	return d.webhooks(ctx, system, `ORDER BY id`)
}

func (d *DB) webhooks(ctx context.Context, sc scope, where string, args ...any) ([]store.Webhook, error) {
	out := []store.Webhook{}
	err := d.query(ctx, sc, `SELECT `+webhookColumns+` FROM webhooks `+where, args, func(rows pgx.Rows) error {
		w, err := scanWebhook(rows)
		out = append(out, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Webhook implements store.Webhooks.
func (d *DB) Webhook(ctx context.Context, a store.Actor, id string) (store.Webhook, error) {
	var w store.Webhook
	err := d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		var err error
		w, err = webhookIn(ctx, c, a, id, false)
		return err
	})
	return w, err
}

// webhookIn reads one of a's webhooks in the transaction on c, locking
// its row with lock.
func webhookIn(ctx context.Context, c *pgxpool.Conn, a store.Actor, id string, lock bool) (store.Webhook, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Webhook{}, store.ErrWebhookNotFound
	}
	q := `SELECT ` + webhookColumns + ` FROM webhooks WHERE id = $1 AND owner_id = $2 AND agent_id = $3`
	if lock {
		q += ` FOR UPDATE`
	}
	w, err := scanWebhook(c.QueryRow(ctx, q, u.String(), a.OwnerID, a.AgentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Webhook{}, store.ErrWebhookNotFound
	}
	return w, err
}

// UpdateWebhook implements store.Webhooks.
func (d *DB) UpdateWebhook(ctx context.Context, a store.Actor, id string, p store.WebhookPatch) (store.Webhook, error) {
	var w store.Webhook
	err := d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		var err error
		if w, err = webhookIn(ctx, c, a, id, true); err != nil {
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
		err = c.QueryRow(ctx, `UPDATE webhooks SET url = $1, selector = $2, description = $3, paused_reason = $4, paused_at = $5,
			updated_at = $6, curator = $8, token_id = $9, token_issued = $10`+failingSet+` WHERE id = $7 RETURNING failing_since`,
			w.URL, string(sel), w.Description, w.PausedReason, pausedAt, micro(w.UpdatedAt), w.ID, w.Curator, w.TokenID,
			micro(w.TokenIssued)).Scan(&failing)
		w.FailingSince = microPtr(failing)
		return err
	})
	return w, err
}

// DeleteWebhook implements store.Webhooks.
func (d *DB) DeleteWebhook(ctx context.Context, a store.Actor, id string) error {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.ErrWebhookNotFound
	}
	return d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		ct, err := c.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND owner_id = $2 AND agent_id = $3`, u.String(), a.OwnerID, a.AgentID)
		if err != nil {
			return err
		}
		if ct.RowsAffected() == 0 {
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
	err = d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		var err error
		if w, err = webhookIn(ctx, c, a, id, true); err != nil {
			return err
		}
		if err := c.QueryRow(ctx, `SELECT secret FROM webhooks WHERE id = $1`, w.ID).Scan(&keys.Previous); err != nil {
			return err
		}
		keys.Current, keys.PreviousUntil = secret, now.Add(overlap)
		w.UpdatedAt = now
		_, err = c.Exec(ctx, `UPDATE webhooks SET secret = $1, prev_secret = $2, prev_until = $3, updated_at = $4 WHERE id = $5`,
			keys.Current, keys.Previous, micro(keys.PreviousUntil), micro(now), w.ID)
		return err
	})
	if err != nil {
		return store.Webhook{}, store.WebhookKeys{}, err
	}
	return w, keys, nil
}

const deliveryColumns = `id, webhook_id, seq, kind, status, attempts, first_due, next_at, reason, created_at, updated_at`

func scanDelivery(row pgx.Row, extra ...any) (store.Delivery, error) {
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
	page := store.DeliveryPage{Items: []store.Delivery{}}
	err = d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		w, err := webhookIn(ctx, c, a, webhookID, false)
		if err != nil {
			return err
		}
		rows, err := c.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = $1
			AND ($2 = '' OR status = $2) AND ($3 = '' OR id < $3) ORDER BY id DESC LIMIT $4`, w.ID, string(q.Status), q.Cursor, q.Limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			dl, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			page.Items = append(page.Items, dl)
		}
		return rows.Err()
	})
	if len(page.Items) > q.Limit {
		page.Items = page.Items[:q.Limit]
		page.NextCursor = page.Items[q.Limit-1].ID
	}
	return page, err
}

// maxAttemptsShown bounds the attempts Delivery returns (the newest).
const maxAttemptsShown = 200

// Delivery implements store.Webhooks.
func (d *DB) Delivery(ctx context.Context, a store.Actor, webhookID, id string) (store.Delivery, []store.DeliveryAttempt, error) {
	var (
		dl  store.Delivery
		ats = []store.DeliveryAttempt{}
	)
	if _, err := uuid.Parse(id); err != nil {
		return dl, nil, store.ErrDeliveryNotFound
	}
	err := d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		w, err := webhookIn(ctx, c, a, webhookID, false)
		if err != nil {
			return err
		}
		var body []byte
		dl, err = scanDelivery(c.QueryRow(ctx, `SELECT `+deliveryColumns+`, body FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2`,
			id, w.ID), &body)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrDeliveryNotFound
		}
		if err != nil {
			return err
		}
		dl.Body = body
		rows, err := c.Query(ctx, `SELECT delivery_id, webhook_id, at, status, class, latency_us, error, excerpt, verdict
			FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id DESC LIMIT $2`, dl.ID, maxAttemptsShown)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				at        store.DeliveryAttempt
				us, latus int64
			)
			if err := rows.Scan(&at.DeliveryID, &at.WebhookID, &us, &at.Status, &at.Class, &latus, &at.Error, &at.Excerpt, &at.Verdict); err != nil {
				return err
			}
			at.At, at.LatencyMS = fromMicro(us), float64(latus)/1000
			ats = append(ats, at)
		}
		return rows.Err()
	})
	if err != nil {
		return store.Delivery{}, nil, err
	}
	return dl, ats, nil
}

// Redeliver implements store.Webhooks.
func (d *DB) Redeliver(ctx context.Context, a store.Actor, webhookID, id string) (store.Delivery, error) {
	var dl store.Delivery
	if _, err := uuid.Parse(id); err != nil {
		return dl, store.ErrDeliveryNotFound
	}
	err := d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		w, err := webhookIn(ctx, c, a, webhookID, false)
		if err != nil {
			return err
		}
		now := micro(d.stamp())
		dl, err = scanDelivery(c.QueryRow(ctx, `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, first_due = $1,
			next_at = $1, lease = '', lease_until = 0, reason = '', updated_at = $1
			WHERE id = $2 AND webhook_id = $3 AND status <> 'pending' RETURNING `+deliveryColumns, now, id, w.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			var st string
			if c.QueryRow(ctx, `SELECT status FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2`, id, w.ID).Scan(&st) == nil {
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
	err := d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		w, err := webhookIn(ctx, c, a, webhookID, false)
		if err != nil {
			return err
		}
		now := micro(d.stamp())
		ct, err := c.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, first_due = $1, next_at = $1,
			lease = '', lease_until = 0, reason = '', updated_at = $1
			WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = $2 AND status = 'failed' ORDER BY id LIMIT $3 FOR UPDATE)`,
			now, w.ID, limit)
		n = ct.RowsAffected()
		return err
	})
	return int(n), err
}

// EnqueueTest implements store.Webhooks.
func (d *DB) EnqueueTest(ctx context.Context, a store.Actor, webhookID string, body []byte) (store.Delivery, error) {
	var dl store.Delivery
	err := d.tx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) error {
		w, err := webhookIn(ctx, c, a, webhookID, false)
		if err != nil {
			return err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		now := micro(d.stamp())
		dl, err = scanDelivery(c.QueryRow(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, owner_id, seq, kind, body, status, first_due,
			next_at, created_at, updated_at) VALUES ($1, $2, $3, 0, 'test', $4, 'pending', $5, $5, $5, $5) RETURNING `+deliveryColumns,
			id.String(), w.ID, w.OwnerID, body, now))
		return err
	})
	return dl, err
}

// prunedRead, when set (by tests), runs before WebhookChanges reads.
var prunedRead func()

// WebhookChanges implements store.Webhooks in one statement, which reads
// the pruned mark (the last event seq Expire pruned) and the events past
// it and past the cursor: both in one snapshot, and Expire notes its mark
// in the transaction that prunes, so no event past the mark read is
// missing from the read, and a prune that commits meanwhile is seen by
// the next round. What a prune took is counted in missedThrough, never
// passed in silence, with no second read of the mark
// (store.ChangesPastPrunes, for a backend that reads them apart). The
// read is bounded by mark, a LatestSeq answer, and so takes no event lock
// (actorChanges): the fan-out's one read under the lock a round is its
// LatestSeq, however many webhooks it reads for.
func (d *DB) WebhookChanges(ctx context.Context, w store.Webhook, mark int64, limit int, withContext bool) ([]store.Change, int64, error) {
	if prunedRead != nil {
		prunedRead()
	}
	var pruned int64
	cs, err := d.changes(ctx, w.Actor(), w.Cursor, mark, limit, withContext, &pruned)
	if err != nil {
		return nil, 0, err
	}
	if pruned <= w.Cursor {
		pruned = 0
	}
	return cs, pruned, nil
}

// AdvanceWebhooks implements store.Webhooks in two round trips
// whatever the number of webhooks: BEGIN and the cursors'
// compare-and-sets, in webhook id order (as SettleDeliveries locks
// webhooks, so the two never wait on each other in a cycle); then the
// deliveries of those that moved, inserted by one statement, with
// COMMIT. The compare-and-set makes one replica's fan-out win: another's
// UPDATE waits on the row lock and then finds the cursor moved. A
// webhook advanced twice in as is advanced in a second wave (a round
// trip more), after the first.
func (d *DB) AdvanceWebhooks(ctx context.Context, as []store.Advance) ([]error, error) {
	errs := make([]error, len(as))
	keys := make([]string, len(as))
	for i, a := range as {
		keys[i] = a.Webhook.ID
	}
	err := d.pipeTx(ctx, queue, func(p *txPipe) error {
		now := micro(d.stamp())
		for _, wave := range waves(keys) {
			order := slices.Clone(wave)
			slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(as[i].Webhook.ID, as[j].Webhook.ID) })
			b := &pgx.Batch{}
			for _, i := range order {
				errs[i] = nil
				a := as[i]
				b.Queue(`UPDATE webhooks SET cursor = $1, missed_through = GREATEST(missed_through, $2) WHERE id = $3 AND cursor = $4`,
					a.Upto, a.Missed, a.Webhook.ID, a.Webhook.Cursor)
			}
			br, err := p.send(b, false)
			if err != nil {
				return err
			}
			for _, i := range order {
				ct, err := br.Exec()
				if err != nil {
					br.Close()
					return err
				}
				if ct.RowsAffected() == 0 {
					errs[i] = store.ErrCursorMoved
				}
			}
			if err := br.Close(); err != nil {
				return err
			}
		}
		var (
			ids, hooks, kinds []string
			seqs              []int64
			bodies            [][]byte
		)
		for i, a := range as {
			if errs[i] != nil {
				continue
			}
			for _, nd := range a.Deliveries {
				ids, hooks = append(ids, store.EventDeliveryID(a.Webhook.ID, nd.Seq, nd.At)), append(hooks, a.Webhook.ID)
				seqs, kinds, bodies = append(seqs, nd.Seq), append(kinds, nd.Kind), append(bodies, nd.Event)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		// The owner is the webhook row's, not the caller's value: this
		// runs under the system scope, and a delivery filed under another
		// owner would be hidden from its own and count against the other.
		writes := &pgx.Batch{}
		writes.Queue(`INSERT INTO webhook_deliveries (id, webhook_id, owner_id, seq, kind, body, status, first_due, next_at, created_at, updated_at)
			SELECT v.id, v.webhook_id, w.owner_id, v.seq, v.kind, v.body, 'pending', $1, $1, $1, $1
			FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::bytea[]) AS v(id, webhook_id, seq, kind, body)
			JOIN webhooks w ON w.id = v.webhook_id
			ON CONFLICT DO NOTHING`, now, ids, hooks, seqs, kinds, bodies)
		br, err := p.send(writes, true)
		if err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// ClaimDeliveries implements store.Webhooks in two round trips, each
// one statement: the due deliveries of each webhook are ranked (at most
// PerWebhook each) without locks, those within the room of their webhook
// (1 while failing) and of their owner are chosen, oldest due first,
// then those chosen are leased with FOR UPDATE SKIP LOCKED, which checks
// each again under its lock: one another replica leased in between is
// skipped.
func (d *DB) ClaimDeliveries(ctx context.Context, c store.DeliveryClaim) ([]store.ClaimedDelivery, error) {
	if c.Limit <= 0 || c.PerWebhook <= 0 {
		return nil, nil
	}
	now := d.stamp()
	taken, ownerTaken := map[string]int{}, map[string]int{}
	var ids []string
	// Per webhook, its first PerWebhook due deliveries (an index range
	// each), so a long backlog of one is never scanned whole.
	err := d.query(ctx, system, `SELECT d.id, d.webhook_id, w.owner_id, w.failing_since FROM webhooks w CROSS JOIN LATERAL (
		SELECT x.id, x.webhook_id, x.next_at FROM webhook_deliveries x WHERE x.webhook_id = w.id AND x.status = 'pending'
		AND x.next_at <= $1 AND x.lease_until <= $1 ORDER BY x.next_at, x.id LIMIT $2) d
		WHERE w.paused_reason = '' ORDER BY d.next_at, d.id`, []any{micro(now), c.PerWebhook}, func(rows pgx.Rows) error {
		var (
			id, hook, owner string
			failing         int64
		)
		if err := rows.Scan(&id, &hook, &owner, &failing); err != nil {
			return err
		}
		if len(ids) >= c.Limit || taken[hook] >= c.Room(hook, failing != 0) || ownerTaken[owner] >= c.OwnerRoom(owner) {
			return nil
		}
		taken[hook]++
		ownerTaken[owner]++
		ids = append(ids, id)
		return nil
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	lease := c.Lease
	if lease <= 0 {
		lease = time.Minute
	}
	tok, err := uuid.NewRandom()
	if err != nil {
		return nil, err
	}
	var out []store.ClaimedDelivery
	// One statement, atomic on its own; it checks the webhook is still
	// not paused (paused since the ranking, its deliveries stay pending,
	// unleased). Each chosen delivery is locked by
	// a lookup of its own (the LIMIT keeps the subquery from being
	// flattened into a join), so the plan is by primary key whatever the
	// planner believes of the table: with statistics older than the
	// queue's last minutes it would scan every pending delivery instead.
	err = d.query(ctx, queue, `UPDATE webhook_deliveries d SET lease = $1, lease_until = $2
		FROM webhooks w WHERE w.id = d.webhook_id AND w.paused_reason = '' AND d.id = ANY(ARRAY(
			SELECT x.id FROM unnest($3::text[]) AS u(id) CROSS JOIN LATERAL (
				SELECT id FROM webhook_deliveries WHERE id = u.id AND status = 'pending' AND lease_until <= $4
				LIMIT 1 FOR UPDATE SKIP LOCKED) x))
		RETURNING d.id, d.webhook_id, d.seq, d.kind, d.status, d.attempts, d.first_due, d.next_at, d.reason, d.created_at, d.updated_at,
			d.body, w.owner_id, w.url, w.secret, w.prev_secret, w.prev_until, w.failing_since, w.agent_id, w.curator, w.payload,
			w.token_id, w.token_issued`,
		[]any{tok.String(), micro(now.Add(lease)), ids, micro(now)}, func(rows pgx.Rows) error {
			var (
				cd             store.ClaimedDelivery
				until, failing int64
				issued         int64
				payload        string
				body           []byte
				err            error
			)
			cd.Delivery, err = scanDelivery(rows, &body, &cd.OwnerID, &cd.URL, &cd.Keys.Current, &cd.Keys.Previous, &until, &failing,
				&cd.Hook.AgentID, &cd.Hook.Curator, &payload, &cd.Hook.TokenID, &issued)
			if err != nil {
				return err
			}
			cd.Body = body
			cd.Hook.ID, cd.Hook.OwnerID, cd.Hook.Payload, cd.Hook.TokenIssued = cd.WebhookID, cd.OwnerID, store.WebhookPayload(payload), fromMicro(issued)
			cd.Keys.PreviousUntil, cd.FailingSince, cd.Lease = fromMicro(until), fromMicro(failing), tok.String()
			out = append(out, cd)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SettleDeliveries implements store.Webhooks in two round trips
// whatever the number of settles: BEGIN, the settles' webhooks locked
// FOR KEY SHARE in id order, and the deliveries' updates, one
// statement each (a lookup by primary key, whatever the planner believes
// of the table, and in order, so a delivery settled twice in ss keeps
// the first settle); then, with COMMIT, each webhook's failing_since
// takes the value its settles in order leave (one statement per webhook,
// in id order, as AdvanceWebhooks locks webhooks, so the two never wait
// on each other in a cycle) and the attempts are inserted by one
// statement.
func (d *DB) SettleDeliveries(ctx context.Context, ss []store.Settle) ([]error, error) {
	errs := make([]error, len(ss))
	err := d.pipeTx(ctx, queue, func(p *txPipe) error {
		now := d.stamp()
		hooks := make([]string, len(ss)) // of each settle that held its lease
		b := &pgx.Batch{}
		var queued []int
		for i, s := range ss {
			errs[i] = nil
			if s.Lease == "" {
				errs[i] = store.ErrLeaseLost
				continue
			}
			next := micro(s.NextAt)
			if next == 0 {
				next = micro(now)
			}
			attempted := 0
			if s.Attempted {
				attempted = 1
			}
			b.Queue(`UPDATE webhook_deliveries SET status = $1, next_at = $2, attempts = attempts + $3, reason = $4,
				lease = '', lease_until = 0, updated_at = $5 WHERE id = $6 AND lease = $7 AND status = 'pending' RETURNING webhook_id`,
				string(s.Status), next, attempted, store.ValidText(s.Reason), micro(now), s.DeliveryID, s.Lease)
			queued = append(queued, i)
		}
		if len(queued) == 0 {
			return nil
		}
		// The webhooks first, in id order, as DeleteWebhook locks its
		// webhook before the cascade reaches its deliveries: locked the
		// other way round, a settle and a DELETE deadlock. KEY SHARE does
		// not conflict with the NO KEY UPDATE of cursor and failing_since
		// updates, so settles, advances and PATCHes do not queue on it.
		ids := make([]string, len(queued))
		for k, i := range queued {
			ids[k] = ss[i].DeliveryID
		}
		locks := &pgx.Batch{}
		locks.Queue(`SELECT id FROM webhooks WHERE id IN (SELECT webhook_id FROM webhook_deliveries WHERE id = ANY($1::text[]))
			ORDER BY id FOR KEY SHARE`, ids)
		locks.QueuedQueries = append(locks.QueuedQueries, b.QueuedQueries...)
		br, err := p.send(locks, false)
		if err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		for _, i := range queued {
			err := br.QueryRow().Scan(&hooks[i])
			if errors.Is(err, pgx.ErrNoRows) {
				errs[i] = store.ErrLeaseLost
				continue
			}
			if err != nil {
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		writes := &pgx.Batch{}
		queueFailing(writes, ss, hooks)
		queueAttempts(writes, ss, hooks)
		if br, err = p.send(writes, true); err != nil {
			return err
		}
		return br.Close()
	})
	// A value PostgreSQL refuses is the settle's, not a context's (the
	// path d.fail gives a write it cannot store).
	if se := (*store.Error)(nil); errors.As(err, &se) && se.Path == "context" {
		se.Path = "settle"
	}
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// failingChange is what a settle group does to one webhook's
// failing_since: a success clears it and a failure sets it when clear,
// so in order the last success (if any) clears it and the first failure
// after sets it.
type failingChange struct {
	cleared bool  // a success: the value is set whatever it was
	since   int64 // the value left: 0, or the failure's start
}

// queueFailing queues the failing_since updates of the settles that held
// their lease (hooks[i] set), one per webhook, in webhook id order.
func queueFailing(b *pgx.Batch, ss []store.Settle, hooks []string) {
	changes := map[string]*failingChange{}
	for i, s := range ss {
		if hooks[i] == "" {
			continue
		}
		ch := changes[hooks[i]]
		switch {
		case s.Status == store.DeliveryDelivered:
			if ch == nil {
				ch = &failingChange{}
				changes[hooks[i]] = ch
			}
			ch.cleared, ch.since = true, 0
		case !s.Failed.IsZero():
			if ch == nil {
				ch = &failingChange{}
				changes[hooks[i]] = ch
			}
			if ch.since == 0 {
				ch.since = micro(s.Failed)
			}
		}
	}
	ids := make([]string, 0, len(changes))
	for id := range changes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ch := changes[id]
		// Cleared by a success: set to the value left unless it is that
		// already; else (failures only) set when not failing.
		b.Queue(`UPDATE webhooks SET failing_since = $2 WHERE id = $1
			AND CASE WHEN $3 THEN failing_since <> $2 ELSE failing_since = 0 END`, id, ch.since, ch.cleared)
	}
}

// queueAttempts queues one insert of the attempts of the settles that
// held their lease, in the order of ss (attempts are listed by id).
func queueAttempts(b *pgx.Batch, ss []store.Settle, hooks []string) {
	var (
		ids, classes, errTexts, excerpts, verdicts []string
		ats, latencies                             []int64
		statuses                                   []int32
	)
	for i, s := range ss {
		if hooks[i] == "" || s.Attempt == nil {
			continue
		}
		at := s.Attempt
		ids, classes, verdicts = append(ids, at.DeliveryID), append(classes, at.Class), append(verdicts, at.Verdict)
		errTexts, excerpts = append(errTexts, store.CutExcerpt(at.Error)), append(excerpts, store.CutExcerpt(at.Excerpt))
		ats, latencies, statuses = append(ats, micro(at.At)), append(latencies, int64(at.LatencyMS*1000)), append(statuses, int32(at.Status))
	}
	if len(ids) == 0 {
		return
	}
	// An attempt at a delivery deleted since (with its webhook) is
	// dropped, as RecordAttempt drops it.
	b.Queue(`INSERT INTO webhook_attempts (delivery_id, webhook_id, owner_id, at, status, class, latency_us, error, excerpt, verdict)
		SELECT d.id, d.webhook_id, d.owner_id, a.at, a.status, a.class, a.latency_us, a.error, a.excerpt, a.verdict
		FROM unnest($1::text[], $2::bigint[], $3::integer[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[])
			WITH ORDINALITY AS a(delivery_id, at, status, class, latency_us, error, excerpt, verdict, n)
		JOIN webhook_deliveries d ON d.id = a.delivery_id ORDER BY a.n`,
		ids, ats, statuses, classes, latencies, errTexts, excerpts, verdicts)
}

// waves splits the indexes of keys into waves in which each key is at
// most once, each key's indexes in order, the first wave holding the
// first index of every key: a statement over a wave's rows touches each
// row once, and the waves one after another do what one statement per
// index in order would.
func waves(keys []string) [][]int {
	var out [][]int
	seen := make(map[string]int, len(keys)) // key → waves it is in
	for i, k := range keys {
		w := seen[k]
		seen[k] = w + 1
		if w == len(out) {
			out = append(out, nil)
		}
		out[w] = append(out[w], i)
	}
	return out
}

// PauseRevoked implements store.Webhooks.
func (d *DB) PauseRevoked(ctx context.Context, webhookID, tokenID string, issued time.Time) error {
	return d.tx(ctx, system, func(c *pgxpool.Conn) error {
		now := micro(d.stamp())
		_, err := c.Exec(ctx, `UPDATE webhooks SET paused_reason = $1, paused_at = CASE WHEN paused_at = 0 THEN $2 ELSE paused_at END,
			updated_at = $2 WHERE id = $3 AND token_id = $4 AND token_issued = $5 AND paused_reason <> $1`,
			store.RevokedReason, now, webhookID, tokenID, micro(issued))
		return err
	})
}

// PauseFailing implements store.Webhooks.
func (d *DB) PauseFailing(ctx context.Context, webhookID string, since time.Time, reason string) error {
	return d.tx(ctx, system, func(c *pgxpool.Conn) error {
		now := micro(d.stamp())
		_, err := c.Exec(ctx, `UPDATE webhooks SET paused_reason = $1, paused_at = $2, updated_at = $2
			WHERE id = $3 AND paused_reason = '' AND failing_since <> 0 AND failing_since <= $4`, reason, now, webhookID, micro(since))
		return err
	})
}

// TrimDeliveries implements store.Webhooks.
func (d *DB) TrimDeliveries(ctx context.Context, perWebhook int) ([]store.DeliveryBacklog, error) {
	var out []store.DeliveryBacklog
	err := d.tx(ctx, queue, func(c *pgxpool.Conn) error {
		out = out[:0]
		now := micro(d.stamp())
		rows, err := c.Query(ctx, `SELECT w.id, COUNT(d.id), COALESCE(MIN(d.first_due), 0) FROM webhooks w
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
			ct, err := c.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', reason = $1, updated_at = $2
				WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = $3 AND status = 'pending' AND lease_until <= $2
				ORDER BY first_due, id LIMIT $4 FOR UPDATE SKIP LOCKED)`, reason, now, b.WebhookID, over)
			if err != nil {
				return err
			}
			n := int(ct.RowsAffected())
			b.Trimmed, b.Pending = n, b.Pending-n
			var oldest int64
			if err := c.QueryRow(ctx, `SELECT COALESCE(MIN(first_due), 0) FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'`,
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
	return d.tx(ctx, queue, func(c *pgxpool.Conn) error { return recordAttempt(ctx, c, at) })
}

func recordAttempt(ctx context.Context, c *pgxpool.Conn, at store.DeliveryAttempt) error {
	_, err := c.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, webhook_id, owner_id, at, status, class, latency_us, error, excerpt, verdict)
		SELECT id, webhook_id, owner_id, $2, $3, $4, $5, $6, $7, $8 FROM webhook_deliveries WHERE id = $1`,
		at.DeliveryID, micro(at.At), at.Status, at.Class, int64(at.LatencyMS*1000), store.CutExcerpt(at.Error),
		store.CutExcerpt(at.Excerpt), at.Verdict)
	return err
}

// queuePrune queues, in Expire's maintenance transaction, the note of the
// last event seq about to be pruned, and the pruning of attempts and
// settled deliveries older than store.DeliveryRetention.
func queuePrune(batch *pgx.Batch, now time.Time, backlog int) {
	batch.Queue(`INSERT INTO events_pruned (id, through)
		SELECT 1, m FROM (SELECT MAX(seq) - $1 AS m FROM events) x WHERE m > 0
		ON CONFLICT (id) DO UPDATE SET through = GREATEST(events_pruned.through, excluded.through)`, backlog)
	horizon := now.Add(-store.DeliveryRetention).UnixMicro()
	batch.Queue(`DELETE FROM webhook_attempts WHERE at < $1`, horizon)
	batch.Queue(`DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'failed') AND updated_at < $1`, horizon)
}

// WatchCommits implements store.CommitWatcher.
func (d *DB) WatchCommits(fn func()) (stop func()) { return d.feed.Watch(fn) }
