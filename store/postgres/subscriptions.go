package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctxkit/ctxkit/store"
)

// CreateSubscription implements store.Store. The agent's creates are
// serialized by an advisory lock held to the commit, so the count and the
// insert see the same rows on every replica.
func (d *DB) CreateSubscription(ctx context.Context, a store.Actor, in store.Subscription) (store.Subscription, error) {
	sub, err := store.NewSubscription(a, in, d.stamp())
	if err != nil {
		return store.Subscription{}, err
	}
	sel, err := json.Marshal(sub.Selector)
	if err != nil {
		return store.Subscription{}, err
	}
	err = d.inTx(ctx, scope{owner: a.OwnerID}, func(c *pgxpool.Conn) (*pgx.Batch, error) {
		if _, err := c.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, int32(subscriptionLock), a.OwnerID, a.AgentID); err != nil {
			return nil, err
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT COUNT(*) FROM subscriptions WHERE owner_id = $1 AND agent_id = $2`, a.OwnerID, a.AgentID).Scan(&n); err != nil {
			return nil, err
		}
		if n >= store.MaxSubscriptions {
			return nil, store.ErrTooManySubscriptions
		}
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO subscriptions (id, owner_id, agent_id, name, description, selector, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, sub.ID, sub.OwnerID, sub.AgentID, sub.Name, sub.Description, string(sel), sub.CreatedAt)
		return batch, nil
	})
	if err != nil {
		return store.Subscription{}, err
	}
	return sub, nil
}

const subscriptionColumns = `id, owner_id, agent_id, name, description, selector, created_at`

// Subscriptions implements store.Store.
func (d *DB) Subscriptions(ctx context.Context, a store.Actor) ([]store.Subscription, error) {
	out := []store.Subscription{}
	err := d.query(ctx, scope{owner: a.OwnerID}, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE owner_id = $1 AND agent_id = $2 ORDER BY id`, []any{a.OwnerID, a.AgentID}, func(rows pgx.Rows) error {
		sub, err := scanSubscription(rows)
		out = append(out, sub)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Subscription implements store.Store.
func (d *DB) Subscription(ctx context.Context, a store.Actor, id string) (store.Subscription, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Subscription{}, store.ErrSubscriptionNotFound
	}
	var (
		sub   store.Subscription
		found bool
	)
	err = d.query(ctx, scope{owner: a.OwnerID}, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE id = $1 AND owner_id = $2 AND agent_id = $3`, []any{u.String(), a.OwnerID, a.AgentID}, func(rows pgx.Rows) error {
		var err error
		sub, err = scanSubscription(rows)
		found = err == nil
		return err
	})
	if err != nil {
		return store.Subscription{}, err
	}
	if !found {
		return store.Subscription{}, store.ErrSubscriptionNotFound
	}
	return sub, nil
}

// DeleteSubscription implements store.Store.
func (d *DB) DeleteSubscription(ctx context.Context, a store.Actor, id string) error {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.ErrSubscriptionNotFound
	}
	found := false
	err = d.inTx(ctx, scope{owner: a.OwnerID}, func(*pgxpool.Conn) (*pgx.Batch, error) {
		batch := &pgx.Batch{}
		batch.Queue(`DELETE FROM subscriptions WHERE id = $1 AND owner_id = $2 AND agent_id = $3`, u.String(), a.OwnerID, a.AgentID).
			Exec(func(ct pgconn.CommandTag) error {
				found = ct.RowsAffected() > 0
				return nil
			})
		return batch, nil
	})
	if err != nil {
		return err
	}
	if !found {
		return store.ErrSubscriptionNotFound
	}
	return nil
}

func scanSubscription(rows pgx.Rows) (store.Subscription, error) {
	var (
		sub store.Subscription
		sel string
	)
	if err := rows.Scan(&sub.ID, &sub.OwnerID, &sub.AgentID, &sub.Name, &sub.Description, &sel, &sub.CreatedAt); err != nil {
		return sub, err
	}
	sub.CreatedAt = sub.CreatedAt.UTC()
	var err error
	if sub.Selector, err = store.ParseSelector([]byte(sel)); err != nil {
		return sub, fmt.Errorf("subscription %s: stored selector: %w", sub.ID, err)
	}
	return sub, nil
}
