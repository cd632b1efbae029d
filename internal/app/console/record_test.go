package console_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

func TestRecordViewAgainstFullWithCounts(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	id := s.create(tok, map[string]any{"title": "a plan", "tags": []string{"work"}, "schema_name": "plan.v1",
		"context":   map[string]any{"goal": "ship", "notes": strings.Repeat("a long internal note the model need not see. ", 20)},
		"llm_hints": map[string]any{"exclude": []string{"notes"}}})
	failing := s.create(tok, map[string]any{"title": "a failing view", "context": map[string]any{"n": 1},
		"llm_hints": map[string]any{"transform": map[string]any{"h": map[string]any{"type": "jq", "query": `error("no")`}}}})

	tb := newTab(t, s)
	tb.signIn(tok)
	tb.until(rows + ` === 2`)
	tb.click(`#rows tr[data-id="` + id + `"] a.crumb`)
	tb.until(`document.querySelector("#view-tokens")`)
	viewN, err1 := strconv.Atoi(tb.value(`document.querySelector("#view-tokens").textContent`))
	fullN, err2 := strconv.Atoi(tb.value(`document.querySelector("#full-tokens").textContent`))
	if err1 != nil || err2 != nil || viewN <= 0 || viewN >= fullN {
		t.Fatalf("counts: view %d, full %d (%v %v)", viewN, fullN, err1, err2)
	}
	if saved := tb.value(`document.querySelector("#saved").textContent`); !strings.HasSuffix(saved, "%") || strings.HasPrefix(saved, "0") || strings.HasPrefix(saved, "-") {
		t.Fatalf("saved %q", saved)
	}
	if v, f := tb.value(`document.querySelector("#view-json").textContent`), tb.value(`document.querySelector("#full-json").textContent`); strings.Contains(v, "internal note") || !strings.Contains(f, "internal note") || !strings.Contains(v, "ship") {
		t.Fatalf("view %s\nfull %s", v, f)
	}
	if st := tb.value(`document.querySelector("#view-status").textContent`); st != "OK" {
		t.Fatalf("status %q", st)
	}
	if tb.value(`document.querySelector("h1").textContent`) != "a plan" || tb.number(`document.querySelectorAll("#edit, #save").length`) != 2 ||
		tb.number(`document.querySelectorAll("#delete").length`) != 0 {
		t.Fatal("an emitter's record page: wrong title, or edit or delete buttons wrong")
	}
	tb.screenshot("record")

	tb.open("/ui/#/b/" + failing)
	tb.until(`document.querySelector("#view-status") && document.querySelector("#view-status").textContent === "FALLBACK"`)
	if r := tb.value(`document.querySelector("#view-reason").textContent`); !strings.Contains(r, "rule_failed") {
		t.Fatalf("the fallback's reason reads %q", r)
	}
}

func TestConflictBetweenTwoTabs(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	id := s.create(tok, map[string]any{"title": "v1 title", "tags": []string{"a"}, "context": map[string]any{"n": 1}})
	first, second := newTab(t, s), newTab(t, s)
	for _, tb := range []*tab{first, second} {
		tb.signIn(tok)
		tb.open("/ui/#/b/" + id)
		tb.until(`document.querySelector("#edit-title")`)
	}
	first.fill("edit-title", "first's title")
	first.click("#save")
	first.until(`document.querySelector("h1").textContent === "first's title"`)

	second.fill("edit-title", "second's title")
	second.fill("edit-tags", "a, b")
	second.click("#save")
	second.until(`document.querySelector("#conflict")`)
	if c := second.value(`document.querySelector("#conflict").textContent`); !strings.Contains(c, "version 2, not 1") || !strings.Contains(c, "first's title") {
		t.Fatalf("the conflict says %q", c)
	}
	second.screenshot("conflict")
	second.click("#overwrite")
	second.until(`document.querySelector("h1").textContent === "second's title"`)
	if st, m := s.call("GET", "/breadcrumbs/"+id+"/full", tok, nil); st != 200 || m["title"] != "second's title" || m["version"].(float64) != 3 {
		t.Fatalf("after overwriting: %d %v", st, m)
	}
	// Reload takes theirs.
	first.fill("edit-title", "stale edit")
	first.click("#save")
	first.until(`document.querySelector("#conflict")`)
	first.click("#reload")
	first.until(`document.querySelector("h1").textContent === "second's title" && !document.querySelector("#conflict")`)
}

func TestSubscriberSeesNoEditButtons(t *testing.T) {
	s := newSite(t)
	id := s.create(s.token("acme", "alice", "emitter"), map[string]any{"title": "read me", "context": map[string]any{"n": 1}})
	tb := newTab(t, s)
	tb.signIn(s.token("acme", "reader", "subscriber"))
	tb.until(rows + ` === 1`)
	tb.open("/ui/#/b/" + id)
	tb.until(`document.querySelector("#view-json")`)
	if n := tb.number(`document.querySelectorAll("#edit, #save, #delete, #save-hints, #edit-title, #edit-context").length`); n != 0 {
		t.Fatalf("a subscriber's page has %v edit controls", n)
	}
	// It may try hints in the playground (a preview stores nothing).
	tb.until(`document.querySelector("#preview-json") && document.querySelector("#preview-json").textContent.includes("\"n\": 1")`)
}

func TestCuratorDeletes(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "root", "curator")
	id := s.create(tok, map[string]any{"title": "doomed", "context": map[string]any{"n": 1}})
	tb := newTab(t, s)
	tb.signIn(tok)
	tb.open("/ui/#/b/" + id)
	tb.click("#delete")
	tb.click("#delete-cancel")
	tb.until(`document.activeElement && document.activeElement.id === "delete"`)
	tb.click("#delete")
	tb.click("#delete-confirm")
	tb.until(rows + ` === 0`)
	if st, _ := s.call("GET", "/breadcrumbs/"+id+"/full", tok, nil); st != 404 {
		t.Fatalf("after delete: %d", st)
	}
}

// TestPayloadsRenderInert: markup, script and direction tricks in a
// title, tags and context are shown as text; nothing runs.
func TestPayloadsRenderInert(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "curator")
	payloads := []string{
		`<script>window.__pwned = 1</script>`,
		`<img src=x onerror="window.__pwned = 2">`,
		`javascript:window.__pwned = 3`,
		`<a href="javascript:window.__pwned=4">click</a>`,
		"evil\u202Egnp.exe",
		`"><svg onload="window.__pwned = 5">`,
	}
	var ids []string
	for _, p := range payloads {
		ids = append(ids, s.create(tok, map[string]any{"title": p, "tags": []string{p}, "schema_name": "x.v1",
			"description": p, "context": map[string]any{"html": p, p: p}}))
	}
	tb := newTab(t, s)
	tb.signIn(tok)
	tb.until(rows + ` === 6`)
	check := func(where string) {
		t.Helper()
		if got := tb.value(`String(window.__pwned)`); got != "undefined" {
			t.Fatalf("%s: a payload ran: window.__pwned = %s", where, got)
		}
		if n := tb.number(`document.querySelectorAll("main img, main script, main svg, main iframe, main [onerror], main [onload]").length`); n != 0 {
			t.Fatalf("%s: %v elements came from data", where, n)
		}
		if bad := tb.value(`[...document.querySelectorAll("a[href]")].map(a => a.getAttribute("href")).filter(h => !h.startsWith("#")).join(" ")`); bad != "" {
			t.Fatalf("%s: links out of the page: %s", where, bad)
		}
	}
	check("list")
	text := tb.value(`document.querySelector("#rows").textContent`)
	for _, p := range payloads[:4] {
		if !strings.Contains(text, p) {
			t.Errorf("the list does not show %q as text", p)
		}
	}
	if !strings.Contains(text, "evil⟦U+202E⟧gnp.exe") {
		t.Errorf("the direction override is not shown: %q", text)
	}
	tb.screenshot("payloads")
	for i, id := range ids {
		tb.open("/ui/#/b/" + id)
		tb.until(`document.querySelector("#full-json")`)
		check("record " + strconv.Itoa(i))
		// Editing puts the payload back in a field as text too.
		if v := tb.value(`document.querySelector("#edit-title").value`); v != payloads[i] {
			t.Errorf("the title field holds %q", v)
		}
	}
}

// TestKeyboardOnly: sign in, reach a record and come back with the
// keyboard alone.
func TestKeyboardOnly(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	s.create(tok, map[string]any{"title": "reach me by keyboard", "context": map[string]any{"n": 1}})
	tb := newTab(t, s)
	tb.open("/ui/")
	tb.until(`document.activeElement && document.activeElement.id === "page-title"`)
	tb.do(chromedp.KeyEvent(kb.Tab))
	tb.until(`document.activeElement.id === "token"`)
	tb.do(chromedp.KeyEvent(tok), chromedp.KeyEvent(kb.Enter))
	tb.until(rows + ` === 1 && document.activeElement.id === "page-title"`)
	// Tab until the record's link has focus (bounded), then follow it.
	for i := 0; ; i++ {
		if tb.value(`document.activeElement.className`) == "crumb" {
			break
		}
		if i == 30 {
			t.Fatalf("30 tabs did not reach the record's link; focus is on %s", tb.value(`document.activeElement.outerHTML.slice(0, 80)`))
		}
		tb.do(chromedp.KeyEvent(kb.Tab))
	}
	tb.do(chromedp.KeyEvent(kb.Enter))
	tb.until(`document.querySelector("h1").textContent === "reach me by keyboard" && document.activeElement.id === "page-title"`)
	// Every control on the page has a name a screen reader can say.
	if unnamed := tb.value(`[...document.querySelectorAll("input, textarea, button")].filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map(e => e.outerHTML.slice(0, 60)).join(" ")`); unnamed != "" {
		t.Fatalf("controls without a name: %s", unnamed)
	}
}

// TestNarrowWindow: the list fits a phone-sized window.
func TestNarrowWindow(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	s.create(tok, map[string]any{"title": "a rather long title that has to wrap in a narrow window", "tags": []string{"one", "two"}, "context": map[string]any{"n": 1}})
	tb := newTab(t, s)
	tb.do(chromedp.EmulateViewport(380, 800))
	tb.signIn(tok)
	tb.until(rows + ` === 1`)
	if w := tb.number(`document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Fatalf("the list overflows a 380px window by %vpx", w)
	}
	tb.screenshot("list-narrow")
}
