package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/app/server"
)

// patch changes a breadcrumb at version v through the API.
func (s *site) patch(token, id string, v int, body any) {
	s.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("PATCH", s.url+"/breadcrumbs/"+id, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("If-Match", fmt.Sprintf(`"%d"`, v))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("patch %s at %d: %d %s", id, v, resp.StatusCode, msg)
	}
}

// choose picks an option of a select as a user would.
func (tb *tab) choose(id, value string) {
	tb.t.Helper()
	tb.until(fmt.Sprintf(`(() => { const e = document.getElementById(%q); if (!e || ![...e.options].some(o => o.value === %q)) return false;
		e.value = %q; e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, id, value, value))
}

// diffLines is the history page's diff as "op path" lines.
const diffLines = `[...document.querySelectorAll("#diff li")].map(li => li.dataset.op + " " + li.dataset.path).join("\n")`

func TestHistoryDiffBetweenVersions(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	id := s.create(tok, map[string]any{"title": "plan", "tags": []string{"a"},
		"context": map[string]any{"goal": "ship", "steps": []int{1, 2}, "owner": map[string]any{"name": "ann", "team": "core"}}})
	s.patch(tok, id, 1, map[string]any{"context": map[string]any{"goal": "ship", "steps": []int{1, 2, 3},
		"owner": map[string]any{"name": "ann", "team": "core"}, "note": "x"}})
	s.patch(tok, id, 2, map[string]any{"title": "plan B", "context": map[string]any{"goal": "ship <b>fast</b>", "steps": []int{1},
		"owner": map[string]any{"name": "ann"}, "note": "x", "odd key": true}})

	tb := newTab(t, s)
	tb.signIn(tok)
	tb.open("/ui/#/b/" + id)
	tb.click("#history-link")
	tb.until(`document.querySelectorAll("#diff-from option").length === 3 && document.querySelector("#diff li")`)
	// By default the newest change: version 2 to 3.
	if got := tb.value(diffLines); got != "changed context.goal\nadded context[\"odd key\"]\nremoved context.owner.team\nremoved context.steps[1]\nremoved context.steps[2]\nchanged title" {
		t.Fatalf("the diff of versions 2 and 3 reads:\n%s", got)
	}
	tb.choose("diff-from", "1")
	want := "changed context.goal\nadded context.note\nadded context[\"odd key\"]\nremoved context.owner.team\nremoved context.steps[1]\nchanged title"
	tb.until(`document.querySelector("#diff-summary").textContent.startsWith("From version 1 to 3")`)
	if got := tb.value(diffLines); got != want {
		t.Fatalf("the diff of versions 1 and 3 reads:\n%s\nwant:\n%s", got, want)
	}
	if sum := tb.value(`document.querySelector("#diff-summary").textContent`); !strings.Contains(sum, "2 added, 2 removed, 2 changed") {
		t.Fatalf("the summary says %q", sum)
	}
	// Values are text: the markup in the new goal is shown, not made.
	if li := tb.value(`document.querySelector('#diff li[data-path="context.goal"]').textContent`); !strings.Contains(li, `"ship" → "ship <b>fast</b>"`) {
		t.Fatalf("the goal's change reads %q", li)
	}
	if n := tb.number(`document.querySelectorAll("#diff b").length`); n != 0 {
		t.Fatal("a value became markup")
	}
	tb.screenshot("history")
	// Swapped, what was added is removed.
	tb.click("#diff-swap")
	tb.until(`document.querySelector("#diff-summary").textContent.startsWith("From version 3 to 1")`)
	if op := tb.value(`document.querySelector('#diff li[data-path="context.note"]').dataset.op`); op != "removed" {
		t.Fatalf("swapped, context.note is %q", op)
	}
	tb.choose("diff-to", "3")
	tb.until(`document.querySelector("#diff-summary").textContent === "Versions 3 and 3 hold the same content."`)
}

// evRow is the script for the events page's row of a breadcrumb.
func evRow(id string) string {
	return fmt.Sprintf(`document.querySelector('#ev-rows tr[data-id=%q]')`, id)
}

func TestEventsFeedFiltersPausesAndClicksThrough(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "curator")
	tb := newTab(t, s)
	tb.signIn(tok)
	tb.open("/ui/#/events")
	tb.until(`document.querySelector("#ev-state") && document.querySelector("#ev-state").textContent.startsWith("Live")`)
	first := s.create(tok, map[string]any{"title": "first <i>event</i>", "tags": []string{"watch"}, "schema_name": "note.v1", "context": map[string]any{"n": 1}})
	tb.until(evRow(first) + ` && ` + evRow(first) + `.querySelector(".ev-link").textContent === "first <i>event</i>"`)
	if cells := tb.value(`[...` + evRow(first) + `.cells].map(c => c.textContent).join("|")`); !strings.Contains(cells, "|created|first <i>event</i>|alice|1|"+first) {
		t.Fatalf("the row reads %q; want when, kind, title, agent, version, id", cells)
	}
	// Only changes tagged watch.
	tb.fill("ev-tag", "watch")
	tb.click(`#ev-filters button[type=submit]`)
	tb.until(`document.querySelectorAll("#ev-rows tr").length === 0 && document.querySelector("#ev-state").textContent.startsWith("Live")`)
	other := s.create(tok, map[string]any{"title": "not watched", "tags": []string{"other"}, "context": map[string]any{"n": 2}})
	watched := s.create(tok, map[string]any{"title": "watched", "tags": []string{"watch"}, "context": map[string]any{"n": 3}})
	s.patch(tok, watched, 1, map[string]any{"title": "watched, changed"})
	tb.until(`document.querySelectorAll("#ev-rows tr").length === 2 && document.querySelector("#ev-rows tr").dataset.kind === "updated"`)
	tb.until(`document.querySelector("#ev-rows tr .ev-link").textContent === "watched, changed" && document.querySelector("#ev-rows tr:nth-child(2) .ev-link").textContent === "watched"`)
	if n := tb.number(`document.querySelectorAll('#ev-rows tr[data-id="` + other + `"]').length`); n != 0 {
		t.Fatal("a change the filter leaves out is shown")
	}
	tb.screenshot("events")

	// Paused, a change waits until resumed.
	tb.click("#ev-pause")
	tb.until(`document.querySelector("#ev-pause").getAttribute("aria-pressed") === "true"`)
	later := s.create(tok, map[string]any{"title": "made while paused", "tags": []string{"watch"}, "context": map[string]any{"n": 4}})
	tb.until(`document.querySelector("#ev-state").textContent.startsWith("Paused: 1 changes waiting")`)
	if tb.number(`document.querySelectorAll('#ev-rows tr[data-id="`+later+`"]').length`) != 0 {
		t.Fatal("a change is shown while paused")
	}
	tb.click("#ev-pause")
	tb.until(evRow(later) + ` && document.querySelector("#ev-pause").textContent === "Pause"`)

	// A row leads to its breadcrumb.
	tb.click(`#ev-rows tr[data-id="` + later + `"] a.ev-link`)
	tb.until(`document.querySelector("h1").textContent === "made while paused" && document.querySelector("#view-json")`)

	// A filter the server refuses is shown at its field.
	tb.open("/ui/#/events")
	tb.fill("ev-tag", "")
	tb.fill("ev-schema", "bil*ing")
	tb.click(`#ev-filters button[type=submit]`)
	tb.until(`document.querySelector("#ev-schema").getAttribute("aria-invalid") === "true" && document.querySelector("#ev-problem").textContent.startsWith("Schema: selector.schema_name")`)
	if a := tb.value(`document.activeElement.id`); a != "ev-schema" {
		t.Fatalf("focus is on %q, not the field at fault", a)
	}
}

// The relay's context for the playground's test: a prompt holding an API
// key and an e-mail address.
const relaySecret = "sk-live0123456789abcdefghijklmnopqrstuv"

func TestRelayPlaygroundRedactsAndBlamesFields(t *testing.T) {
	s := newSite(t)
	tb := newTab(t, s)
	tb.signIn(s.token("acme", "reader", "subscriber")) // any role may relay
	tb.open("/ui/#/relay")
	ctx, _ := json.MarshalIndent(map[string]any{"source_agent": "planner", "target_agent": "coder", "task": "Fix login",
		"prompts": []any{
			map[string]any{"id": "role", "position": "system", "content": "You fix Go code."},
			map[string]any{"id": "ask", "position": "user", "content": "Use key " + relaySecret + " and mail ops@example.com <script>window.__pwned=1</script>"},
		}}, "", "  ")
	tb.fill("relay-pipeline", `{"transformers": [{"type": "redactor", "emails": true}]}`)
	tb.fill("relay-context", string(ctx))
	tb.click("#relay-run")
	tb.until(`document.querySelector('#relay-prompts li[data-id="ask"]')`)
	ask := tb.value(`document.querySelector('#relay-prompts li[data-id="ask"] pre').textContent`)
	if strings.Contains(ask, relaySecret) || strings.Contains(ask, "ops@example.com") || !strings.Contains(ask, "[REDACTED:") || !strings.Contains(ask, "<script>") {
		t.Fatalf("the relayed prompt reads %q", ask)
	}
	if step := tb.value(`document.querySelector('#relay-trace li[data-transformer="redactor"]').textContent`); !strings.Contains(step, "changed: ask") {
		t.Fatalf("the trace reads %q", step)
	}
	if got := tb.value(`String(window.__pwned)`); got != "undefined" {
		t.Fatal("a prompt's markup ran")
	}
	tb.screenshot("relay")

	// The server's error lands at the pipeline, on the line at fault.
	tb.fill("relay-pipeline", "{\n  \"transformers\": [\n    {\n      \"type\": \"summarizer\"\n    }\n  ]\n}")
	tb.click("#relay-run")
	tb.until(`document.querySelector("#relay-pipeline").getAttribute("aria-invalid") === "true"`)
	if p := tb.value(`document.querySelector("#relay-pipeline-problem").textContent`); !strings.HasPrefix(p, "line 4: pipeline.transformers[0].type: unknown transformer type") {
		t.Fatalf("the pipeline's problem reads %q", p)
	}
	if tb.value(`document.activeElement.id`) != "relay-pipeline" || tb.value(`document.querySelector("#relay-context-problem").textContent`) != "" {
		t.Fatal("focus is not on the pipeline, or the context is blamed too")
	}
	// Text that is not JSON is caught in the page, at its line.
	tb.fill("relay-pipeline", `{"transformers": []}`)
	tb.fill("relay-context", "{\n  \"task\":\n}")
	tb.click("#relay-run")
	tb.until(`document.querySelector("#relay-context-problem").textContent.startsWith("line 3: not JSON")`)
	if tb.value(`String(document.querySelector("#relay-pipeline").getAttribute("aria-invalid"))`) != "null" {
		t.Fatal("the pipeline is still marked")
	}
}

// gatewayConfig routes chat-x to a provider that always answers 503 and
// then to one that answers; the route keeps traffic records. A third
// provider has a key, which nothing may show.
const gatewayConfig = `{"providers": [
  {"name": "flaky", "type": "mock", "models": ["flaky-direct"], "mock": {"errors": [{"status": 503, "every": 1}]}},
  {"name": "steady", "type": "mock", "models": ["steady-direct"], "mock": {"text": "all good here"}},
  {"name": "keyed", "type": "openai", "base_url": "http://127.0.0.1:9/secret-host/v1", "api_key_env": "CTXKIT_CONSOLE_TEST_KEY", "models": ["keyed-m"]}],
 "routes": [{"model": "chat-x", "targets": [{"provider": "flaky", "model": "flaky-m"}, {"provider": "steady", "model": "steady-m"}], "record": true}],
 "prices": [{"provider": "steady", "model": "steady-m", "input": 1000, "output": 2000}]}`

const gatewayKey = "sk-console-test-0123456789abcdef"

func TestGatewayPage(t *testing.T) {
	t.Setenv("CTXKIT_CONSOLE_TEST_KEY", gatewayKey)
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, []byte(gatewayConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	gc, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, func(o *server.Options) { o.Gateway = gateway.New(gc, gateway.Options{}) })
	root := s.token("acme", "root", "curator")
	secrets := []string{gatewayKey, "CTXKIT_CONSOLE_TEST_KEY", "secret-host"}

	// The API: any valid token reads the routes, no key among them.
	if st, _ := s.call("GET", "/gateway/routes", "", nil); st != 401 {
		t.Fatalf("without a token: %d", st)
	}
	st, m := s.call("GET", "/gateway/routes", s.token("acme", "anyone", "subscriber"), nil)
	raw, _ := json.Marshal(m)
	if st != 200 || !strings.Contains(string(raw), `{"model":"chat-x","record":true,"targets":[{"model":"flaky-m","provider":"flaky","type":"mock"},{"model":"steady-m","provider":"steady","type":"mock"}]}`) {
		t.Fatalf("GET /gateway/routes: %d %s", st, raw)
	}
	for _, sec := range secrets {
		if strings.Contains(string(raw), sec) {
			t.Fatalf("GET /gateway/routes shows %q: %s", sec, raw)
		}
	}

	// Traffic: alice asks three times, bob twice; each request fails on
	// flaky and is answered by steady.
	for i, agent := range []string{"alice", "alice", "alice", "bob", "bob"} {
		body := fmt.Sprintf(`{"model": "chat-x", "messages": [{"role": "user", "content": "question %d"}]}`, i)
		req, _ := http.NewRequest("POST", s.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token("acme", agent, "emitter"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(answer), "all good here") {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, answer)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		_, u := s.call("GET", "/gateway/usage", root, nil)
		if total, _ := u["total"].(map[string]any); total != nil && total["requests"] == 5.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the records were not written: %v", u)
		}
		time.Sleep(50 * time.Millisecond)
	}

	tb := newTab(t, s)
	tb.signIn(root)
	tb.open("/ui/#/gateway")
	tb.until(`document.querySelectorAll("#gw-exchanges tbody tr").length === 5 && document.querySelector("#gw-traffic").getAttribute("aria-busy") === "false"`)
	if r := tb.value(`document.querySelector('#gw-routes tr[data-route="chat-x"]').textContent`); !strings.Contains(r, "flaky (mock) → flaky-m") || !strings.Contains(r, "steady (mock) → steady-m") || !strings.HasSuffix(r, "yes") {
		t.Fatalf("the route reads %q", r)
	}
	if p := tb.value(`document.querySelector('#gw-providers tr[data-provider="keyed"]').textContent`); p != "keyedopenaikeyed-m" {
		t.Fatalf("the keyed provider reads %q", p)
	}
	attempts := tb.value(`[...document.querySelectorAll("#gw-exchanges tbody tr:first-child li.attempt")].map(li => li.className + ": " + li.textContent).join("\n")`)
	lines := strings.Split(attempts, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "attempt failed: flaky / flaky-m: 503") || !strings.HasPrefix(lines[1], "attempt: steady / steady-m: 200") {
		t.Fatalf("the newest exchange's attempts read:\n%s", attempts)
	}
	if row := tb.value(`document.querySelector("#gw-exchanges tbody tr").textContent`); !strings.Contains(row, "200steady / steady-m") {
		t.Fatalf("the newest exchange reads %q", row)
	}
	// Each exchange names the agent whose request it was: alice made
	// three, bob two.
	if head := tb.value(`document.querySelector("#gw-exchanges thead").textContent`); !strings.Contains(head, "RouteAgentStatus") {
		t.Fatalf("the exchanges' header reads %q", head)
	}
	agents := tb.value(`[...document.querySelectorAll("#gw-exchanges tbody td.gw-agent")].map(td => td.textContent).sort().join(",")`)
	if agents != "alice,alice,alice,bob,bob" {
		t.Fatalf("the exchanges' agents read %q", agents)
	}
	if row := tb.value(`document.querySelector("#gw-exchanges tbody tr").textContent`); !strings.Contains(row, "chat-xbob200") && !strings.Contains(row, "chat-xalice200") {
		t.Fatalf("the newest exchange reads %q; want the route, its agent, then the status", row)
	}
	labels := tb.value(`[...document.querySelectorAll("canvas.chart")].map(c => c.id + " = " + c.getAttribute("aria-label")).join("\n")`)
	for _, want := range []string{"gw-chart-time = Requests over time: 5 requests", "gw-chart-tokens-model = Tokens per model: steady-m ",
		"gw-chart-cost-model = Cost per model (USD): steady-m $", "gw-chart-tokens-agent = Tokens per agent: alice ", "; bob "} {
		if !strings.Contains(labels, want) {
			t.Fatalf("the charts' labels lack %q:\n%s", want, labels)
		}
	}
	// The charts are drawn: each canvas has painted pixels.
	tb.until(`[...document.querySelectorAll("canvas.chart")].every(c => { const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true; return false })`)
	text := tb.value(`document.body.textContent`)
	for _, sec := range secrets {
		if strings.Contains(text, sec) {
			t.Fatalf("the gateway page shows %q", sec)
		}
	}
	if total := tb.value(`document.querySelector("#gw-total").textContent`); !strings.HasPrefix(total, "5 requests, 0 failed;") {
		t.Fatalf("the totals read %q", total)
	}
	tb.screenshot("gateway")

	// A server without a gateway says so.
	plain := newSite(t)
	other := newTab(t, plain)
	other.signIn(plain.token("acme", "root", "curator"))
	other.open("/ui/#/gateway")
	other.until(`document.querySelector("#gw-none") && document.querySelector("#gw-none").textContent.includes("runs no gateway")`)
}

// TestNewPagesByKeyboard: the events, relay and history pages are reached
// and worked with the keyboard alone, and every control has a name.
func TestNewPagesByKeyboard(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	id := s.create(tok, map[string]any{"title": "keys", "context": map[string]any{"n": 1}})
	s.patch(tok, id, 1, map[string]any{"context": map[string]any{"n": 2}})
	tb := newTab(t, s)
	tb.signIn(tok)
	// focusBy presses key until the element sel matches has focus (bounded).
	focusBy := func(sel string, back bool) {
		t.Helper()
		for i := 0; ; i++ {
			if tb.value(fmt.Sprintf(`String(document.activeElement && document.activeElement.matches(%q))`, sel)) == "true" {
				return
			}
			if i == 40 {
				t.Fatalf("40 presses did not reach %s; focus is on %s", sel, tb.value(`document.activeElement.outerHTML.slice(0, 80)`))
			}
			if back {
				tb.do(chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
			} else {
				tb.do(chromedp.KeyEvent(kb.Tab))
			}
		}
	}
	named := func(where string) {
		t.Helper()
		if unnamed := tb.value(`[...document.querySelectorAll("input, textarea, button, select")].filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map(e => e.outerHTML.slice(0, 60)).join(" ")`); unnamed != "" {
			t.Fatalf("%s: controls without a name: %s", where, unnamed)
		}
	}
	tb.until(`document.activeElement.id === "page-title"`)
	focusBy(`#nav a[href="#/relay"]`, true)
	tb.do(chromedp.KeyEvent(kb.Enter))
	tb.until(`document.querySelector("h1").textContent === "Relay playground" && document.activeElement.id === "page-title"`)
	if cur := tb.value(`document.querySelector("#nav a[aria-current=page]").textContent`); cur != "Relay" {
		t.Fatalf("the nav marks %q as the current page", cur)
	}
	focusBy("#relay-run", false)
	tb.do(chromedp.KeyEvent(kb.Enter))
	tb.until(`document.querySelector('#relay-prompts li[data-id="ask"]')`)
	named("relay")

	focusBy(`#nav a[href="#/events"]`, true)
	tb.do(chromedp.KeyEvent(kb.Enter))
	tb.until(`document.querySelector("h1").textContent === "Events" && document.activeElement.id === "page-title"`)
	// An emitter's token may not read the stream: the page says why.
	tb.until(`document.querySelector("#ev-state").textContent === "Not watching: the event stream needs a token with the subscriber role."`)
	focusBy("#ev-pause", false)
	tb.do(chromedp.KeyEvent(" "))
	tb.until(`document.querySelector("#ev-pause").getAttribute("aria-pressed") === "true"`)
	named("events")

	tb.open("/ui/#/b/" + id)
	tb.until(`document.querySelector("#history-link")`)
	focusBy("#history-link", false)
	tb.do(chromedp.KeyEvent(kb.Enter))
	tb.until(`document.querySelector("#diff li") && document.activeElement.id === "page-title"`)
	focusBy("#diff-from", false)
	named("history")
	if d := tb.value(diffLines); d != "changed context.n" {
		t.Fatalf("the diff reads %q", d)
	}
}

// TestNewPagesFitANarrowWindow: history, events and relay fit a
// phone-sized window (wide tables scroll inside the page).
func TestNewPagesFitANarrowWindow(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter", "subscriber")
	id := s.create(tok, map[string]any{"title": "narrow", "context": map[string]any{"a long key that has to wrap somewhere": "and a long value that has to wrap as well, somewhere"}})
	s.patch(tok, id, 1, map[string]any{"context": map[string]any{"another long key that has to wrap somewhere": true}})
	tb := newTab(t, s)
	tb.do(chromedp.EmulateViewport(380, 800))
	tb.signIn(tok)
	for _, p := range []struct{ hash, ready string }{
		{"#/b/" + id + "/history", `document.querySelector("#diff li")`},
		{"#/events", `document.querySelector("#ev-state").textContent.startsWith("Live")`},
		{"#/relay", `document.querySelector("#relay-run")`},
	} {
		tb.open("/ui/" + p.hash)
		tb.until(p.ready)
		if p.hash == "#/events" {
			s.create(tok, map[string]any{"title": "an event with a long title that has to wrap in a narrow window", "context": map[string]any{}})
			tb.until(`document.querySelector("#ev-rows tr .ev-link") && document.querySelector("#ev-rows tr .ev-link").textContent.startsWith("an event")`)
		}
		if w := tb.number(`document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Fatalf("%s overflows a 380px window by %vpx", p.hash, w)
		}
	}
	tb.screenshot("relay-narrow")
}
