package server

import (
	"context"
	"fmt"
	"runtime"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/store"
)

// RecordVariants are the ways BenchmarkRecordOverhead can have the
// records written (CTXKIT_RECORD_BENCH_VARIANT), to take the cost
// recording adds to a request apart:
//
//   - "": as a server writes them.
//   - discard: the writer takes the records from the queue and drops
//     them: what is left is capturing the exchange and queueing it.
//   - build: the writer makes each record's breadcrumb (redaction,
//     encoding, seal) and drops it: the writer's CPU without the store.
//   - full, normal: the records written with synchronous FULL (as ""
//     does, through the variants' write path: a control), or NORMAL
//     (not flushed by their own commit: the sqlite store's
//     CreateBatchUnflushed).
//   - yield: the writer yields the processor (runtime.Gosched) after
//     each record it makes.
//   - small: batches of at most 8 records, without waiting for more.
var RecordVariants = []string{"", "discard", "build", "full", "normal", "yield", "small"}

// SetRecordVariant makes s write its records the variant's way; s must
// not have recorded anything yet.
func SetRecordVariant(s *Server, variant string) error {
	rc := s.records
	if rc == nil {
		return fmt.Errorf("the server records nothing")
	}
	commit := func(flush bool) func(cs []store.Creation, xs []*gateway.Exchange) {
		return func(cs []store.Creation, xs []*gateway.Exchange) {
			if len(cs) == 0 {
				return
			}
			un, ok := rc.s.opts.Store.(interface {
				CreateBatchUnflushed(context.Context, []store.Creation) ([]store.CreateResult, error)
			})
			var (
				out []store.CreateResult
				err error
			)
			if !flush && ok {
				out, err = un.CreateBatchUnflushed(rc.ctx, cs)
			} else {
				out, err = store.CreateBatch(rc.ctx, rc.s.opts.Store, cs)
			}
			for i, x := range xs {
				e := err
				if e == nil {
					e = out[i].Err
				}
				if e != nil {
					rc.lost(x, e)
					continue
				}
				rc.written.Inc()
			}
		}
	}
	switch variant {
	case "":
	case "discard":
		rc.keepBatch = func(batch []*gateway.Exchange) {
			for _, x := range batch {
				rc.queued.Add(-int64(len(x.Request) + len(x.Response)))
				rc.written.Inc()
			}
		}
	case "build":
		rc.keepBatch = func(batch []*gateway.Exchange) {
			cs, _ := rc.build(batch, nil)
			rc.written.Add(float64(len(cs)))
		}
	case "full", "normal":
		c := commit(variant == "full")
		rc.keepBatch = func(batch []*gateway.Exchange) { c(rc.build(batch, nil)) }
	case "yield":
		c := commit(true)
		rc.keepBatch = func(batch []*gateway.Exchange) { c(rc.build(batch, runtime.Gosched)) }
	case "small":
		rc.batchMax, rc.linger = 8, 0
	default:
		return fmt.Errorf("CTXKIT_RECORD_BENCH_VARIANT: %q is not one of %q", variant, RecordVariants)
	}
	return nil
}
