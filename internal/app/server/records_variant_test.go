package server

import (
	"fmt"
	"runtime"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
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
//   - yield: the writer yields the processor (runtime.Gosched) after
//     each record it makes.
//   - small: batches of at most 8 records, without waiting for more.
var RecordVariants = []string{"", "discard", "build", "yield", "small"}

// SetRecordVariant makes s write its records the variant's way; s must
// not have recorded anything yet.
func SetRecordVariant(s *Server, variant string) error {
	rc := s.records
	if rc == nil {
		return fmt.Errorf("the server records nothing")
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
	case "yield":
		rc.keepBatch = func(batch []*gateway.Exchange) { rc.commit(rc.build(batch, runtime.Gosched)) }
	case "small":
		rc.batchMax, rc.linger = 8, 0
	default:
		return fmt.Errorf("CTXKIT_RECORD_BENCH_VARIANT: %q is not one of %q", variant, RecordVariants)
	}
	return nil
}
