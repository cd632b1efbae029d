package server

import (
	"context"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// TestRecordQueueIsShared: the traffic-record queue is one FIFO for
// every owner, bounded in count and bytes only. One owner's agents that
// send requests faster than the store writes fill it, and then every
// other owner's records are dropped (queue_full): another owner's
// evidence is lost to a flood it did not make. An owner's share must be
// bounded so that a record of an owner with nothing queued is kept.
func TestRecordQueueIsShared(t *testing.T) {
	rc := testRecorder(t)
	rc.start.Do(func() {}) // no writer: the queue holds what is queued
	flood := func() *gateway.Exchange {
		return &gateway.Exchange{Caller: gateway.Caller{Owner: "flooder", Agent: "a"}, Route: "m", Request: []byte(`{}`)}
	}
	for range cap(rc.queue) + 10 {
		rc.Record(context.Background(), flood())
	}
	victim := &gateway.Exchange{Caller: gateway.Caller{Owner: "victim", Agent: "v"}, Route: "m", Request: []byte(`{}`)}
	rc.Record(context.Background(), victim)
	kept := false
	for len(rc.queue) > 0 {
		if x := <-rc.queue; x == victim {
			kept = true
		}
	}
	if !kept {
		t.Fatalf("the only record of owner victim was dropped: owner flooder holds all %d places of the queue", cap(rc.queue))
	}
}
