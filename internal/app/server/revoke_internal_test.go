package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// growingRevocations is a store whose revocations grow by one at every
// load after a first load of n.
type growingRevocations struct {
	store.Store
	n int64
}

func (g growingRevocations) Revocations(_ context.Context, after int64) ([]store.Revocation, error) {
	var out []store.Revocation
	for seq := after + 1; seq <= max(after+1, g.n); seq++ {
		r := store.Revocation{Seq: seq, OwnerID: "acme", TokenID: "jti-" + strconv.FormatInt(seq, 10)}
		if seq%2 == 0 {
			r = store.Revocation{Seq: seq, OwnerID: "acme", AgentID: "agent-" + strconv.FormatInt(seq, 10), Before: time.Now()}
		}
		out = append(out, r)
	}
	return out, nil
}

// BenchmarkRevocationRefresh: loading one new revocation into a replica
// that holds 100,000 against one that holds 1,000, in one run. A curator
// can record revocations at will, so a refresh must cost what is new, not
// what is held: the ratio stays near 1.
func BenchmarkRevocationRefresh(b *testing.B) {
	ctx := context.Background()
	small, large := &revocations{store: growingRevocations{n: 1000}}, &revocations{store: growingRevocations{n: 100_000}}
	for _, rv := range []*revocations{small, large} {
		if _, err := rv.current(ctx); err != nil {
			b.Fatal(err)
		}
	}
	var ts, tl time.Duration
	for b.Loop() {
		for _, c := range []struct {
			rv *revocations
			t  *time.Duration
		}{{small, &ts}, {large, &tl}} {
			start := time.Now()
			c.rv.stale()
			if _, err := c.rv.current(ctx); err != nil {
				b.Fatal(err)
			}
			*c.t += time.Since(start)
		}
	}
	b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "1k-ns/refresh")
	b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N), "100k-ns/refresh")
	b.ReportMetric(float64(tl)/float64(ts), "100k/1k")
}
