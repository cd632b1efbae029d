package server_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// TestLookAlikeRecordsRefused: GET /gateway/usage reads a bounded number
// of traffic records, newest first, so look-alikes written through the
// API could crowd the real ones out of the report. Neither a create nor
// a change (schema, tags, through PATCH or tags/add) may make a
// breadcrumb pass for one, for any role; the report keeps alice's record.
func TestLookAlikeRecordsRefused(t *testing.T) {
	e := newRecEnv(t, "")
	alice := e.token("acme", "alice", "emitter")
	mallory := e.token("acme", "mallory", "emitter")
	curator := e.token("acme", "boss", "curator")
	e.ask(alice, "openai", "gpt-x", "expensive traffic", false)
	e.drain()
	e.records(curator, 1)
	for _, tok := range []string{mallory, curator} {
		for _, look := range []map[string]any{
			{"title": "x", "context": map[string]any{}, "schema_name": server.ExchangeSchema},
			{"title": "x", "context": map[string]any{}, "tags": []string{"gateway.exchange"}},
		} {
			want(t, e.do("POST", "/breadcrumbs", tok, look), 403, "only the server writes them")
		}
	}
	id := e.create(mallory, map[string]any{"title": "plain", "context": map[string]any{}})
	want(t, e.do("PATCH", "/breadcrumbs/"+id, mallory, map[string]any{"schema_name": server.ExchangeSchema}), 403, "only the server writes them")
	want(t, e.do("POST", "/breadcrumbs/"+id+"/tags/add", curator, map[string]any{"tags": []string{"gateway.exchange"}}), 403, "only the server writes them")
	if u := e.usage(curator, ""); u.Total.Requests != 1 || !u.Complete {
		t.Fatalf("the curator's usage: %d requests (complete %v), want alice's 1", u.Total.Requests, u.Complete)
	}
}
