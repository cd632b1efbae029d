package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
	"github.com/ctxkit/ctxkit/internal/webhook"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/postgres"
	"github.com/ctxkit/ctxkit/store/sqlite"
)

// reopenable is a store that can be closed and opened again on the same
// data: a restart of the server.
type reopenable func(t testing.TB) store.Store

func reopenableStore(t testing.TB) reopenable {
	if os.Getenv("CTXKIT_TEST_STORE") == "postgres" {
		url := pgtest.Shared(t).NewDatabase(t)
		return func(t testing.TB) store.Store {
			db, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}
	}
	path := filepath.Join(t.TempDir(), "ctxkit.db")
	return func(t testing.TB) store.Store {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
}

// hookEnv is a server on loopback running its webhook delivery.
type hookEnv struct {
	*env
	stop func() // stops delivery, the server and the store
}

// fastHooks are webhook options for tests: loopback receivers, quick
// polls and retries.
func fastHooks(o *server.Options) {
	o.Webhooks.AllowPrivate = true
	o.Webhooks.Poll = 20 * time.Millisecond
	o.Webhooks.Policy.Base = 5 * time.Millisecond
	o.Webhooks.Policy.MaxBackoff = 20 * time.Millisecond
	o.Webhooks.Timeout = 5 * time.Second
}

func newHookEnv(t *testing.T, db store.Store, key ed25519.PrivateKey, run bool, tweaks ...func(*server.Options)) *hookEnv {
	t.Helper()
	if key == nil {
		_, key, _ = ed25519.GenerateKey(rand.Reader)
	}
	opts := server.Options{Store: db, Key: key, MaxBodyBytes: 64 << 10}
	fastHooks(&opts)
	for _, f := range tweaks {
		f(&opts)
	}
	api := server.New(opts)
	srv := httptest.NewServer(api.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if run {
		go func() { done <- api.RunWebhooks(ctx) }()
	} else {
		done <- nil
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("RunWebhooks: %v", err)
			}
			api.StopStreams()
			srv.Close()
			db.Close()
		})
	}
	t.Cleanup(stop)
	return &hookEnv{env: &env{t: t, url: srv.URL, key: key}, stop: stop}
}

// receiver is a webhook endpoint on loopback that keeps what it gets and
// answers with status(n) for its n-th request (from 1).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	status func(n int) int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	rc := &receiver{status: status}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		n := len(rc.got)
		st := http.StatusOK
		if rc.status != nil {
			st = rc.status(n)
		}
		rc.mu.Unlock()
		w.WriteHeader(st)
		fmt.Fprintf(w, "answer %d", n)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// waitUntil polls cond for up to 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type createdHook struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

func (e *hookEnv) createHook(tok, url, selector, payload string) createdHook {
	e.t.Helper()
	body := fmt.Sprintf(`{"url": %q, "selector": %s, "payload": %q, "description": "test"}`, url, selector, payload)
	r := e.do("POST", "/webhooks", tok, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create webhook: %d %s", r.status, r.body)
	}
	var h createdHook
	if err := json.Unmarshal(r.body, &h); err != nil || !strings.HasPrefix(h.Secret, "whsec_") {
		e.t.Fatalf("create webhook: %s (%v)", r.body, err)
	}
	return h
}

func (e *hookEnv) write(tok, body string) string {
	e.t.Helper()
	r := e.do("POST", "/breadcrumbs", tok, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create breadcrumb: %d %s", r.status, r.body)
	}
	return r.json(e.t)["id"].(string)
}

func secret(t *testing.T, s string) webhook.Secret {
	t.Helper()
	sec, err := webhook.ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

type hookBody struct {
	Type      string          `json:"type"`
	Seq       int64           `json:"seq"`
	Kind      string          `json:"kind"`
	Event     store.Event     `json:"event"`
	Payload   json.RawMessage `json:"payload"`
	Withheld  string          `json:"withheld"`
	Truncated bool            `json:"truncated"`
}

// TestWebhookDelivers: a breadcrumb write reaches the webhook signed as
// Standard Webhooks says (verified), with the record's view as payload;
// the selector filters by tags and context, and another agent's private
// record never arrives.
func TestWebhookDelivers(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	rc := newReceiver(t, nil)
	alice := e.token("acme", "alice", server.RoleEmitter)
	bob := e.token("acme", "bob", server.RoleEmitter)
	h := e.createHook(alice, rc.srv.URL+"/hook?token=x",
		`{"any_tags": ["deploy"], "context_match": [{"path": "$.env", "op": "eq", "value": "prod"}]}`, "")
	e.write(bob, `{"title": "bob private", "tags": ["deploy"], "context": {"env": "prod"}, "visibility": "private"}`)
	e.write(alice, `{"title": "staging", "tags": ["deploy"], "context": {"env": "staging"}}`)
	e.write(alice, `{"title": "untagged", "context": {"env": "prod"}}`)
	id := e.write(alice, `{"title": "prod", "tags": ["deploy"], "context": {"env": "prod", "secret": "s3"},
		"llm_hints": {"exclude": ["secret"]}}`)
	waitUntil(t, "a delivery", func() bool { return len(rc.requests()) >= 1 })
	time.Sleep(200 * time.Millisecond) // anything else that would come
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1: %s", len(got), got[len(got)-1].body)
	}
	req := got[0]
	if err := webhook.Verify(req.header, req.body, time.Now(), webhook.DefaultTolerance, secret(t, h.Secret)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	var b hookBody
	if err := json.Unmarshal(req.body, &b); err != nil {
		t.Fatal(err)
	}
	if b.Type != "breadcrumb.created" || b.Event.BreadcrumbID != id || b.Seq == 0 {
		t.Fatalf("body %s", req.body)
	}
	var view map[string]any
	json.Unmarshal(b.Payload, &view)
	if ctx, _ := view["context"].(map[string]any); ctx["env"] != "prod" || ctx["secret"] != nil {
		t.Fatalf("payload is not the view: %s", b.Payload)
	}
	// The delivery and its attempt, as the owner agent sees them.
	r := e.do("GET", "/webhooks/"+h.ID+"/deliveries?status=delivered", alice, nil)
	var page struct {
		Items []struct {
			ID       string `json:"id"`
			Attempts int    `json:"attempts"`
		} `json:"items"`
	}
	if json.Unmarshal(r.body, &page); r.status != 200 || len(page.Items) != 1 || page.Items[0].ID != req.header.Get("webhook-id") {
		t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	waitUntil(t, "the attempt recorded", func() bool {
		r = e.do("GET", "/webhooks/"+h.ID+"/deliveries/"+page.Items[0].ID, alice, nil)
		return strings.Contains(string(r.body), `"verdict"`)
	})
	if r.status != 200 || !strings.Contains(string(r.body), `"verdict":"delivered"`) || !strings.Contains(string(r.body), "answer 1") {
		t.Fatalf("delivery: %d %s", r.status, r.body)
	}
	// A full payload webhook gets the whole record, and a test message.
	full := newReceiver(t, nil)
	hf := e.createHook(alice, full.srv.URL, `{"kinds": ["updated"]}`, "full")
	if r := e.do("PATCH", "/breadcrumbs/"+id, alice, `{"title": "prod v2"}`); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/webhooks/"+hf.ID+"/test", alice, nil); r.status != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	waitUntil(t, "the full delivery and the test", func() bool { return len(full.requests()) >= 2 })
	var sawFull, sawTest bool
	for _, q := range full.requests() {
		if err := webhook.Verify(q.header, q.body, time.Now(), webhook.DefaultTolerance, secret(t, hf.Secret)); err != nil {
			t.Fatal(err)
		}
		sawFull = sawFull || strings.Contains(string(q.body), `"secret":"s3"`)
		sawTest = sawTest || strings.Contains(string(q.body), `"type":"webhook.test"`)
	}
	if !sawFull || !sawTest {
		t.Fatalf("full %v test %v", sawFull, sawTest)
	}
	// The owner's curators see the webhook's delivery metrics; another
	// owner's do not.
	want := `ctxkit_webhook_attempts_total{class="ok",outcome="delivered",owner="acme",webhook="` + h.ID + `"}`
	waitUntil(t, "the metrics", func() bool {
		return strings.Contains(string(e.do("GET", "/metrics", e.token("acme", "root", server.RoleCurator), nil).body), want)
	})
	if m := string(e.do("GET", "/metrics", e.token("globex", "root", server.RoleCurator), nil).body); strings.Contains(m, h.ID) {
		t.Fatal("another owner's curator sees the webhook's series")
	}
}

func deliveryIDs(t *testing.T, e *hookEnv, tok, hook, status string) []string {
	t.Helper()
	r := e.do("GET", "/webhooks/"+hook+"/deliveries?status="+status, tok, nil)
	if r.status != 200 {
		t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	json.Unmarshal(r.body, &page)
	var ids []string
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// TestWebhookRetryDeadLetterRedeliver: a 503 is retried until it
// succeeds, with the same webhook-id; a 404 is final: the delivery goes
// to the dead-letter list, and a redelivery (one, then all) delivers it.
func TestWebhookRetryDeadLetterRedeliver(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	alice := e.token("acme", "alice", server.RoleEmitter)
	flaky := newReceiver(t, func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	h := e.createHook(alice, flaky.srv.URL, `{}`, "view")
	e.write(alice, `{"title": "a", "context": {}}`)
	waitUntil(t, "three attempts", func() bool { return len(flaky.requests()) >= 3 })
	waitUntil(t, "delivered", func() bool { return len(deliveryIDs(t, e, alice, h.ID, "delivered")) == 1 })
	got := flaky.requests()
	if got[0].header.Get("webhook-id") != got[2].header.Get("webhook-id") {
		t.Fatal("the webhook-id changed between attempts")
	}
	var final struct {
		Attempts int `json:"attempts"`
	}
	json.Unmarshal(e.do("GET", "/webhooks/"+h.ID+"/deliveries/"+got[0].header.Get("webhook-id"), alice, nil).body, &final)
	if final.Attempts != 3 {
		t.Fatalf("attempts %d, want 3", final.Attempts)
	}

	var gone sync.Mutex
	status := http.StatusNotFound
	dead := newReceiver(t, func(int) int { gone.Lock(); defer gone.Unlock(); return status })
	hd := e.createHook(alice, dead.srv.URL, `{}`, "view")
	e.write(alice, `{"title": "b", "context": {}}`)
	e.write(alice, `{"title": "c", "context": {}}`)
	waitUntil(t, "two dead letters", func() bool { return len(deliveryIDs(t, e, alice, hd.ID, "failed")) == 2 })
	failed := deliveryIDs(t, e, alice, hd.ID, "failed")
	var r reply
	waitUntil(t, "the attempt recorded", func() bool {
		r = e.do("GET", "/webhooks/"+hd.ID+"/deliveries/"+failed[0], alice, nil)
		return strings.Contains(string(r.body), `"verdict":"dead"`)
	})
	if !strings.Contains(string(r.body), `"reason":"final: `) || !strings.Contains(string(r.body), `"status":404`) {
		t.Fatalf("dead letter: %s", r.body)
	}
	gone.Lock()
	status = http.StatusOK
	gone.Unlock()
	if r := e.do("POST", "/webhooks/"+hd.ID+"/deliveries/"+failed[0]+"/redeliver", alice, nil); r.status != 200 {
		t.Fatalf("redeliver: %d %s", r.status, r.body)
	}
	waitUntil(t, "the redelivery", func() bool { return len(deliveryIDs(t, e, alice, hd.ID, "delivered")) == 1 })
	r = e.do("POST", "/webhooks/"+hd.ID+"/redeliver", alice, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"redelivered":1`) {
		t.Fatalf("bulk redeliver: %d %s", r.status, r.body)
	}
	waitUntil(t, "the bulk redelivery", func() bool { return len(deliveryIDs(t, e, alice, hd.ID, "delivered")) == 2 })
}

// TestWebhookPausesAndResumes: an endpoint failing past the pause horizon
// is paused and says why; PATCH resumes it and the backlog is delivered.
func TestWebhookPausesAndResumes(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true, func(o *server.Options) {
		o.Webhooks.Policy.PauseAfter = time.Nanosecond // the first failure is past the horizon
	})
	alice := e.token("acme", "alice", server.RoleEmitter)
	var mu sync.Mutex
	status := http.StatusInternalServerError
	rc := newReceiver(t, func(int) int { mu.Lock(); defer mu.Unlock(); return status })
	h := e.createHook(alice, rc.srv.URL, `{}`, "view")
	e.write(alice, `{"title": "a", "context": {}}`)
	var hook struct {
		Paused       bool   `json:"paused"`
		PausedReason string `json:"paused_reason"`
		FailingSince string `json:"failing_since"`
	}
	waitUntil(t, "the pause", func() bool {
		json.Unmarshal(e.do("GET", "/webhooks/"+h.ID, alice, nil).body, &hook)
		return hook.Paused
	})
	if !strings.Contains(hook.PausedReason, "failing since") || hook.FailingSince == "" {
		t.Fatalf("paused: %+v", hook)
	}
	n := len(rc.requests())
	e.write(alice, `{"title": "b", "context": {}}`)
	time.Sleep(300 * time.Millisecond)
	if len(rc.requests()) != n {
		t.Fatal("a paused webhook was called")
	}
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if r := e.do("PATCH", "/webhooks/"+h.ID, alice, `{"paused": false}`); r.status != 200 || strings.Contains(string(r.body), `"paused":true`) {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	waitUntil(t, "both delivered", func() bool { return len(deliveryIDs(t, e, alice, h.ID, "delivered")) == 2 })
}

// TestWebhookRotation: after a rotation both secrets sign for a day; a
// receiver holding either verifies.
func TestWebhookRotation(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	alice := e.token("acme", "alice", server.RoleEmitter)
	rc := newReceiver(t, nil)
	h := e.createHook(alice, rc.srv.URL, `{}`, "view")
	r := e.do("POST", "/webhooks/"+h.ID+"/rotate-secret", alice, nil)
	var rot struct {
		Secret string    `json:"secret"`
		Until  time.Time `json:"previous_secret_until"`
	}
	if json.Unmarshal(r.body, &rot); r.status != 200 || rot.Secret == h.Secret || time.Until(rot.Until) < 23*time.Hour {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	e.write(alice, `{"title": "a", "context": {}}`)
	waitUntil(t, "a delivery", func() bool { return len(rc.requests()) == 1 })
	q := rc.requests()[0]
	if sigs := strings.Fields(q.header.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("signatures %q, want two", sigs)
	}
	for _, s := range []string{h.Secret, rot.Secret} {
		if err := webhook.Verify(q.header, q.body, time.Now(), webhook.DefaultTolerance, secret(t, s)); err != nil {
			t.Fatalf("verify with one secret: %v", err)
		}
	}
	// The listing never shows a secret.
	for _, path := range []string{"/webhooks", "/webhooks/" + h.ID} {
		if b := e.do("GET", path, alice, nil).body; strings.Contains(string(b), "whsec_") {
			t.Fatalf("%s shows a secret: %s", path, b)
		}
	}
}

// TestWebhookRestart: events committed while no server delivered, and
// deliveries pending when the server stopped, are delivered after a
// restart on the same data.
func TestWebhookRestart(t *testing.T) {
	open := reopenableStore(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	var mu sync.Mutex
	up := false
	rc := newReceiver(t, func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if up {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	// 1: the server takes writes and delivers nothing (it stops first).
	e := newHookEnv(t, open(t), key, false)
	alice := e.token("acme", "alice", server.RoleEmitter)
	h := e.createHook(alice, rc.srv.URL, `{}`, "view")
	e.write(alice, `{"title": "before any delivery", "context": {}}`)
	e.stop()
	// 2: delivering to a failing endpoint, then stopped with both
	// deliveries pending.
	e = newHookEnv(t, open(t), key, true)
	e.write(alice, `{"title": "while failing", "context": {}}`)
	waitUntil(t, "attempts at both", func() bool {
		ids := map[string]bool{}
		for _, q := range rc.requests() {
			ids[q.header.Get("webhook-id")] = true
		}
		return len(ids) == 2
	})
	e.stop()
	// 3: restarted, the endpoint up: both are delivered.
	mu.Lock()
	up = true
	mu.Unlock()
	e = newHookEnv(t, open(t), key, true)
	waitUntil(t, "both delivered", func() bool { return len(deliveryIDs(t, e, alice, h.ID, "delivered")) == 2 })
	if p := deliveryIDs(t, e, alice, h.ID, "pending"); len(p) != 0 {
		t.Fatalf("still pending: %v", p)
	}
}

// TestWebhookIsolation: a webhook is its agent's: another agent of the
// owner, and another owner, get 404 on every route, as for an unknown id;
// a subscriber may not register one.
func TestWebhookIsolation(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, false)
	alice := e.token("acme", "alice", server.RoleEmitter)
	h := e.createHook(alice, "https://example.com/hook", `{}`, "view")
	e.write(alice, `{"title": "a", "context": {}}`)
	dl := e.do("POST", "/webhooks/"+h.ID+"/test", alice, nil).json(t)["id"].(string)
	for _, tok := range []string{e.token("acme", "bob", server.RoleCurator), e.token("globex", "alice", server.RoleCurator)} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/webhooks/" + h.ID, ""},
			{"PATCH", "/webhooks/" + h.ID, `{"paused": true}`},
			{"DELETE", "/webhooks/" + h.ID, ""},
			{"POST", "/webhooks/" + h.ID + "/rotate-secret", ""},
			{"POST", "/webhooks/" + h.ID + "/test", ""},
			{"GET", "/webhooks/" + h.ID + "/deliveries", ""},
			{"GET", "/webhooks/" + h.ID + "/deliveries/" + dl, ""},
			{"POST", "/webhooks/" + h.ID + "/deliveries/" + dl + "/redeliver", ""},
			{"POST", "/webhooks/" + h.ID + "/redeliver", ""},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			if r := e.do(c.method, c.path, tok, body); r.status != http.StatusNotFound || strings.Contains(string(r.body), "whsec_") {
				t.Errorf("%s %s by another: %d %s", c.method, c.path, r.status, r.body)
			}
		}
		if r := e.do("GET", "/webhooks", tok, nil); r.status != 200 || strings.Contains(string(r.body), h.ID) {
			t.Errorf("another lists: %d %s", r.status, r.body)
		}
	}
	sub := e.token("acme", "alice", server.RoleSubscriber)
	if r := e.do("POST", "/webhooks", sub, `{"url": "https://example.com/", "selector": {}}`); r.status != http.StatusForbidden {
		t.Errorf("a subscriber registers a webhook: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/webhooks/"+h.ID, alice, nil); r.status != 200 {
		t.Fatalf("the webhook is gone: %d %s", r.status, r.body)
	}
}

// TestWebhookBadInput: every bad create or patch is a 400 naming the
// field; without --webhook-allow-private, private targets and http are
// refused.
func TestWebhookBadInput(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, false, func(o *server.Options) { o.Webhooks = server.WebhookOptions{} })
	alice := e.token("acme", "alice", server.RoleEmitter)
	long := "https://example.com/" + strings.Repeat("a", store.MaxWebhookURL)
	for _, c := range []struct{ body, field string }{
		{`{"url": "http://example.com/", "selector": {}}`, "url"},
		{`{"url": "https://127.0.0.1/", "selector": {}}`, "url"},
		{`{"url": "https://[::1]:8080/", "selector": {}}`, "url"},
		{`{"url": "https://10.1.2.3/", "selector": {}}`, "url"},
		{`{"url": "https://169.254.169.254/latest/meta-data", "selector": {}}`, "url"},
		{`{"url": "https://u:p@example.com/", "selector": {}}`, "url"},
		{`{"url": "` + long + `", "selector": {}}`, "url"},
		{`{"selector": {}}`, "url"},
		{`{"url": "https://example.com/"}`, "selector"},
		{`{"url": "https://example.com/", "selector": {"kinds": ["eaten"]}}`, "selector.kinds"},
		{`{"url": "https://example.com/", "selector": {"context_match": [{"path": "$.a", "op": "near", "value": 1}]}}`, "selector.context_match[0].op"},
		{`{"url": "https://example.com/", "selector": {}, "payload": "raw"}`, "payload"},
		{`{"url": "https://example.com/", "selector": {}, "description": "` + strings.Repeat("d", 1025) + `"}`, "description"},
	} {
		r := e.do("POST", "/webhooks", alice, c.body)
		var er struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(r.body, &er)
		if r.status != http.StatusBadRequest || !strings.HasPrefix(er.Error.Message, c.field) {
			t.Errorf("%.80s: %d %s, want 400 naming %s", c.body, r.status, r.body, c.field)
		}
	}
	h := e.createHook(alice, "https://example.com/hook", `{}`, "")
	for _, c := range []struct{ body, field string }{
		{`{"url": "https://192.168.1.1/"}`, "url"},
		{`{"selector": {"any_tags": [1]}}`, "selector.any_tags"},
		{`{"selector": null}`, "selector"},
		{`{"description": "` + strings.Repeat("d", 1025) + `"}`, "description"},
	} {
		r := e.do("PATCH", "/webhooks/"+h.ID, alice, c.body)
		var er struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(r.body, &er)
		if r.status != http.StatusBadRequest || !strings.HasPrefix(er.Error.Message, c.field) {
			t.Errorf("patch %.80s: %d %s, want 400 naming %s", c.body, r.status, r.body, c.field)
		}
	}
	for _, q := range []string{"status=lost", "limit=0", "limit=x", "limit=500", "cursor=zz"} {
		if r := e.do("GET", "/webhooks/"+h.ID+"/deliveries?"+q, alice, nil); r.status != http.StatusBadRequest {
			t.Errorf("deliveries?%s: %d %s", q, r.status, r.body)
		}
	}
}

// hookState is GET /webhooks/{id} as tok sees it.
func hookState(t *testing.T, e *hookEnv, tok, id string) store.Webhook {
	t.Helper()
	r := e.do("GET", "/webhooks/"+id, tok, nil)
	var w store.Webhook
	if r.status != 200 || json.Unmarshal(r.body, &w) != nil {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	return w
}

// TestWebhookRevokedTokenPauses: revoking the tokens of the agent whose
// webhook it is stops the webhook: a delivery already queued (retrying)
// is held when next claimed, the webhook is paused saying why, and events
// after the revocation are not delivered. A PATCH by a new token of the
// agent binds the webhook to it and resumes it.
func TestWebhookRevokedTokenPauses(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	var up sync.Mutex
	ok := false
	rc := newReceiver(t, func(int) int {
		up.Lock()
		defer up.Unlock()
		if ok {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable // retried
	})
	ctl := newReceiver(t, nil)
	now := time.Now()
	root, _ := e.mintAt("acme", "root", now, server.RoleCurator)
	alice, _ := e.mintAt("acme", "alice", now.Add(-5*time.Second), server.RoleEmitter)
	bob := e.token("acme", "bob", server.RoleEmitter)
	h := e.createHook(alice, rc.srv.URL, `{}`, "full")
	e.createHook(bob, ctl.srv.URL, `{}`, "full")
	e.write(bob, `{"title": "before", "context": {"k": "BEFORE-REVOKE"}}`)
	waitUntil(t, "attempts at the queued delivery", func() bool { return countFor(rc, "BEFORE-REVOKE") >= 2 })

	want(t, e.do("POST", "/tokens/revoke", root, map[string]any{"agent": "alice"}), 201, `"agent":"alice"`)
	want(t, e.do("GET", "/webhooks", alice, nil), 401, "")
	alice2, _ := e.mintAt("acme", "alice", time.Now().Add(time.Second), server.RoleEmitter)
	waitUntil(t, "the webhook paused", func() bool { return hookState(t, e, alice2, h.ID).PausedReason == store.RevokedReason })
	e.write(bob, `{"title": "after", "context": {"k": "AFTER-REVOKE"}}`)
	waitUntil(t, "the other webhook's delivery", func() bool { return countFor(ctl, "AFTER-REVOKE") == 1 })
	held := len(rc.requests())
	e.write(bob, `{"title": "marker", "context": {"k": "MARKER"}}`)
	waitUntil(t, "the other webhook's next delivery", func() bool { return countFor(ctl, "MARKER") == 1 })
	if n := len(rc.requests()); n != held || countFor(rc, "AFTER-REVOKE") > 0 {
		t.Fatalf("the revoked agent's webhook got %d requests after it was paused (%d with the record written after)", n-held, countFor(rc, "AFTER-REVOKE"))
	}
	if ids := deliveryIDs(t, e, alice2, h.ID, ""); len(ids) != 1 {
		t.Fatalf("the paused webhook has %d deliveries, want the one queued before the revocation", len(ids))
	}
	if w := hookState(t, e, alice2, h.ID); !w.Paused {
		t.Fatalf("a GET rebound and resumed it: %+v", w)
	}

	// Bound to the new token and resumed: the held delivery goes out.
	up.Lock()
	ok = true
	up.Unlock()
	want(t, e.do("PATCH", "/webhooks/"+h.ID, alice2, map[string]any{"paused": false}), 200, `"paused":false`)
	waitUntil(t, "the held delivery", func() bool { return len(deliveryIDs(t, e, alice2, h.ID, "delivered")) == 1 })
	e.write(bob, `{"title": "resumed", "context": {"k": "RESUMED"}}`)
	waitUntil(t, "a delivery after resuming", func() bool { return countFor(rc, "RESUMED") == 1 })
}

// TestWebhookLoweredRoleLosesCuratorReach: a webhook created with a
// curator's token reads as the token that manages it last: once the
// agent's curator tokens are revoked and it manages the webhook with an
// emitter token, the webhook no longer receives another agent's private
// records.
func TestWebhookLoweredRoleLosesCuratorReach(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	rc := newReceiver(t, nil)
	steer := newReceiver(t, nil)
	now := time.Now()
	root, _ := e.mintAt("acme", "root", now, server.RoleCurator)
	aliceCur, _ := e.mintAt("acme", "alice", now.Add(-5*time.Second), server.RoleCurator)
	bob := e.token("acme", "bob", server.RoleEmitter)
	h := e.createHook(aliceCur, rc.srv.URL, `{}`, "full")
	e.write(bob, `{"title": "bob private", "visibility": "private", "context": {"k": "CURATOR-SEES"}}`)
	waitUntil(t, "the curator's webhook gets a private record", func() bool { return countFor(rc, "CURATOR-SEES") == 1 })

	want(t, e.do("POST", "/tokens/revoke", root, map[string]any{"agent": "alice"}), 201, "")
	aliceEm, _ := e.mintAt("acme", "alice", time.Now().Add(time.Second), server.RoleEmitter)
	want(t, e.do("PATCH", "/webhooks/"+h.ID, aliceEm, map[string]any{"url": steer.srv.URL}), 200, "")
	e.write(bob, `{"title": "bob private", "visibility": "private", "context": {"k": "BOB-PRIVATE"}}`)
	e.write(bob, `{"title": "bob team", "context": {"k": "BOB-TEAM"}}`)
	waitUntil(t, "the team record", func() bool { return countFor(steer, "BOB-TEAM") == 1 })
	if n := countFor(steer, "BOB-PRIVATE") + countFor(rc, "BOB-PRIVATE"); n > 0 {
		t.Fatalf("alice, lowered to emitter, received bob's private record through her curator's webhook (%d)", n)
	}
	if ids := deliveryIDs(t, e, aliceEm, h.ID, ""); len(ids) != 2 {
		t.Fatalf("%d deliveries, want 2: the private record before, the team record after", len(ids))
	}
	// The delivery made while she was a curator is shown as her emitter
	// token may read it: withheld.
	for _, id := range deliveryIDs(t, e, aliceEm, h.ID, "") {
		if r := e.do("GET", "/webhooks/"+h.ID+"/deliveries/"+id, aliceEm, nil); strings.Contains(string(r.body), "CURATOR-SEES") {
			t.Fatalf("the delivery detail shows the private record to the emitter token: %s", r.body)
		}
	}
	if w := hookState(t, e, aliceEm, h.ID); w.Paused {
		t.Fatalf("bound to a valid token, the webhook is paused: %+v", w)
	}
}

// TestWebhookPayloadReadWhenSent: a delivery's payload is read when it
// is sent (and when it is shown), as the webhook's agent may read it
// then: a record made private since is neither shown in the delivery
// detail nor sent by a redelivery; the body says it was withheld.
func TestWebhookPayloadReadWhenSent(t *testing.T) {
	e := newHookEnv(t, newStore(t), nil, true)
	var mu sync.Mutex
	gone := false
	rc := newReceiver(t, func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return http.StatusOK
		}
		return http.StatusGone // final: dead-lettered
	})
	alice := e.token("acme", "alice", server.RoleEmitter)
	bob := e.token("acme", "bob", server.RoleEmitter)
	h := e.createHook(alice, rc.srv.URL, `{}`, "full")
	id := e.write(bob, `{"title": "team", "context": {"k": "LATER-PRIVATE"}}`)
	waitUntil(t, "dead-lettered", func() bool { return len(deliveryIDs(t, e, alice, h.ID, "failed")) == 1 })
	if countFor(rc, "LATER-PRIVATE") != 1 {
		t.Fatal("the first attempt did not carry the record, readable then")
	}
	want(t, e.do("PATCH", "/breadcrumbs/"+id, bob, map[string]any{"visibility": "private"}), 200, "")
	want(t, e.do("GET", "/breadcrumbs/"+id+"/full", alice, nil), 404, "")
	dl := deliveryIDs(t, e, alice, h.ID, "failed")[0]
	r := e.do("GET", "/webhooks/"+h.ID+"/deliveries/"+dl, alice, nil)
	if r.status != 200 || strings.Contains(string(r.body), "LATER-PRIVATE") || !strings.Contains(string(r.body), `"withheld":"not_readable"`) {
		t.Fatalf("delivery detail of a record alice may no longer read: %d %s", r.status, r.body)
	}
	mu.Lock()
	gone = true
	mu.Unlock()
	want(t, e.do("POST", "/webhooks/"+h.ID+"/deliveries/"+dl+"/redeliver", alice, nil), 200, "")
	waitUntil(t, "redelivered", func() bool { return len(deliveryIDs(t, e, alice, h.ID, "delivered")) == 1 })
	got := rc.requests()
	last := got[len(got)-1]
	var b hookBody
	if err := json.Unmarshal(last.body, &b); err != nil || b.Event.BreadcrumbID != id || b.Payload != nil || b.Withheld != "not_readable" {
		t.Fatalf("redelivery: %s (%v)", last.body, err)
	}
	if countFor(rc, "LATER-PRIVATE") != 1 {
		t.Fatal("the redelivery re-sent a record alice may no longer read")
	}
}

// TestWebhookDeliveriesKeepEvents: a delivery keeps its event, not the
// record: the bytes stored per delivery do not grow with the record
// (pending, dead-lettered by the backlog cap or delivered alike: one
// row), however many webhooks a write reaches.
func TestWebhookDeliveriesKeepEvents(t *testing.T) {
	db := newStore(t)
	e := newHookEnv(t, db, nil, true, func(o *server.Options) { o.MaxBodyBytes = 1 << 20 })
	rc := newReceiver(t, nil)
	alice := e.token("acme", "alice", server.RoleEmitter)
	var hooks []string
	for i := 0; i < 5; i++ {
		h := e.createHook(alice, rc.srv.URL, `{}`, "full")
		want(t, e.do("PATCH", "/webhooks/"+h.ID, alice, map[string]any{"paused": true}), 200, "")
		hooks = append(hooks, h.ID)
	}
	big := strings.Repeat("x", 200<<10)
	for i := 0; i < 10; i++ {
		e.write(alice, fmt.Sprintf(`{"title": "b%d", "context": {"pad": %q}}`, i, big))
	}
	for _, h := range hooks {
		waitUntil(t, "the deliveries made", func() bool { return len(deliveryIDs(t, e, alice, h, "pending")) == 10 })
	}
	a := store.Actor{OwnerID: "acme", AgentID: "alice"}
	stored, n := 0, 0
	for _, h := range hooks {
		for _, id := range deliveryIDs(t, e, alice, h, "") {
			dl, _, err := db.Delivery(context.Background(), a, h, id)
			if err != nil {
				t.Fatal(err)
			}
			stored, n = stored+len(dl.Body), n+1
		}
	}
	t.Logf("%d deliveries of 10 writes of 200 KiB to 5 webhooks: %d bytes stored", n, stored)
	if n != 50 || stored > n*1024 {
		t.Fatalf("%d deliveries store %d bytes: more than their events", n, stored)
	}
	// Resumed, a pending one is sent with its record, read now.
	want(t, e.do("PATCH", "/webhooks/"+hooks[0], alice, map[string]any{"paused": false}), 200, "")
	waitUntil(t, "the pending deliveries", func() bool { return len(rc.requests()) == 10 })
	for _, q := range rc.requests() {
		if !strings.Contains(string(q.body), big) {
			t.Fatalf("a delivery without its record: %.300s", q.body)
		}
	}
}

// TestWebhookWokenByCommit: with the fan-out's poll an hour long, events
// are still delivered promptly, because each commit wakes the fan-out; a
// burst of writes is delivered whole. On PostgreSQL, a second replica
// that takes no writes itself delivers the first one's events, woken by
// LISTEN/NOTIFY.
func TestWebhookWokenByCommit(t *testing.T) {
	slowPoll := func(o *server.Options) { o.Webhooks.Poll = time.Hour }
	const burst = 20
	countIDs := func(rc *receiver) int {
		ids := map[string]bool{}
		for _, q := range rc.requests() {
			ids[q.header.Get("webhook-id")] = true
		}
		return len(ids)
	}

	e := newHookEnv(t, newStore(t), nil, true, slowPoll)
	rc := newReceiver(t, nil)
	alice := e.token("acme", "alice", server.RoleEmitter)
	e.createHook(alice, rc.srv.URL, `{"kinds": ["created"]}`, "view")
	e.write(alice, `{"title": "one", "context": {}}`)
	waitUntil(t, "the first delivery", func() bool { return countIDs(rc) == 1 })
	for i := range burst {
		e.write(alice, fmt.Sprintf(`{"title": "burst %d", "context": {}}`, i))
	}
	waitUntil(t, "the burst delivered", func() bool { return countIDs(rc) == 1+burst })

	if os.Getenv("CTXKIT_TEST_STORE") != "postgres" {
		return
	}
	url := pgtest.Shared(t).NewDatabase(t)
	writer := newHookEnv(t, openPostgres(t, url), nil, false, slowPoll)
	newHookEnv(t, openPostgres(t, url), writer.key, true, slowPoll) // delivers
	rc2 := newReceiver(t, nil)
	bob := writer.token("acme", "bob", server.RoleEmitter)
	// Created through the writer: the deliverer is not told (no wake of
	// its own) and learns of it, and of the events, from the database
	// when a notification wakes it.
	writer.createHook(bob, rc2.srv.URL, `{}`, "view")
	for i := range burst {
		writer.write(bob, fmt.Sprintf(`{"title": "replica %d", "context": {}}`, i))
	}
	waitUntil(t, "the other replica's events delivered", func() bool { return countIDs(rc2) == burst })
}
