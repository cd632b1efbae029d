package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/google/uuid"
)

// CreateSubscription implements store.Store. Writes are serialized, so
// the count and the insert see the same rows.
func (d *DB) CreateSubscription(ctx context.Context, a store.Actor, in store.Subscription) (store.Subscription, error) {
	sub, err := store.NewSubscription(a, in, d.stamp())
	if err != nil {
		return store.Subscription{}, err
	}
	sel, err := json.Marshal(sub.Selector)
	if err != nil {
		return store.Subscription{}, err
	}
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM subscriptions WHERE owner_id = ? AND agent_id = ?`, a.OwnerID, a.AgentID).Scan(&n); err != nil {
			return err
		}
		if n >= store.MaxSubscriptions {
			return store.ErrTooManySubscriptions
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO subscriptions (id, owner_id, agent_id, name, description, selector, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, sub.ID, sub.OwnerID, sub.AgentID, sub.Name, sub.Description, string(sel), sub.CreatedAt.UnixMicro())
		return err
	})
	if err != nil {
		return store.Subscription{}, err
	}
	return sub, nil
}

const subscriptionColumns = `id, owner_id, agent_id, name, description, selector, created_at`

// Subscriptions implements store.Store.
func (d *DB) Subscriptions(ctx context.Context, a store.Actor) ([]store.Subscription, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE owner_id = ? AND agent_id = ? ORDER BY id`, a.OwnerID, a.AgentID)
	if err != nil {
		return nil, d.fail(err)
	}
	defer rows.Close()
	out := []store.Subscription{}
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, d.fail(rows.Err())
}

// Subscription implements store.Store.
func (d *DB) Subscription(ctx context.Context, a store.Actor, id string) (store.Subscription, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Subscription{}, store.ErrSubscriptionNotFound
	}
	sub, err := scanSubscription(d.r.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE id = ? AND owner_id = ? AND agent_id = ?`, u.String(), a.OwnerID, a.AgentID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Subscription{}, store.ErrSubscriptionNotFound
	}
	return sub, d.fail(err)
}

// DeleteSubscription implements store.Store.
func (d *DB) DeleteSubscription(ctx context.Context, a store.Actor, id string) error {
	u, err := uuid.Parse(id)
	if err != nil {
		return store.ErrSubscriptionNotFound
	}
	return d.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM subscriptions WHERE id = ? AND owner_id = ? AND agent_id = ?`, u.String(), a.OwnerID, a.AgentID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrSubscriptionNotFound
		}
		return nil
	})
}

func scanSubscription(row interface{ Scan(...any) error }) (store.Subscription, error) {
	var (
		sub store.Subscription
		sel string
		at  int64
	)
	if err := row.Scan(&sub.ID, &sub.OwnerID, &sub.AgentID, &sub.Name, &sub.Description, &sel, &at); err != nil {
		return sub, err
	}
	sub.CreatedAt = time.UnixMicro(at).UTC()
	var err error
	if sub.Selector, err = store.ParseSelector([]byte(sel)); err != nil {
		return sub, fmt.Errorf("subscription %s: stored selector: %w", sub.ID, err)
	}
	return sub, nil
}
