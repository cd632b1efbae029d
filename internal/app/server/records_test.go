package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/openloop"
	"github.com/ctxkit/ctxkit/store"
)

// A secret the redactor knows (an API key's shape), sent in prompts.
const promptSecret = "sk-live0123456789abcdefghijklmnopqrstuv"

// recEnv is a ctxkit server whose gateway records the route gpt-x (and
// not gpt-plain), in front of a fake OpenAI-type upstream: it answers
// "Hello, world" with usage 100/7, and 500 to a prompt holding "fail500".
type recEnv struct {
	*env
	api      *server.Server
	db       store.Store
	upstream string // the fake upstream's URL
}

func newRecEnv(t testing.TB, records string, tweaks ...func(*server.Options)) *recEnv {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "fail500") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"upstream broke","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, upstreamStream)
	}))
	t.Cleanup(up.Close)
	t.Setenv("CTXKIT_TEST_UPSTREAM_KEY", "sk-upstream")
	// The recording route has the provider's model's name: on this
	// gateway a client model name reaches the provider that lists it.
	cfg := `{"providers":[{"name":"up","type":"openai","base_url":"` + up.URL + `/v1","api_key_env":"CTXKIT_TEST_UPSTREAM_KEY","models":["gpt-plain"]}],` +
		`"routes":[{"model":"gpt-x","targets":[{"provider":"up","model":"gpt-x"}],"record":true}]` + records + `}`
	path := filepath.Join(t.TempDir(), "gateway.json")
	os.WriteFile(path, []byte(cfg), 0o600)
	gc, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	db := newStore(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	opts := server.Options{Store: db, Key: key, MaxBodyBytes: 64 << 10, Gateway: gateway.New(gc, gateway.Options{})}
	for _, f := range tweaks {
		f(&opts)
	}
	api := server.New(opts)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		api.DrainRecords(ctx)
		db.Close()
	})
	return &recEnv{env: &env{t: t, url: srv.URL, key: key}, api: api, db: db, upstream: up.URL}
}

// ask sends a chat request for model through dialect ("anthropic" or
// "openai"), streamed or not, as tok; it must succeed unless the prompt
// asks the upstream to fail.
func (e *recEnv) ask(tok, dialect, model, prompt string, stream bool) reply {
	e.t.Helper()
	msg := fmt.Sprintf(`{"model":%q,"max_tokens":50,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, prompt)
	var r reply
	if dialect == "anthropic" {
		r = e.do("POST", "/v1/messages", "", msg, "x-api-key", tok)
	} else {
		r = e.do("POST", "/v1/chat/completions", tok, msg)
	}
	if r.status != 200 && !strings.Contains(prompt, "fail500") {
		e.t.Fatalf("%s %s: %d %s", dialect, model, r.status, r.body)
	}
	return r
}

// records lists the exchange records tok may list, waiting up to 10 s
// for n of them.
func (e *recEnv) records(tok string, n int) []map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.do("GET", "/breadcrumbs?schema_name="+server.ExchangeSchema+"&include_context=true&limit=500", tok, nil)
		if r.status != 200 {
			e.t.Fatalf("list: %d %s", r.status, r.body)
		}
		var page struct{ Items []map[string]any }
		json.Unmarshal(r.body, &page)
		if len(page.Items) >= n || time.Now().After(deadline) {
			if len(page.Items) != n {
				e.t.Fatalf("%d records listed, want %d", len(page.Items), n)
			}
			return page.Items
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric is the value of a sample of /metrics, 0 when absent.
func (e *recEnv) metric(name string) float64 {
	e.t.Helper()
	r := e.do("GET", "/metrics", e.token("ops", "ops", "curator"), nil)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(r.body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func (e *recEnv) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.api.DrainRecords(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// TestRecordsStored: each exchange of a recording route is a private
// breadcrumb of the caller whose view shows a summary and hides the
// bodies, which /full has: the request as sent, the answer in the
// client's dialect (a stream as the one response it amounts to), secrets
// redacted. Another route's exchanges are not recorded.
func TestRecordsStored(t *testing.T) {
	e := newRecEnv(t, `,"records":{"ttl":"2h"}`)
	tok := e.token("acme", "alice", "emitter")
	e.ask(tok, "anthropic", "gpt-x", "first: my key is "+promptSecret, false)
	e.ask(tok, "openai", "gpt-x", "second, streamed", true)
	e.ask(tok, "openai", "gpt-plain", "not recorded", false)
	e.ask(tok, "openai", "gpt-x", "fail500 please", false)
	e.drain()
	items := e.records(tok, 3)

	byPrompt := map[string]map[string]any{}
	for _, it := range items {
		id := it["id"].(string)
		if it["visibility"] != "private" {
			t.Errorf("record %s is %v, want private", id, it["visibility"])
		}
		full := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil)
		if full.status != 200 {
			t.Fatalf("full: %d %s", full.status, full.body)
		}
		expires := full.json(t)["expires_at"]
		exp, err := time.Parse(time.RFC3339Nano, fmt.Sprint(expires))
		if err != nil || exp.Before(time.Now().Add(119*time.Minute)) || exp.After(time.Now().Add(121*time.Minute)) {
			t.Errorf("record %s expires at %v, want in 2h (records.ttl)", id, expires)
		}
		if strings.Contains(string(full.body), promptSecret) || strings.Contains(string(full.body), "sk-upstream") || strings.Contains(string(full.body), tok) {
			t.Fatalf("a secret is in the record: %s", full.body)
		}
		view := e.do("GET", "/breadcrumbs/"+id, tok, nil)
		var v struct {
			View map[string]any `json:"context"`
		}
		if err := json.Unmarshal(view.body, &v); err != nil || v.View == nil {
			t.Fatalf("view: %d %s", view.status, view.body)
		}
		for _, hidden := range []string{"request", "response", "seal"} {
			if _, ok := v.View[hidden]; ok {
				t.Errorf("the view shows %s: %s", hidden, view.body)
			}
		}
		sum, _ := v.View["summary"].(map[string]any)
		if sum == nil || sum["model"] != "gpt-x" {
			t.Fatalf("view without a summary: %s", view.body)
		}
		var rec struct {
			Context struct {
				Dialect, Route string
				Stream         bool
				Status         int
				ErrorClass     string `json:"error_class"`
				Attempts       []struct {
					Provider, Model, ErrorClass string
					Status                      int
				}
				Usage     *struct{ InputTokens, OutputTokens int64 }
				FirstByte float64 `json:"first_byte_ms"`
				Total     float64 `json:"total_ms"`
				Request   json.RawMessage
				Response  json.RawMessage
				Summary   struct {
					Tokens       int64
					Status       int
					FirstMessage string `json:"first_message"`
					LastMessage  string `json:"last_message"`
				}
			}
		}
		if err := json.Unmarshal(full.body, &rec); err != nil {
			t.Fatal(err)
		}
		c := rec.Context
		if len(c.Attempts) != 1 || c.Attempts[0].Provider != "up" || c.Attempts[0].Model != "gpt-x" || c.Route != "gpt-x" || c.Total <= 0 {
			t.Errorf("record: %s", full.body)
		}
		byPrompt[c.Summary.FirstMessage] = map[string]any{"full": string(full.body), "dialect": c.Dialect, "stream": c.Stream,
			"status": c.Status, "class": c.ErrorClass, "attempt": c.Attempts[0].Status, "tokens": c.Summary.Tokens,
			"last": c.Summary.LastMessage, "response": string(c.Response), "request": string(c.Request), "firstbyte": c.FirstByte}
	}
	first := byPrompt["first: my key is [REDACTED:api_key]"]
	if first == nil {
		t.Fatalf("no record with the redacted first message: %v", byPrompt)
	}
	if first["dialect"] != "anthropic" || first["status"] != 200 || first["tokens"] != int64(107) || first["last"] != "Hello, world" ||
		!strings.Contains(first["request"].(string), `"content":"first: my key is [REDACTED:api_key]"`) ||
		!strings.Contains(first["response"].(string), `"type":"message"`) || first["firstbyte"].(float64) <= 0 {
		t.Errorf("anthropic record: %v", first)
	}
	second := byPrompt["second, streamed"]
	if second == nil || second["stream"] != true || second["dialect"] != "openai" || second["tokens"] != int64(107) ||
		!strings.Contains(second["response"].(string), `"object":"chat.completion"`) || !strings.Contains(second["response"].(string), "Hello, world") {
		t.Errorf("streamed record (the stream as one response): %v", second)
	}
	failed := byPrompt["fail500 please"]
	if failed == nil || failed["status"] != 502 || failed["class"] != "server_error" || failed["attempt"] != 500 ||
		!strings.Contains(failed["response"].(string), "upstream broke") {
		t.Errorf("failed record: %v", failed)
	}
	if n := e.metric("ctxkit_gateway_records_written_total"); n != 3 {
		t.Errorf("written: %v, want 3", n)
	}
}

// TestRecordsIsolation: a record is its caller's: another agent of the
// owner neither reads, lists nor finds it, another owner neither; the
// owner's curators do.
func TestRecordsIsolation(t *testing.T) {
	e := newRecEnv(t, "")
	alice := e.token("acme", "alice", "emitter")
	bob := e.token("acme", "bob", "emitter")
	curator := e.token("acme", "boss", "curator")
	mallory := e.token("evil", "mallory", "curator")
	e.ask(alice, "openai", "gpt-x", "zebracorn plans", false)
	e.drain()
	id := e.records(alice, 1)[0]["id"].(string)
	for who, tok := range map[string]string{"another agent": bob, "another owner": mallory} {
		for _, path := range []string{"/breadcrumbs/" + id, "/breadcrumbs/" + id + "/full"} {
			if r := e.do("GET", path, tok, nil); r.status != 404 {
				t.Errorf("%s GET %s: %d %s", who, path, r.status, r.body)
			}
		}
		if r := e.do("GET", "/breadcrumbs?schema_name="+server.ExchangeSchema, tok, nil); strings.Contains(string(r.body), id) {
			t.Errorf("%s lists the record: %s", who, r.body)
		}
		if r := e.do("GET", "/breadcrumbs/search?q=zebracorn", tok, nil); r.status != 200 || strings.Contains(string(r.body), id) {
			t.Errorf("%s finds the record: %d %s", who, r.status, r.body)
		}
	}
	for who, tok := range map[string]string{"the caller": alice, "a curator": curator} {
		if r := e.do("GET", "/breadcrumbs/search?q=zebracorn", tok, nil); r.status != 200 || !strings.Contains(string(r.body), id) {
			t.Errorf("%s does not find the record by its summary: %d %s", who, r.status, r.body)
		}
		if r := e.do("GET", "/breadcrumbs/"+id+"/full", tok, nil); r.status != 200 {
			t.Errorf("%s cannot read the record: %d", who, r.status)
		}
	}
}

// TestRecordsEvidence: an agent can neither change nor delete its own
// traffic record (403 saying why), so it cannot hide its traffic; the
// record stays as written and counted. The owner's curators may change
// and delete it; another agent does not even see it.
func TestRecordsEvidence(t *testing.T) {
	e := newRecEnv(t, "")
	alice := e.token("acme", "alice", "emitter")
	bob := e.token("acme", "bob", "emitter")
	curator := e.token("acme", "boss", "curator")
	e.ask(alice, "openai", "gpt-x", "traffic to hide", false)
	e.drain()
	id := e.records(alice, 1)[0]["id"].(string)
	for _, c := range []struct {
		method, path string
		body         any
		why          string // what the 403 says
	}{
		{"PATCH", "/breadcrumbs/" + id, map[string]any{"title": "nothing to see"}, "gateway traffic record"},
		{"PATCH", "/breadcrumbs/" + id, map[string]any{"schema_name": "notes"}, "gateway traffic record"},
		{"PATCH", "/breadcrumbs/" + id, map[string]any{"context": map[string]any{"status": 200}}, "gateway traffic record"},
		{"POST", "/breadcrumbs/" + id + "/tags/remove", map[string]any{"tags": []string{"gateway.exchange"}}, "gateway traffic record"},
		{"POST", "/breadcrumbs/" + id + "/context/merge", map[string]any{"context": map[string]any{"usage": nil}}, "gateway traffic record"},
		{"DELETE", "/breadcrumbs/" + id, nil, "curator"},
	} {
		r := e.do(c.method, c.path, alice, c.body)
		var er struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(r.body, &er)
		if r.status != 403 || er.Error.Code != "forbidden" || !strings.Contains(er.Error.Message, c.why) {
			t.Errorf("the record's agent: %s %s: %d %s, want 403 naming %q", c.method, c.path, r.status, r.body, c.why)
		}
		if r := e.do(c.method, c.path, bob, c.body); r.status != 404 && r.status != 403 {
			t.Errorf("another agent: %s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	full := e.do("GET", "/breadcrumbs/"+id+"/full", alice, nil).json(t)
	if full["version"] != 1.0 || full["schema_name"] != server.ExchangeSchema {
		t.Errorf("the record changed: %v", full)
	}
	if u := e.usage(alice, ""); u.Total.Requests != 1 {
		t.Errorf("usage after the attempts: %+v", u)
	}
	if r := e.do("PATCH", "/breadcrumbs/"+id, curator, map[string]any{"description": "reviewed"}); r.status != 200 {
		t.Errorf("a curator's change: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/breadcrumbs/"+id, curator, nil); r.status != 204 {
		t.Errorf("a curator's delete: %d %s", r.status, r.body)
	}
	e.records(alice, 0)
}

// TestRecordsCost: a record says what its exchange cost, a price of 0
// included, or that it had no price ("unpriced", no cost_usd); GET
// /gateway/usage sums the costs and counts the unpriced requests apart.
func TestRecordsCost(t *testing.T) {
	for _, c := range []struct {
		name, prices string
		cost         *float64
	}{
		{"priced", `,"prices":[{"provider":"up","model":"gpt-x","input":1000,"output":2000}]`, ptr(0.114)},
		{"free", `,"prices":[{"provider":"up","model":"gpt-x","input":0,"output":0}]`, ptr(0.0)},
		{"unpriced", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newRecEnv(t, c.prices)
			tok := e.token("acme", "alice", "emitter")
			e.ask(tok, "openai", "gpt-x", "what does this cost", false)
			e.drain()
			var rec struct {
				Context struct {
					CostUSD  *float64 `json:"cost_usd"`
					Unpriced bool
				}
			}
			full := e.do("GET", "/breadcrumbs/"+e.records(tok, 1)[0]["id"].(string)+"/full", tok, nil)
			if err := json.Unmarshal(full.body, &rec); err != nil {
				t.Fatal(err)
			}
			got := rec.Context
			switch {
			case c.cost == nil && (got.CostUSD != nil || !got.Unpriced):
				t.Errorf("an unpriced exchange's record: cost %v, unpriced %v, want no cost and unpriced", got.CostUSD, got.Unpriced)
			case c.cost != nil && (got.CostUSD == nil || math.Abs(*got.CostUSD-*c.cost) > 1e-9 || got.Unpriced):
				t.Errorf("record: cost %v, unpriced %v, want %v", got.CostUSD, got.Unpriced, *c.cost)
			}
			u := e.usage(tok, "")
			wantUnpriced, wantCost := int64(1), 0.0
			if c.cost != nil {
				wantUnpriced, wantCost = 0, *c.cost
			}
			if u.Total.Requests != 1 || u.Total.Unpriced != wantUnpriced || math.Abs(u.Total.CostUSD-wantCost) > 1e-9 {
				t.Errorf("usage: %+v, want unpriced_requests %d and cost_usd %v", u.Total, wantUnpriced, wantCost)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestOpenAPIGatewayHeaders: /openapi.json documents the x-ctxkit-*
// headers of the gateway's chat routes, and every such header a real
// answer carries (a success, with its cost, and an upstream's failure)
// is documented for its route and status.
func TestOpenAPIGatewayHeaders(t *testing.T) {
	e := newRecEnv(t, `,"prices":[{"provider":"up","model":"gpt-x","input":1000,"output":2000}]`)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []map[string]string
			Responses  map[string]struct {
				Headers map[string]any
			}
		}
	}
	if err := json.Unmarshal(e.do("GET", "/openapi.json", "", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1beta/models/{call}"} {
		op := doc.Paths[path]["post"]
		for _, h := range []string{"x-ctxkit-upstream", "x-ctxkit-attempts", "x-ctxkit-cost-usd", "x-ctxkit-context-ids", "x-ctxkit-warnings"} {
			if op.Responses["200"].Headers[h] == nil {
				t.Errorf("POST %s: 200 does not document %s", path, h)
			}
		}
		if op.Responses["502"].Headers["x-ctxkit-upstream"] == nil {
			t.Errorf("POST %s: 502 does not document x-ctxkit-upstream", path)
		}
		if len(op.Parameters) == 0 || !strings.Contains(op.Parameters[0]["$ref"], "ctxkitContext") {
			t.Errorf("POST %s: x-ctxkit-context not documented: %v", path, op.Parameters)
		}
	}
	if doc.Paths["/v1/messages/count_tokens"]["post"].Responses["200"].Headers["x-ctxkit-token-count"] == nil {
		t.Error("count_tokens: x-ctxkit-token-count not documented")
	}
	tok := e.token("acme", "alice", "emitter")
	for _, c := range []struct {
		dialect, path, prompt string
		status                int
		want                  []string
	}{
		{"openai", "/v1/chat/completions", "hello", 200, []string{"x-ctxkit-upstream", "x-ctxkit-attempts", "x-ctxkit-cost-usd"}},
		{"anthropic", "/v1/messages", "hello", 200, []string{"x-ctxkit-upstream", "x-ctxkit-attempts", "x-ctxkit-cost-usd"}},
		{"openai", "/v1/chat/completions", "fail500", 502, []string{"x-ctxkit-upstream", "x-ctxkit-attempts"}},
	} {
		r := e.ask(tok, c.dialect, "gpt-x", c.prompt, false)
		if r.status != c.status {
			t.Fatalf("%s %s: %d %s", c.path, c.prompt, r.status, r.body)
		}
		documented := doc.Paths[c.path]["post"].Responses[strconv.Itoa(c.status)].Headers
		for name := range r.header {
			if h := strings.ToLower(name); strings.HasPrefix(h, "x-ctxkit-") && documented[h] == nil {
				t.Errorf("%s %d carries %s, which /openapi.json does not document", c.path, c.status, h)
			}
		}
		for _, h := range c.want {
			if r.header.Get(h) == "" {
				t.Errorf("%s %d: no %s header", c.path, c.status, h)
			}
		}
	}
}

// slowStore holds every Create until release is closed.
type slowStore struct {
	store.Store
	release chan struct{}
}

func (s slowStore) Create(ctx context.Context, a store.Actor, in store.Breadcrumb, idem store.Idempotency) (store.Breadcrumb, bool, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return store.Breadcrumb{}, false, ctx.Err()
	}
	return s.Store.Create(ctx, a, in, idem)
}

// TestRecordsQueueFull: with the store stuck, a flood of requests is
// answered as fast as ever; the records past the queue (records.queue)
// are dropped and counted, and those queued are written once the store
// moves.
func TestRecordsQueueFull(t *testing.T) {
	release := make(chan struct{})
	e := newRecEnv(t, `,"records":{"queue":4}`, func(o *server.Options) { o.Store = slowStore{Store: o.Store, release: release} })
	tok := e.token("acme", "alice", "emitter")
	// More than the writer's batch (128 records) and the queue together,
	// so that some are dropped however many the writer gathers.
	const flood, batch = 200, 128
	var wg sync.WaitGroup
	start := time.Now()
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do("POST", "/v1/chat/completions", tok, fmt.Sprintf(`{"model":"gpt-x","messages":[{"role":"user","content":"flood %d"}]}`, i))
			if r.status != 200 {
				t.Errorf("request %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the flood took %v with the store stuck: requests waited for records", d)
	}
	// The writer holds a batch in the stuck store (what came while it
	// gathered: at least one record, at most a batch), three wait (an
	// owner may hold three quarters of the queue of four).
	dropped := e.metric(`ctxkit_gateway_records_dropped_total{reason="queue_full"}`) +
		e.metric(`ctxkit_gateway_records_dropped_total{reason="owner_share"}`)
	if dropped > flood-4 || dropped < flood-3-batch {
		t.Errorf("dropped %v, want %d less the writer's batch", dropped, flood-3)
	}
	close(release)
	e.drain()
	if n := e.metric("ctxkit_gateway_records_written_total"); n+dropped != flood {
		t.Errorf("written %v and dropped %v, want %d in all", n, dropped, flood)
	}
	e.records(tok, flood-int(dropped))
	// Drained (shutting down): a request is served, its record counted
	// as dropped.
	e.ask(tok, "openai", "gpt-x", "after the drain", false)
	if n := e.metric(`ctxkit_gateway_records_dropped_total{reason="shutdown"}`); n != 1 {
		t.Errorf("dropped at shutdown: %v, want 1", n)
	}
}

// batchStore is a store.BatchCreator that holds its first batch until
// release is closed and notes the size of every batch.
type batchStore struct {
	store.Store
	release chan struct{}
	mu      sync.Mutex
	sizes   []int
}

func (s *batchStore) CreateBatch(ctx context.Context, cs []store.Creation) ([]store.CreateResult, error) {
	s.mu.Lock()
	first := len(s.sizes) == 0
	s.sizes = append(s.sizes, len(cs))
	s.mu.Unlock()
	if first {
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return store.CreateBatch(ctx, s.Store, cs)
}

// TestRecordsBatched: records queued while the store is busy are
// written together, in one batch (one transaction), and every one of
// them is stored.
func TestRecordsBatched(t *testing.T) {
	bs := &batchStore{release: make(chan struct{})}
	e := newRecEnv(t, "", func(o *server.Options) { bs.Store = o.Store; o.Store = bs })
	tok := e.token("acme", "alice", "emitter")
	const n = 20
	for i := range n {
		e.ask(tok, "openai", "gpt-x", fmt.Sprintf("request %d", i), false)
	}
	close(bs.release)
	e.drain()
	e.records(tok, n)
	bs.mu.Lock()
	defer bs.mu.Unlock()
	sum := 0
	for _, k := range bs.sizes {
		sum += k
	}
	if len(bs.sizes) > 3 || sum != n {
		t.Errorf("batches of %v: the records queued behind the first were not written together", bs.sizes)
	}
	if got := e.metric("ctxkit_gateway_records_written_total"); got != n {
		t.Errorf("written %v, want %d", got, n)
	}
}

// TestRecordsTTL: a record expires records.ttl after it was made, and an
// expired record is neither listed nor summed.
func TestRecordsTTL(t *testing.T) {
	past := time.Now().Add(-2 * time.Hour)
	e := newRecEnv(t, `,"records":{"ttl":"1h"}`, func(o *server.Options) { o.Now = func() time.Time { return past } })
	tok, err := server.Mint(e.key, server.Principal{OwnerID: "acme", AgentID: "alice", Roles: []string{"emitter"}}, 3*time.Hour, past)
	if err != nil {
		t.Fatal(err)
	}
	e.ask(tok, "openai", "gpt-x", "gone soon", false)
	e.drain()
	if n := e.metric("ctxkit_gateway_records_written_total"); n != 1 {
		t.Fatalf("written %v, want 1", n)
	}
	e.records(tok, 0)
	r := e.do("GET", "/gateway/usage", tok, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"requests":0`) {
		t.Errorf("usage counts an expired record: %d %s", r.status, r.body)
	}
}

type usageReply struct {
	GroupBy string `json:"group_by"`
	Groups  []struct {
		Key      string
		Requests int64
		Errors   int64
		Tokens   struct{ Input, Output int64 }
	}
	Total struct {
		Requests, Errors int64
		Unpriced         int64   `json:"unpriced_requests"`
		CostUSD          float64 `json:"cost_usd"`
		Tokens           struct{ Input, Output int64 }
	}
	Complete bool
}

func (e *recEnv) usage(tok, query string) usageReply {
	e.t.Helper()
	r := e.do("GET", "/gateway/usage"+query, tok, nil)
	if r.status != 200 {
		e.t.Fatalf("usage%s: %d %s", query, r.status, r.body)
	}
	var u usageReply
	if err := json.Unmarshal(r.body, &u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// TestGatewayUsage: GET /gateway/usage sums the records of the caller's
// owner the caller may read (an agent its own, a curator all), grouped
// by model, agent or provider, within the range; look-alike breadcrumbs
// an agent writes are not counted; bad parameters are 400 naming them.
func TestGatewayUsage(t *testing.T) {
	e := newRecEnv(t, "")
	alice := e.token("acme", "alice", "emitter")
	bob := e.token("acme", "bob", "emitter")
	curator := e.token("acme", "boss", "curator")
	other := e.token("evil", "mallory", "curator")
	e.ask(alice, "openai", "gpt-x", "one", false)
	e.ask(alice, "anthropic", "gpt-x", "two", true)
	e.ask(alice, "openai", "gpt-x", "fail500", false)
	e.ask(bob, "openai", "gpt-x", "three", false)
	e.drain()
	e.records(curator, 4)

	// A forged record: a copy of a real one, private, with more tokens:
	// refused through the API, and not counted when written to the store
	// directly (its seal does not hold).
	real := e.records(bob, 1)[0]
	full := e.do("GET", "/breadcrumbs/"+real["id"].(string)+"/full", bob, nil).json(t)
	ctx := full["context"].(map[string]any)
	ctx["usage"].(map[string]any)["input_tokens"] = 1e6
	want(t, e.do("POST", "/breadcrumbs", bob, map[string]any{"title": "forged", "context": ctx, "schema_name": server.ExchangeSchema,
		"tags": []string{"gateway.exchange"}, "visibility": "private"}), 403, "only the server writes them")
	forged, _ := json.Marshal(ctx)
	if _, _, err := e.db.Create(context.Background(), store.Actor{OwnerID: "acme", AgentID: "bob"}, store.Breadcrumb{Title: "forged",
		Context: forged, SchemaName: server.ExchangeSchema, Tags: []string{"gateway.exchange"}, Visibility: store.Private}, store.Idempotency{}); err != nil {
		t.Fatal(err)
	}

	u := e.usage(curator, "?group_by=agent")
	if u.GroupBy != "agent" || len(u.Groups) != 2 || u.Total.Requests != 4 || u.Total.Errors != 1 || u.Total.Tokens.Input != 300 || u.Total.Tokens.Output != 21 || !u.Complete {
		t.Fatalf("curator by agent: %+v", u)
	}
	for _, g := range u.Groups {
		want := map[string]int64{"alice": 3, "bob": 1}[g.Key]
		if g.Requests != want {
			t.Errorf("agent %s: %d requests, want %d", g.Key, g.Requests, want)
		}
	}
	if u := e.usage(curator, ""); u.GroupBy != "model" || len(u.Groups) != 1 || u.Groups[0].Key != "gpt-x" || u.Groups[0].Requests != 4 {
		t.Errorf("by model (the default): %+v", u)
	}
	if u := e.usage(curator, "?group_by=provider"); len(u.Groups) != 1 || u.Groups[0].Key != "up" || u.Groups[0].Tokens.Output != 21 {
		t.Errorf("by provider: %+v", u)
	}
	if u := e.usage(alice, "?group_by=agent"); len(u.Groups) != 1 || u.Groups[0].Key != "alice" || u.Total.Requests != 3 || u.Total.Unpriced != 2 {
		t.Errorf("an agent sums its own records: %+v", u)
	}
	if u := e.usage(bob, ""); u.Total.Requests != 1 || u.Total.Tokens.Input != 100 {
		t.Errorf("bob (his forged record not counted): %+v", u)
	}
	if u := e.usage(other, ""); u.Total.Requests != 0 || len(u.Groups) != 0 {
		t.Errorf("another owner: %+v", u)
	}
	now := time.Now().UTC()
	if u := e.usage(curator, "?from="+now.Add(time.Hour).Format(time.RFC3339)+"&to="+now.Add(2*time.Hour).Format(time.RFC3339)); u.Total.Requests != 0 {
		t.Errorf("a range after the records: %+v", u)
	}
	if u := e.usage(curator, "?from="+now.Add(-time.Hour).Format(time.RFC3339)+"&to="+now.Add(time.Hour).Format(time.RFC3339)); u.Total.Requests != 4 {
		t.Errorf("a range around the records: %+v", u)
	}

	for _, c := range []struct{ query, param string }{
		{"?from=yesterday", "from"},
		{"?to=2026-13-01T00:00:00Z", "to"},
		{"?group_by=route", "group_by"},
		{"?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from"},
		{"?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"},
		{"?limit=5", "limit"},
	} {
		r := e.do("GET", "/gateway/usage"+c.query, curator, nil)
		var er struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(r.body, &er)
		if r.status != 400 || !strings.HasPrefix(er.Error.Message, c.param+": ") {
			t.Errorf("%s: %d %s; want 400 naming %s", c.query, r.status, r.body, c.param)
		}
	}
	if r := e.do("GET", "/gateway/usage", "", nil); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
}

// benchRound is a target's turn in BenchmarkRecordOverhead: long beside
// the writer's linger, so that the records of the recording route's turn
// are written in it, nearly all, and their cost is not carried into the
// next target's turn.
const benchRound = time.Second

// BenchmarkRecordOverhead measures, in the same interleaved rounds of an
// open loop (openloop.Rounds: requests on a fixed schedule,
// CTXKIT_RECORD_BENCH_RATE requests/s, default 500, for
// CTXKIT_RECORD_BENCH_DURATION per target, default 5s; latency from the
// scheduled start), three paths to the same fake upstream: straight to
// it, through the gateway's route that does not record, and through the
// route that does. Each route's added p50 is its p50 less the direct
// one's, measured in the same rounds, so a slow moment of a shared
// machine weighs on all three alike; "rec/plain-added-p50" is their
// ratio (the goal: at most 1.1). cpu-µs/record is the process's CPU time
// in the recording route's turns less that in the plain route's, per
// request: what a record costs, which the machine's other work hardly
// changes.
//
// CTXKIT_RECORD_BENCH_VARIANT changes how the records are written
// (server.RecordVariants) to take the ratio apart. alloc-B/req and
// gc/s are the process's allocations per request and collections per
// second in each route's turns, the writer's included; sched-mean-µs
// and sched-p99-µs how long goroutines waited for a processor in them
// (runtime/metrics /sched/latencies). Run the variants one after
// another, several times, and compare within the same rounds: on a
// shared machine a run's ratio moves by more than any one variant
// changes it. What they showed on a loaded 2-core machine: the ratio
// follows the writer's CPU per record, nearly all of it the store's
// write (discard and build stay near 1); neither the commit's flush
// (a commit without it measured the same), nor collections (GOGC=400 alike), nor
// yielding or smaller batches (worse: a commit's CPU is paid per batch)
// take it down.
func BenchmarkRecordOverhead(b *testing.B) {
	e := newRecEnv(b, "")
	if err := server.SetRecordVariant(e.api, os.Getenv("CTXKIT_RECORD_BENCH_VARIANT")); err != nil {
		b.Fatal(err)
	}
	rate, dur := 500, 5*time.Second
	if v := os.Getenv("CTXKIT_RECORD_BENCH_DURATION"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			dur = d
		}
	}
	if v := os.Getenv("CTXKIT_RECORD_BENCH_RATE"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			rate = n
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	send := func(newReq func() *http.Request) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := client.Do(newReq().WithContext(ctx))
			if err != nil {
				return err
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				return err
			}
			if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "Hello") {
				return fmt.Errorf("%d %.200s", res.StatusCode, body)
			}
			return nil
		}
	}
	tok := e.token("acme", "agent", "emitter")
	via := func(model string) func() *http.Request {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":50,"messages":[{"role":"user","content":"hello there, a prompt of a few words"}]}`, model)
		return func() *http.Request {
			r, _ := http.NewRequest("POST", e.url+"/v1/messages", strings.NewReader(body))
			r.Header.Set("x-api-key", tok)
			return r
		}
	}
	direct := func() *http.Request {
		r, _ := http.NewRequest("POST", e.upstream+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("Authorization", "Bearer sk-upstream")
		return r
	}
	targets := []openloop.Target{
		{Name: "direct", Send: send(direct)},
		{Name: "plain", Send: send(via("gpt-plain"))},
		{Name: "rec", Send: send(via("gpt-x"))},
	}
	var (
		lat   = make([][]time.Duration, len(targets))
		sent  = make([]int, len(targets))
		cpu   = make([]time.Duration, len(targets))
		alloc = make([]uint64, len(targets))
		gcs   = make([]uint32, len(targets))
		wall  = make([]time.Duration, len(targets))
		errs  error
		turns int
		cur   = -1
		since time.Duration
		mem   runtime.MemStats
		at    time.Time
		// The scheduler's latencies (how long goroutines waited for a
		// processor), summed per turn.
		sched   = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
		waits   = make([]*metrics.Float64Histogram, len(targets))
		lastLat *metrics.Float64Histogram
	)
	// before is called at the start of every turn: the CPU time,
	// allocations and collections since the last one are that turn's
	// (the warm-up turns are not counted).
	before := func(i int) {
		now := server.ProcessCPU()
		a, n := mem.TotalAlloc, mem.NumGC
		runtime.ReadMemStats(&mem)
		metrics.Read(sched)
		h := sched[0].Value.Float64Histogram()
		h = &metrics.Float64Histogram{Counts: slices.Clone(h.Counts), Buckets: h.Buckets}
		if cur >= 0 && turns > len(targets) && lastLat != nil {
			w := waits[cur]
			if w == nil {
				w = &metrics.Float64Histogram{Counts: make([]uint64, len(h.Counts)), Buckets: h.Buckets}
				waits[cur] = w
			}
			for j := range h.Counts {
				w.Counts[j] += h.Counts[j] - lastLat.Counts[j]
			}
		}
		lastLat = h
		if cur >= 0 && turns > len(targets) {
			cpu[cur] += now - since
			alloc[cur] += mem.TotalAlloc - a
			gcs[cur] += mem.NumGC - n
			wall[cur] += time.Since(at)
		}
		turns++
		cur, since, at = i, now, time.Now()
	}
	for b.Loop() {
		res := openloop.Rounds(context.Background(), targets, openloop.Options{Rate: rate, Total: dur, Round: benchRound}, before)
		before(-1)
		cur, turns = -1, 0
		for i, r := range res {
			lat[i] = append(lat[i], r.Latencies...)
			sent[i] += r.Sent
			if r.Err != nil && errs == nil {
				errs = r.Err
			}
		}
	}
	if errs != nil {
		b.Fatal(errs)
	}
	p50 := func(i int) time.Duration { return openloop.Quantile(lat[i], 0.5) }
	plain, rec := p50(1)-p50(0), p50(2)-p50(0)
	b.ReportMetric(float64(p50(0).Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(plain.Microseconds()), "plain-added-p50-µs")
	b.ReportMetric(float64(rec.Microseconds()), "rec-added-p50-µs")
	b.ReportMetric(float64(rec)/float64(plain), "rec/plain-added-p50")
	b.ReportMetric(float64(openloop.Quantile(lat[1], 0.99).Microseconds()), "plain-p99-µs")
	b.ReportMetric(float64(openloop.Quantile(lat[2], 0.99).Microseconds()), "rec-p99-µs")
	for i, name := range []string{"plain", "rec"} {
		if sec := wall[i+1].Seconds(); sec > 0 {
			// The turns' requests were sent at rate.
			b.ReportMetric(float64(alloc[i+1])/sec/float64(rate), name+"-alloc-B/req")
			b.ReportMetric(float64(gcs[i+1])/wall[i+1].Seconds(), name+"-gc/s")
		}
	}
	for i, name := range []string{"plain", "rec"} {
		if w := waits[i+1]; w != nil {
			b.ReportMetric(histQuantile(w, 0.99)*1e6, name+"-sched-p99-µs")
			b.ReportMetric(histMean(w)*1e6, name+"-sched-mean-µs")
		}
	}
	if cpu[2] > 0 && sent[2] > 0 {
		b.ReportMetric(float64((cpu[2]-cpu[1]).Microseconds())/float64(sent[2]), "cpu-µs/record")
	}
	e.drain()
	b.ReportMetric(e.metric("ctxkit_gateway_records_written_total"), "records-written")
	for _, reason := range []string{"queue_full", "store_error", "shutdown"} {
		b.ReportMetric(e.metric(`ctxkit_gateway_records_dropped_total{reason="`+reason+`"}`), "records-"+reason)
	}
}

// histQuantile is the q quantile of h, the upper bound of its bucket.
func histQuantile(h *metrics.Float64Histogram, q float64) float64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	want := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for j, c := range h.Counts {
		if seen += c; seen >= want && c > 0 {
			return h.Buckets[j+1]
		}
	}
	return 0
}

// histMean is the mean of h, each bucket at its middle (its lower bound
// when unbounded).
func histMean(h *metrics.Float64Histogram) float64 {
	var n uint64
	var sum float64
	for j, c := range h.Counts {
		lo, hi := h.Buckets[j], h.Buckets[j+1]
		mid := lo
		if !math.IsInf(hi, 0) && !math.IsInf(lo, 0) {
			mid = (lo + hi) / 2
		}
		if math.IsInf(mid, 0) {
			continue
		}
		n += c
		sum += float64(c) * mid
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// FuzzGatewayUsage sends arbitrary queries to GET /gateway/usage: each is
// answered 200 with sums, or 400 naming the parameter at fault; never a
// 5xx.
func FuzzGatewayUsage(f *testing.F) {
	for _, seed := range []string{
		"", "group_by=agent", "from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z", "from=x", "to=2026-13-01T00:00:00Z",
		"group_by=route", "from=2020-01-01T00:00:00Z", "limit=1", "from=2026-11-02T00:00:00%2B01:00&group_by=provider", "%zz",
	} {
		f.Add(seed)
	}
	e := newRecEnv(f, "")
	tok := e.token("acme", "alice", "emitter")
	e.ask(tok, "openai", "gpt-x", "a record to sum", false)
	e.drain()
	h := e.api.Handler()
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/gateway/usage", nil)
		req.URL.RawQuery = query
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			var u usageReply
			if json.Unmarshal(rec.Body.Bytes(), &u) != nil || u.Total.Requests > 1 {
				t.Fatalf("%q: %s", query, rec.Body)
			}
		case 400:
			var er struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(rec.Body.Bytes(), &er)
			if er.Error.Code != "invalid" || !strings.Contains(er.Error.Message, ": ") {
				t.Fatalf("%q: 400 without a parameter named: %s", query, rec.Body)
			}
		default:
			t.Fatalf("%q: %d %s", query, rec.Code, rec.Body)
		}
	})
}

// TestGatewayUsageReplayedRecord: a record's context copied unchanged
// into a new breadcrumb (seal and all), by the agent it belongs to or by
// a curator of its owner, adds nothing to /gateway/usage: such a copy is
// refused through the API, and one written to the store directly does
// not count (the seal holds for the one record the server wrote).
func TestGatewayUsageReplayedRecord(t *testing.T) {
	e := newRecEnv(t, "")
	bob := e.token("acme", "bob", "emitter")
	curator := e.token("acme", "boss", "curator")
	e.ask(bob, "openai", "gpt-x", "three", false)
	e.drain()
	real := e.records(bob, 1)[0]
	full := e.do("GET", "/breadcrumbs/"+real["id"].(string)+"/full", bob, nil).json(t)
	ctxJSON, _ := json.Marshal(full["context"])
	for _, tok := range []string{bob, curator} {
		want(t, e.do("POST", "/breadcrumbs", tok, map[string]any{"title": "replayed", "context": full["context"], "schema_name": server.ExchangeSchema,
			"tags": []string{"gateway.exchange"}, "visibility": "private"}), 403, "only the server writes them")
	}
	for _, agent := range []string{"bob", "bob", "boss"} {
		if _, _, err := e.db.Create(context.Background(), store.Actor{OwnerID: "acme", AgentID: agent, Curator: agent == "boss"},
			store.Breadcrumb{Title: "replayed", Context: ctxJSON, SchemaName: server.ExchangeSchema, Tags: []string{"gateway.exchange"}, Visibility: store.Private},
			store.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	if u := e.usage(bob, ""); u.Total.Requests != 1 || u.Total.Tokens.Input != 100 {
		t.Errorf("bob's usage with his record replayed twice: %+v", u)
	}
	if u := e.usage(curator, "?group_by=agent"); u.Total.Requests != 1 || len(u.Groups) != 1 || u.Groups[0].Key != "bob" {
		t.Errorf("the owner's usage with bob's record replayed by him and by a curator: %+v", u)
	}
}

// TestRecordsRedactTokens: a ctxkit token (the caller's own, or any
// other JWT) written into a prompt is redacted in the stored record, in
// the bodies and the excerpts, as the relay's redactor takes out keys;
// the Bearer pattern alone misses a token that follows no "Bearer".
func TestRecordsRedactTokens(t *testing.T) {
	e := newRecEnv(t, "")
	tok := e.token("acme", "alice", "emitter")
	other := e.token("acme", "bob", "emitter")
	e.ask(tok, "openai", "gpt-x", "my token is "+tok+", bob's: "+other+".", false)
	e.ask(tok, "anthropic", "gpt-x", tok, true)
	e.drain()
	for _, it := range e.records(tok, 2) {
		full := e.do("GET", "/breadcrumbs/"+it["id"].(string)+"/full", tok, nil)
		for _, secret := range []string{tok, other} {
			sig := secret[strings.LastIndexByte(secret, '.')+1:]
			if strings.Contains(string(full.body), sig) {
				t.Fatalf("a token is in the record: %s", full.body)
			}
		}
		if !strings.Contains(string(full.body), "[REDACTED:") {
			t.Errorf("nothing redacted: %s", full.body)
		}
	}
}
