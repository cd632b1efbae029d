package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/access"
)

// Revoke implements store.Store. A revocation of an owner's tokens is
// written under that owner's row-level security scope; one that names a
// token of any owner (the operator's) as maintenance.
func (d *DB) Revoke(ctx context.Context, r store.Revocation) (store.Revocation, error) {
	if err := access.ValidateRevocation(&r); err != nil {
		return store.Revocation{}, err
	}
	r.RevokedAt = d.stamp()
	var before *time.Time
	if !r.Before.IsZero() {
		r.Before = r.Before.UTC().Truncate(time.Microsecond)
		before = &r.Before
	}
	sc := scope{owner: r.OwnerID}
	if r.OwnerID == "" {
		sc = scope{system: true}
	}
	err := d.inTx(ctx, sc, func(c *pgxpool.Conn) (*pgx.Batch, error) {
		// Held to the commit: revocations commit in seq order, so a
		// reader that has seen seq N never misses a smaller one later.
		if _, err := c.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(revokeLock)); err != nil {
			return nil, err
		}
		return nil, c.QueryRow(ctx, `INSERT INTO revocations (seq, owner_id, token_id, agent_id, issued_before, revoked_at, revoked_by)
			VALUES (nextval('revocation_seq'), $1, $2, $3, $4, $5, $6) RETURNING seq`,
			r.OwnerID, r.TokenID, r.AgentID, before, r.RevokedAt, r.RevokedBy).Scan(&r.Seq)
	})
	if err != nil {
		return store.Revocation{}, err
	}
	return r, nil
}

// Revocations implements store.Store.
func (d *DB) Revocations(ctx context.Context, after int64) ([]store.Revocation, error) {
	var out []store.Revocation
	err := d.query(ctx, scope{system: true}, `SELECT seq, owner_id, token_id, agent_id, issued_before, revoked_at, revoked_by
		FROM revocations WHERE seq > $1 ORDER BY seq`, []any{after}, func(rows pgx.Rows) error {
		var (
			r      store.Revocation
			before *time.Time
		)
		if err := rows.Scan(&r.Seq, &r.OwnerID, &r.TokenID, &r.AgentID, &before, &r.RevokedAt, &r.RevokedBy); err != nil {
			return err
		}
		if before != nil {
			r.Before = before.UTC()
		}
		r.RevokedAt = r.RevokedAt.UTC()
		out = append(out, r)
		return nil
	})
	return out, err
}
