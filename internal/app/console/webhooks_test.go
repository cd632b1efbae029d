package console_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// hostile is markup a receiver's answer or a description may hold: run,
// it would set window.__pwned.
const hostile = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`

// newHookSite is a site that delivers webhooks to loopback receivers,
// retrying quickly.
func newHookSite(t *testing.T) *site {
	t.Helper()
	s := newSite(t, func(o *server.Options) {
		o.Webhooks.AllowPrivate = true
		o.Webhooks.Poll = 20 * time.Millisecond
		o.Webhooks.Policy.Base = 5 * time.Millisecond
		o.Webhooks.Policy.MaxBackoff = 20 * time.Millisecond
		o.Webhooks.Timeout = 10 * time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.api.RunWebhooks(ctx) }()
	// Registered after newSite's: delivery stops before the store closes.
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunWebhooks: %v", err)
		}
	})
	return s
}

// hookReceiver is a webhook endpoint on loopback: until fixed, it
// refuses every delivery with 400 (final) and a hostile answer.
type hookReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	fixed bool
	got   []http.Header
	body  [][]byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rc.mu.Lock()
		rc.got = append(rc.got, r.Header.Clone())
		rc.body = append(rc.body, body)
		fixed := rc.fixed
		rc.mu.Unlock()
		if !fixed {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, "refused: "+hostile)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) fix() {
	rc.mu.Lock()
	rc.fixed = true
	rc.mu.Unlock()
}

func (rc *hookReceiver) requests() ([]http.Header, [][]byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.got...), append([][]byte(nil), rc.body...)
}

// pollUntil polls cond for up to wait.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliveries is a webhook's deliveries of a status, through the API.
func (s *site) deliveries(token, hook, status string) []map[string]any {
	s.t.Helper()
	st, m := s.call("GET", "/webhooks/"+hook+"/deliveries?status="+status, token, nil)
	if st != 200 {
		s.t.Fatalf("deliveries: %d %v", st, m)
	}
	var out []map[string]any
	items, _ := m["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any))
	}
	return out
}

// tabTo presses Tab (Shift+Tab when back) until the element sel matches
// has focus, at most 60 times.
func (tb *tab) tabTo(sel string, back bool) {
	tb.t.Helper()
	for i := 0; ; i++ {
		if tb.value(fmt.Sprintf(`String(!!document.activeElement && document.activeElement.matches(%q))`, sel)) == "true" {
			return
		}
		if i == 60 {
			tb.t.Fatalf("60 presses did not reach %s; focus is on %s", sel, tb.value(`document.activeElement.outerHTML.slice(0, 80)`))
		}
		if back {
			tb.do(chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
		} else {
			tb.do(chromedp.KeyEvent(kb.Tab))
		}
	}
}

// noMarkupRan fails when a hostile value became markup or ran.
func (tb *tab) noMarkupRan() {
	tb.t.Helper()
	if got := tb.value(`String(window.__pwned)`); got != "undefined" {
		tb.t.Fatal("markup from the API ran")
	}
	if n := tb.number(`document.querySelectorAll("main img, main script").length`); n != 0 {
		tb.t.Fatalf("main holds %v elements made from data", n)
	}
	// Nor did a value go onto the page as something else than its text.
	if text := tb.value(`document.querySelector("main").textContent`); strings.Contains(text, "[object ") || strings.Contains(text, "undefined") || strings.Contains(text, "null") {
		tb.t.Fatalf("the page shows a value wrongly:\n%s", text)
	}
}

func TestWebhooksPageDeadLettersAndRedelivery(t *testing.T) {
	s := newHookSite(t)
	rc := newHookReceiver(t)
	tok := s.token("acme", "alice", "emitter")
	st, hook := s.call("POST", "/webhooks", tok, map[string]any{"url": rc.srv.URL + "/hook",
		"selector": map[string]any{"any_tags": []string{"order"}}, "description": "orders " + hostile})
	if st != 201 {
		t.Fatalf("create the webhook: %d %v", st, hook)
	}
	id := hook["id"].(string)
	s.create(tok, map[string]any{"title": "order 1", "tags": []string{"order"}, "context": map[string]any{"n": 1}})
	var dead, reason string
	pollUntil(t, "the dead letter", func() bool {
		if dl := s.deliveries(tok, id, "failed"); len(dl) == 1 {
			dead, reason = dl[0]["id"].(string), dl[0]["reason"].(string)
			return true
		}
		return false
	})
	if reason == "" {
		t.Fatal("the dead letter gives no reason")
	}

	tb := newTab(t, s)
	tb.signIn(tok)
	tb.click(`#nav a[href="#/webhooks"]`)
	row := fmt.Sprintf(`document.querySelector('#hooks tr[data-id=%q]')`, id)
	tb.until(row)
	if d := tb.value(row + `.querySelector(".hook-link").textContent`); d != "orders "+hostile {
		t.Fatalf("the description reads %q", d)
	}
	if u := tb.value(row + `.querySelector(".hook-url").textContent`); u != rc.srv.URL+"/hook" {
		t.Fatalf("the URL reads %q", u)
	}
	if state := tb.value(row + `.querySelector(".hook-state").textContent`); !strings.HasPrefix(state, "Failing since ") {
		t.Fatalf("the state reads %q", state)
	}
	tb.noMarkupRan()
	tb.screenshot("webhooks")

	// The webhook's page opens on its dead letters.
	tb.click(`#hooks tr[data-id="` + id + `"] a.hook-link`)
	dl := fmt.Sprintf(`document.querySelector('#dl-rows tr[data-id=%q]')`, dead)
	tb.until(dl + ` && document.querySelector('#dl-filter button[aria-pressed="true"]').dataset.status === "failed"`)
	if got := tb.value(dl + `.dataset.status + "|" + ` + dl + `.querySelector(".dl-state").textContent`); got != "failed|failed — "+reason {
		t.Fatalf("the dead letter reads %q; want failed and its reason %q", got, reason)
	}
	tb.noMarkupRan()
	if h1 := tb.value(`document.querySelector("h1").textContent`); h1 != "orders "+hostile {
		t.Fatalf("the heading reads %q", h1)
	}
	tb.click(`#dl-rows tr[data-id="` + dead + `"] .dl-open`)
	attempt := `document.querySelector('#dl-detail-` + dead + ` .dl-attempt')`
	tb.until(attempt)
	if a := tb.value(attempt + `.querySelector("p").textContent`); !strings.Contains(a, "HTTP 400 · status · ") || !strings.HasSuffix(a, " ms · dead") {
		t.Fatalf("the attempt reads %q", a)
	}
	if ex := tb.value(attempt + `.querySelector(".dl-excerpt").textContent`); ex != "refused: "+hostile {
		t.Fatalf("the excerpt reads %q", ex)
	}
	if body := tb.value(`document.querySelector('#dl-detail-` + dead + ` .dl-body pre').textContent`); !strings.Contains(body, `"type": "breadcrumb.created"`) {
		t.Fatalf("the body reads %q", body)
	}
	tb.noMarkupRan()
	tb.screenshot("webhook-dead-letters")

	// Fixed, the receiver takes the redelivery: the row says delivered,
	// and the delivery is under Delivered.
	rc.fix()
	tb.click(`#dl-rows tr[data-id="` + dead + `"] .dl-redeliver`)
	tb.until(dl + `.dataset.status === "delivered"`)
	if n := tb.number(`document.querySelectorAll('#dl-detail-` + dead + ` .dl-attempt').length`); n != 2 {
		t.Fatalf("%v attempts shown after the redelivery", n)
	}
	tb.click(`#dl-filter button[data-status="delivered"]`)
	tb.until(dl + ` && document.querySelector("#dl-status").textContent === "1 delivery made, newest first."`)
	if n := len(s.deliveries(tok, id, "failed")); n != 0 {
		t.Fatalf("%d dead letters left", n)
	}
	hs, _ := rc.requests()
	if len(hs) != 2 || hs[0].Get("webhook-id") != dead || hs[1].Get("webhook-id") != dead {
		t.Fatalf("the receiver got %d requests; want 2 with webhook-id %s", len(hs), dead)
	}

	// Two more die; one click redelivers them both.
	rc.mu.Lock()
	rc.fixed = false
	rc.mu.Unlock()
	s.create(tok, map[string]any{"title": "order 2", "tags": []string{"order"}, "context": map[string]any{}})
	s.create(tok, map[string]any{"title": "order 3", "tags": []string{"order"}, "context": map[string]any{}})
	pollUntil(t, "two dead letters", func() bool { return len(s.deliveries(tok, id, "failed")) == 2 })
	rc.fix()
	tb.click(`#dl-filter button[data-status="failed"]`)
	tb.until(`document.querySelectorAll("#dl-rows tr[data-status=failed]").length === 2`)
	tb.click("#hook-redeliver-all")
	tb.until(`document.querySelector("#hook-said").textContent === "2 failed deliveries are queued again."`)
	pollUntil(t, "the bulk redelivery", func() bool { return len(s.deliveries(tok, id, "delivered")) == 3 })

	// Paused, resumed, tested.
	tb.click("#hook-pause")
	tb.until(`document.querySelector("#hook-info-state").textContent.startsWith("Paused") && document.querySelector("#hook-pause").textContent === "Resume"`)
	if _, w := s.call("GET", "/webhooks/"+id, tok, nil); w["paused"] != true {
		t.Fatalf("the API says %v", w)
	}
	tb.click("#hook-pause")
	tb.until(`document.querySelector("#hook-info-state").textContent === "Active" && document.querySelector("#hook-pause").textContent === "Pause"`)
	tb.click("#hook-test")
	tb.until(`document.querySelector("#hook-said").textContent.startsWith("A test message is queued")`)
	pollUntil(t, "the test message", func() bool {
		for _, d := range s.deliveries(tok, id, "delivered") {
			if d["kind"] == "test" {
				return true
			}
		}
		return false
	})

	// Deleted after a confirmation.
	tb.click("#hook-delete")
	tb.until(`document.activeElement.id === "hook-delete-confirm"`)
	tb.click("#hook-delete-cancel")
	tb.until(`document.activeElement.id === "hook-delete"`)
	if st, _ := s.call("GET", "/webhooks/"+id, tok, nil); st != 200 {
		t.Fatalf("cancelled, the webhook is %d", st)
	}
	tb.click("#hook-delete")
	tb.click("#hook-delete-confirm")
	tb.until(`document.querySelector("#hooks-empty")`)
	if st, _ := s.call("GET", "/webhooks/"+id, tok, nil); st != 404 {
		t.Fatalf("deleted, the webhook is %d", st)
	}
	tb.noMarkupRan()
}

// netLog keeps the tab's requests to the site: method and URL by id,
// and which have finished (their bodies can be read).
type netLog struct {
	mu       sync.Mutex
	requests map[network.RequestID]*network.Request
	order    []network.RequestID
	finished map[network.RequestID]bool
}

func (tb *tab) logNetwork() *netLog {
	tb.t.Helper()
	nl := &netLog{requests: map[network.RequestID]*network.Request{}, finished: map[network.RequestID]bool{}}
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		nl.mu.Lock()
		defer nl.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if _, ok := nl.requests[ev.RequestID]; !ok {
				nl.order = append(nl.order, ev.RequestID)
			}
			nl.requests[ev.RequestID] = ev.Request
		case *network.EventLoadingFinished:
			nl.finished[ev.RequestID] = true
		}
	}); err != nil {
		tb.t.Fatal(err)
	}
	return nl
}

// bodies returns the finished GET requests' URLs and response bodies,
// from the n-th request on.
func (tb *tab) bodies(nl *netLog, from int) (urls []string, bodies []string) {
	tb.t.Helper()
	nl.mu.Lock()
	var ids []network.RequestID
	for _, id := range nl.order[from:] {
		if nl.requests[id].Method == "GET" && nl.finished[id] {
			ids = append(ids, id)
			urls = append(urls, nl.requests[id].URL)
		}
	}
	nl.mu.Unlock()
	for _, id := range ids {
		tb.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			res, err := cdp.Call(ctx, tg, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
			if err != nil {
				return fmt.Errorf("the body of request %s: %w", id, err)
			}
			bodies = append(bodies, string(res.Body))
			return nil
		}))
	}
	return urls, bodies
}

// verifies reports whether a delivery's signature header holds a v1
// signature by secret (Standard Webhooks: HMAC-SHA256 of id.timestamp.body
// with the base64 key after whsec_).
func verifies(h http.Header, body []byte, secret string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", h.Get("webhook-id"), h.Get("webhook-timestamp"), body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

func TestWebhookCreateShowsTheSecretOnce(t *testing.T) {
	s := newHookSite(t)
	rc := newHookReceiver(t)
	rc.fix()
	tok := s.token("acme", "bob", "curator")
	tb := newTab(t, s)
	nl := tb.logNetwork()
	tb.signIn(tok)
	tb.open("/ui/#/webhooks")
	tb.until(`document.querySelector("#hooks-empty") && document.querySelector("#hook-create")`)

	// Faults land at their fields.
	tb.fill("hook-url", "ftp://example.com/x")
	tb.click("#hook-create-submit")
	tb.until(`document.querySelector("#hook-url").getAttribute("aria-invalid") === "true" && document.activeElement.id === "hook-url"`)
	if p := tb.value(`document.querySelector("#hook-url-problem").textContent`); !strings.HasPrefix(p, "url: ") {
		t.Fatalf("the URL's problem reads %q", p)
	}
	tb.fill("hook-url", rc.srv.URL+"/in")
	tb.fill("hook-selector", "{\n  \"any_tags\":\n}")
	tb.click("#hook-create-submit")
	tb.until(`document.querySelector("#hook-selector").getAttribute("aria-invalid") === "true"`)
	if p := tb.value(`document.querySelector("#hook-selector-problem").textContent`); !strings.HasPrefix(p, "selector: line 3: not JSON") {
		t.Fatalf("the selector's problem reads %q", p)
	}
	if tb.value(`String(document.querySelector("#hook-url").getAttribute("aria-invalid"))`) != "null" || tb.value(`document.querySelector("#hook-url-problem").textContent`) != "" {
		t.Fatal("the URL is still blamed")
	}
	tb.fill("hook-selector", `{"kinds": ["exploded"]}`)
	tb.click("#hook-create-submit")
	tb.until(`document.querySelector("#hook-selector-problem").textContent.startsWith("selector.kinds")`)
	if tb.value(`document.activeElement.id`) != "hook-selector" {
		t.Fatal("focus is not on the selector")
	}

	tb.fill("hook-selector", `{"any_tags": ["ship"]}`)
	tb.choose("hook-payload", "full")
	tb.fill("hook-description", "made in the console")
	created := len(nl.order)
	tb.click("#hook-create-submit")
	tb.until(`document.querySelector("#hook-secret") && document.querySelector("#hooks tr")`)
	secret := tb.value(`document.querySelector("#hook-secret").textContent`)
	if !strings.HasPrefix(secret, "whsec_") || tb.value(`document.activeElement.id`) != "hook-secret" {
		t.Fatalf("the secret reads %q, focus on %s", secret, tb.value(`document.activeElement.id`))
	}
	if note := tb.value(`document.querySelector("#hook-secret-box").textContent`); !strings.Contains(note, "Copy the signing secret now") || !strings.Contains(note, "only time") {
		t.Fatalf("the secret's note reads %q", note)
	}
	id := tb.value(`document.querySelector("#hooks tbody tr").dataset.id`)
	if p := tb.value(`document.querySelector("#hooks tbody tr td:nth-child(3)").textContent`); p != "full" {
		t.Fatalf("the payload reads %q", p)
	}
	tb.screenshot("webhook-created")
	tb.click("#hook-secret-done")
	tb.until(`!document.querySelector("#hook-secret") && document.activeElement.id === "page-title"`)

	// Rotated on the webhook's page: a new secret, shown once too.
	tb.click(`#hooks tr[data-id="` + id + `"] a.hook-link`)
	tb.until(`document.querySelector("#hook-rotate") && document.querySelector("#deliveries").dataset.loads > 0`)
	tb.click("#hook-rotate")
	tb.until(`document.querySelector("#hook-secret")`)
	rotated := tb.value(`document.querySelector("#hook-secret").textContent`)
	if !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("the rotated secret reads %q", rotated)
	}
	if note := tb.value(`document.querySelector("#hook-secret-box").textContent`); !strings.Contains(note, "The previous secret keeps signing beside this one until ") {
		t.Fatalf("the rotation's note reads %q", note)
	}
	// Changed on its page: a bad selector is blamed at its field, a good
	// one saved with the description, and only what changed is sent.
	tb.click("#hook-edit-box summary")
	tb.fill("hook-edit-selector", `{"any_tags": ["ship"], "context_match": [{"path": "$.n", "op": "near", "value": 1}]}`)
	tb.click("#hook-edit-submit")
	tb.until(`document.querySelector("#hook-edit-selector").getAttribute("aria-invalid") === "true" && document.activeElement.id === "hook-edit-selector"`)
	if p := tb.value(`document.querySelector("#hook-edit-selector-problem").textContent`); !strings.HasPrefix(p, "selector.context_match[0].op") {
		t.Fatalf("the selector's problem reads %q", p)
	}
	tb.fill("hook-edit-selector", `{"any_tags": ["ship", "dock"]}`)
	tb.fill("hook-edit-description", "changed in the console")
	tb.click("#hook-edit-submit")
	tb.until(`document.querySelector("#hook-said").textContent === "Saved: selector, description changed."`)
	if d := tb.value(`document.querySelector("#hook-info-description").textContent + "|" + document.querySelector("#hook-info-selector").textContent`); d != "changed in the console|{\n  \"any_tags\": [\n    \"dock\",\n    \"ship\"\n  ]\n}" {
		t.Fatalf("the webhook reads %q", d)
	}
	if _, w := s.call("GET", "/webhooks/"+id, tok, nil); w["url"] != rc.srv.URL+"/in" || w["description"] != "changed in the console" {
		t.Fatalf("the API says %v", w)
	}
	tb.click("#hook-edit-box summary")
	tb.click("#hook-edit-submit")
	tb.until(`document.querySelector("#hook-edit-problem").textContent === "Nothing changed."`)

	// On another page, neither is shown.
	tb.click(`#nav a[href="#/webhooks"]`)
	tb.until(`document.querySelector("#hooks tr")`)
	for _, sec := range []string{secret, rotated} {
		if strings.Contains(tb.value(`document.documentElement.textContent`), sec) {
			t.Fatal("a secret is still on the page")
		}
		if strings.Contains(tb.value(`JSON.stringify(sessionStorage) + JSON.stringify(localStorage) + location.href + document.cookie`), sec) {
			t.Fatal("the page stored a secret")
		}
	}

	// The network log: every GET the page made after the creation, its
	// URL and its answer, is free of both secrets.
	urls, bodies := tb.bodies(nl, created)
	var sawList, sawHook bool
	for i, u := range urls {
		for _, sec := range []string{secret, rotated} {
			if strings.Contains(u, sec) || strings.Contains(bodies[i], sec) {
				t.Fatalf("GET %s carries a secret", u)
			}
		}
		sawList = sawList || strings.HasSuffix(u, "/webhooks")
		sawHook = sawHook || strings.HasSuffix(u, "/webhooks/"+id)
	}
	if !sawList || !sawHook {
		t.Fatalf("the log lacks the page's reads of the webhooks (%v, %v):\n%s", sawList, sawHook, strings.Join(urls, "\n"))
	}

	// The secret shown is the one that signs: a delivery verifies with it.
	s.create(tok, map[string]any{"title": "shipped", "tags": []string{"ship"}, "context": map[string]any{"n": 1}})
	pollUntil(t, "the delivery", func() bool { hs, _ := rc.requests(); return len(hs) == 1 })
	hs, bs := rc.requests()
	if !verifies(hs[0], bs[0], rotated) || !verifies(hs[0], bs[0], secret) {
		t.Fatalf("the delivery does not verify with both secrets shown: %s", hs[0].Get("webhook-signature"))
	}
}

// TestWebhooksBySubscriberKeyboardAndNarrowWindow: a subscriber's token,
// which the API keeps from every webhook route, gets a page that says
// so; an emitter works the page with the keyboard alone; the pages fit a
// phone-sized window.
func TestWebhooksBySubscriberKeyboardAndNarrowWindow(t *testing.T) {
	s := newHookSite(t)
	rc := newHookReceiver(t)
	sub := s.token("acme", "carol", "subscriber")
	if st, _ := s.call("GET", "/webhooks", sub, nil); st != 403 {
		t.Fatalf("a subscriber's GET /webhooks: %d", st)
	}
	tb := newTab(t, s)
	tb.signIn(sub)
	tb.open("/ui/#/webhooks")
	tb.until(`document.querySelector("#hooks-none")`)
	if p := tb.value(`document.querySelector("#hooks-none").textContent`); !strings.Contains(p, "emitter or curator role; this token has subscriber") {
		t.Fatalf("the page says %q", p)
	}
	if n := tb.number(`document.querySelectorAll("main form, main button").length`); n != 0 {
		t.Fatalf("a subscriber sees %v controls", n)
	}

	tok := s.token("acme", "dave", "emitter")
	_, hook := s.call("POST", "/webhooks", tok, map[string]any{"url": rc.srv.URL, "selector": map[string]any{},
		"description": "a long description that has to wrap somewhere in a narrow window, " + hostile})
	id := hook["id"].(string)
	s.create(tok, map[string]any{"title": "anything", "context": map[string]any{}})
	var dead string
	pollUntil(t, "the dead letter", func() bool {
		if dl := s.deliveries(tok, id, "failed"); len(dl) == 1 {
			dead = dl[0]["id"].(string)
			return true
		}
		return false
	})
	kt := newTab(t, s)
	kt.signIn(tok)
	kt.until(`document.activeElement.id === "page-title"`)
	kt.tabTo(`#nav a[href="#/webhooks"]`, true)
	kt.do(chromedp.KeyEvent(kb.Enter))
	kt.until(`document.querySelector("#hooks") && document.activeElement.id === "page-title"`)
	if cur := kt.value(`document.querySelector("#nav a[aria-current=page]").textContent`); cur != "Webhooks" {
		t.Fatalf("the nav marks %q", cur)
	}
	kt.tabTo(`a.hook-link`, false)
	kt.do(chromedp.KeyEvent(kb.Enter))
	kt.until(`document.querySelector('#dl-rows tr[data-id="` + dead + `"]') && document.activeElement.id === "page-title"`)
	if cur := kt.value(`document.querySelector("#nav a[aria-current=page]").textContent`); cur != "Webhooks" {
		t.Fatalf("on a webhook's page the nav marks %q", cur)
	}
	kt.tabTo(`#dl-rows tr[data-id="`+dead+`"] .dl-open`, false)
	kt.do(chromedp.KeyEvent(kb.Enter))
	kt.until(`document.querySelector('#dl-detail-` + dead + ` .dl-excerpt')`)
	if e := kt.value(`document.querySelector('#dl-rows tr[data-id="` + dead + `"] .dl-open').getAttribute("aria-expanded")`); e != "true" {
		t.Fatalf("aria-expanded is %q", e)
	}
	// The excerpt can be reached to scroll it.
	kt.tabTo(`#dl-detail-`+dead+` .dl-excerpt`, false)
	rc.fix()
	kt.tabTo(`#dl-rows tr[data-id="`+dead+`"] .dl-redeliver`, true)
	kt.do(chromedp.KeyEvent(" "))
	kt.until(`document.querySelector('#dl-rows tr[data-id="` + dead + `"]').dataset.status === "delivered"`)
	// Delete asks, and Cancel gives focus back, by keyboard too.
	kt.tabTo(`#hook-delete`, true)
	kt.do(chromedp.KeyEvent(kb.Enter))
	kt.until(`document.activeElement.id === "hook-delete-confirm"`)
	kt.tabTo(`#hook-delete-cancel`, false)
	kt.do(chromedp.KeyEvent(kb.Enter))
	kt.until(`document.activeElement.id === "hook-delete"`)
	if unnamed := kt.value(`[...document.querySelectorAll("input, textarea, button, select")].filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map(e => e.outerHTML.slice(0, 60)).join(" ")`); unnamed != "" {
		t.Fatalf("controls without a name: %s", unnamed)
	}
	kt.noMarkupRan()

	kt.do(chromedp.EmulateViewport(380, 800))
	for _, p := range []struct{ hash, ready string }{
		{"#/webhooks", `document.querySelector("#hooks tr") && document.querySelector("#hook-create")`},
		{"#/webhooks/" + id, `document.querySelector("#deliveries") && document.querySelector("#deliveries").dataset.loads > 0`},
	} {
		kt.open("/ui/" + p.hash)
		kt.until(p.ready)
		if w := kt.number(`document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Fatalf("%s overflows a 380px window by %vpx", p.hash, w)
		}
	}
	kt.screenshot("webhook-narrow")
}

// TestWebhookDeliveriesPageWithTheCursor: a dead-letter list longer than
// a page is read page by page with the API's cursor, newest first.
func TestWebhookDeliveriesPageWithTheCursor(t *testing.T) {
	s := newHookSite(t)
	rc := newHookReceiver(t)
	tok := s.token("acme", "erin", "emitter")
	_, hook := s.call("POST", "/webhooks", tok, map[string]any{"url": rc.srv.URL, "selector": map[string]any{"all_tags": []string{"bulk"}}})
	id := hook["id"].(string)
	const n = 30 // a page shows 25
	for i := range n {
		s.create(tok, map[string]any{"title": fmt.Sprintf("bulk %d", i), "tags": []string{"bulk"}, "context": map[string]any{"i": i}})
	}
	pollUntil(t, "the dead letters", func() bool {
		st, m := s.call("GET", "/webhooks/"+id+"/deliveries?status=failed&limit=100", tok, nil)
		items, _ := m["items"].([]any)
		return st == 200 && len(items) == n
	})
	tb := newTab(t, s)
	tb.signIn(tok)
	tb.open("/ui/#/webhooks/" + id)
	seqs := `[...document.querySelectorAll("#dl-rows tr[data-id]")].map(tr => tr.cells[2].textContent).join(",")`
	tb.until(`document.querySelector("#deliveries").dataset.loads === "1"`)
	if st := tb.value(`document.querySelector("#dl-status").textContent`); st != "25 failed deliveries, newest first; more on the next page." {
		t.Fatalf("the first page says %q", st)
	}
	first := tb.value(seqs)
	if !strings.HasPrefix(first, "30,29,") || !strings.HasSuffix(first, ",7,6") {
		t.Fatalf("the first page holds events %s", first)
	}
	if tb.value(`String(document.querySelector("#dl-first").disabled)`) != "true" {
		t.Fatal("First page is enabled on the first page")
	}
	tb.click("#dl-next")
	tb.until(`document.querySelector("#deliveries").dataset.loads === "2"`)
	if got := tb.value(seqs); got != "5,4,3,2,1" {
		t.Fatalf("the second page holds events %s", got)
	}
	if got := tb.value(`document.querySelector("#dl-status").textContent + "|" + document.querySelector("#dl-page").textContent + "|" + document.querySelector("#dl-next").disabled`); got != "5 failed deliveries, newest first.|Page 2|true" {
		t.Fatalf("the second page says %q", got)
	}
	tb.click("#dl-first")
	tb.until(`document.querySelector("#deliveries").dataset.loads === "3"`)
	if got := tb.value(seqs); got != first {
		t.Fatalf("back on the first page: %s", got)
	}
	// Delivered holds none; All holds every one.
	tb.click(`#dl-filter button[data-status="delivered"]`)
	tb.until(`document.querySelector("#dl-status").textContent === "No deliveries made."`)
	tb.click(`#dl-filter button[data-status=""]`)
	tb.until(`document.querySelector("#dl-status").textContent === "25 deliveries, newest first; more on the next page."`)
}

// TestWebhookDeliveriesTurnLive: an open webhook page shows a new
// delivery and its turn from pending to delivered without a click, in
// the row already on screen (its node, and the focus on its button,
// stay), and without counting as a load the user asked for. Shown under
// Pending, the delivered row stays while the user is at it (it holds the
// focus) and goes at a later refresh once the focus is elsewhere.
func TestWebhookDeliveriesTurnLive(t *testing.T) {
	s := newHookSite(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	// The receiver holds each delivery until released (or the server
	// gives up on it), so the delivery stays pending meanwhile.
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(rc.Close)
	tok := s.token("acme", "frank", "emitter")
	st, hook := s.call("POST", "/webhooks", tok, map[string]any{"url": rc.URL + "/hook", "selector": map[string]any{"any_tags": []string{"live"}}})
	if st != 201 {
		t.Fatalf("create the webhook: %d %v", st, hook)
	}
	id := hook["id"].(string)

	tb := newTab(t, s)
	tb.signIn(tok)
	tb.open("/ui/#/webhooks/" + id)
	tb.until(`document.querySelector("#deliveries").dataset.loads === "1"`)
	tb.click(`#dl-filter button[data-status="pending"]`)
	tb.until(`document.querySelector("#deliveries").dataset.loads === "2" && document.querySelector("#dl-status").textContent === "No pending deliveries."`)

	s.create(tok, map[string]any{"title": "live 1", "tags": []string{"live"}, "context": map[string]any{"n": 1}})
	var dl string
	pollUntil(t, "the pending delivery", func() bool {
		if d := s.deliveries(tok, id, "pending"); len(d) == 1 {
			dl = d[0]["id"].(string)
			return true
		}
		return false
	})
	row := fmt.Sprintf(`document.querySelector('#dl-rows tr[data-id=%q]')`, dl)
	tb.until(row + ` && ` + row + `.dataset.status === "pending" && document.querySelector("#dl-status").textContent === "1 pending delivery, newest first."`)
	// The row is marked, and its button takes the focus, as a user
	// about to open its attempts would have it.
	tb.until(`(window.__row = ` + row + `, window.__row.querySelector(".dl-open").focus(), document.activeElement === window.__row.querySelector(".dl-open"))`)
	free()
	tb.until(row + ` && ` + row + `.dataset.status === "delivered"`)
	if got := tb.value(`String(window.__row === ` + row + ` && document.activeElement === window.__row.querySelector(".dl-open"))`); got != "true" {
		t.Fatal("the live refresh replaced the row or moved the focus")
	}
	// Once the focus is elsewhere, the delivered row leaves Pending.
	tb.until(`(document.querySelector('#dl-filter button[data-status="pending"]').focus(), true)`)
	tb.until(`!` + row + ` && document.querySelector("#dl-status").textContent === "No pending deliveries."`)
	if got := tb.value(`document.querySelector("#deliveries").dataset.loads`); got != "2" {
		t.Fatalf("the table counts %s loads; the live refreshes are none of them", got)
	}
	if n := tb.number(`Number(document.querySelector("#deliveries").dataset.refreshes)`); n < 3 {
		t.Fatalf("%v live refreshes; want at least three (the new row, its change, its leaving)", n)
	}
	if len(s.deliveries(tok, id, "delivered")) != 1 {
		t.Fatal("the API has no delivered delivery")
	}
	tb.noMarkupRan()
	tb.screenshot("webhook-live")
}
