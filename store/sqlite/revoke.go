package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/access"
)

// Revoke implements store.Store.
func (d *DB) Revoke(ctx context.Context, r store.Revocation) (store.Revocation, error) {
	if err := access.ValidateRevocation(&r); err != nil {
		return store.Revocation{}, err
	}
	r.RevokedAt = d.stamp()
	var before any
	if !r.Before.IsZero() {
		r.Before = r.Before.UTC().Truncate(time.Microsecond)
		before = r.Before.UnixMicro()
	}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO revocations (owner_id, token_id, agent_id, issued_before, revoked_at, revoked_by)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING seq`,
			r.OwnerID, r.TokenID, r.AgentID, before, r.RevokedAt.UnixMicro(), r.RevokedBy).Scan(&r.Seq)
	})
	if err != nil {
		return store.Revocation{}, err
	}
	return r, nil
}

// Revocations implements store.Store. Writes are serialized, so a seq is
// visible only after every smaller one is.
func (d *DB) Revocations(ctx context.Context, after int64) ([]store.Revocation, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT seq, owner_id, token_id, agent_id, issued_before, revoked_at, revoked_by
		FROM revocations WHERE seq > ? ORDER BY seq`, after)
	if err != nil {
		return nil, d.fail(err)
	}
	defer rows.Close()
	var out []store.Revocation
	for rows.Next() {
		var (
			r      store.Revocation
			before sql.NullInt64
			at     int64
		)
		if err := rows.Scan(&r.Seq, &r.OwnerID, &r.TokenID, &r.AgentID, &before, &at, &r.RevokedBy); err != nil {
			return nil, d.fail(err)
		}
		if before.Valid {
			r.Before = time.UnixMicro(before.Int64).UTC()
		}
		r.RevokedAt = time.UnixMicro(at).UTC()
		out = append(out, r)
	}
	return out, d.fail(rows.Err())
}
