package store

import "context"

// ChangesPastPrunes is a webhook's read of up to its mark after cursor,
// for a backend whose pruned mark (pruned: the last seq Expire pruned, 0
// for none) and events (read: the changes after seq after, at or below
// the mark) are read in two statements. A prune that commits between
// the two takes events the read may then skip, so the pruned mark is
// read again after the events and, when it moved past where the read
// began, the events are read again from it: what a prune took is always
// counted in missedThrough, never passed in silence. Prunes are rare and
// only move on. between, when not nil, runs after each read of the
// pruned mark (tests place a prune there).
func ChangesPastPrunes(ctx context.Context, cursor, mark int64, pruned func(context.Context) (int64, error),
	read func(after int64) ([]Change, error), between func()) (cs []Change, missedThrough int64, err error) {
	p, err := pruned(ctx)
	if err != nil {
		return nil, 0, err
	}
	for {
		if between != nil {
			between()
		}
		after, missed := cursor, int64(0)
		if p > after {
			missed, after = p, p
		}
		if after >= mark {
			return nil, missed, nil
		}
		cs, err := read(after)
		if err != nil {
			return nil, 0, err
		}
		again, err := pruned(ctx)
		if err != nil {
			return nil, 0, err
		}
		if again <= p || again <= after {
			return cs, missed, nil
		}
		p = again
	}
}
