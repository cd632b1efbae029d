package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
)

// TestReviewUsageLookAlikesHideTraffic: any agent may create breadcrumbs
// of schema gateway.exchange.v1 tagged gateway.exchange (POST
// /breadcrumbs accepts them). GET /gateway/usage scans at most 20,000 of
// them, newest first, sealed or not: an agent that writes 20,000
// look-alikes after its traffic hides every older exchange of its owner
// from the curators' report. The look-alikes are written straight to the
// store here (the same creates POST /breadcrumbs makes, after one made
// through the API), only to keep the test fast.
func TestReviewUsageLookAlikesHideTraffic(t *testing.T) {
	e := newRecEnv(t, "")
	alice := e.token("acme", "alice", "emitter")
	mallory := e.token("acme", "mallory", "emitter")
	curator := e.token("acme", "boss", "curator")
	e.ask(alice, "openai", "gpt-x", "expensive traffic", false)
	e.drain()
	e.records(curator, 1)
	look := map[string]any{"title": "x", "context": map[string]any{"seal": "none"}, "schema_name": server.ExchangeSchema,
		"tags": []string{"gateway.exchange"}, "visibility": "private"}
	if r := e.do("POST", "/breadcrumbs", mallory, look); r.status != 201 {
		t.Fatalf("a look-alike through the API: %d %s", r.status, r.body)
	}
	const n = 20_000
	ctx := context.Background()
	for done := 1; done < n; {
		var cs []store.Creation
		for ; done < n && len(cs) < store.MaxBatch; done++ {
			cs = append(cs, store.Creation{Actor: store.Actor{OwnerID: "acme", AgentID: "mallory"}, In: store.Breadcrumb{
				Title: fmt.Sprint("x", done), Context: json.RawMessage(`{"seal":"none"}`), SchemaName: server.ExchangeSchema,
				Tags: []string{"gateway.exchange"}, Visibility: store.Private}})
		}
		out, err := store.CreateBatch(ctx, e.db, cs)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
		}
	}
	if u := e.usage(curator, ""); u.Total.Requests != 1 || !u.Complete {
		t.Fatalf("the curator's usage after %d look-alikes: %d requests (complete %v), want alice's 1", n, u.Total.Requests, u.Complete)
	}
}
