package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

func TestSignInWithToken(t *testing.T) {
	s := newSite(t)
	tb := newTab(t, s)
	tb.open("/ui/")
	tb.fill("token", "not-a-token")
	tb.click(`#signin button[type=submit]`)
	tb.until(`document.querySelector("#signin-error").textContent.includes("Sign-in failed")`)
	if got := tb.value(`String(sessionStorage.getItem("ctxkit.token"))`); got != "null" {
		t.Fatalf("a refused token was kept: %q", got)
	}
	tb.screenshot("signin")

	tok := s.token("acme", "alice", "emitter")
	s.create(tok, map[string]any{"title": "first", "context": map[string]any{"a": 1}})
	tb.signIn(tok)
	tb.until(rows + ` === 1`)
	if got := tb.value(`sessionStorage.getItem("ctxkit.token")`); got != tok {
		t.Fatal("the token is not in sessionStorage")
	}
	if got := tb.value(`document.cookie + location.href`); strings.Contains(got, tok) || strings.Contains(got, "token") {
		t.Fatalf("the token is in a cookie or the URL: %q", got)
	}
	if who := tb.value(`document.querySelector("#who").textContent`); !strings.Contains(who, "alice @ acme") {
		t.Fatalf("the header names %q", who)
	}
	// Signing out forgets the token.
	tb.click("#signout")
	tb.until(`document.querySelector("#token") && sessionStorage.getItem("ctxkit.token") === null`)
}

func TestSignInWithLoginLinkWorksOnce(t *testing.T) {
	s := newSite(t)
	code, err := server.MintLoginCode(s.key, server.Principal{OwnerID: "acme", AgentID: "bob", Roles: []string{server.RoleSubscriber}}, server.LoginCodeTTL, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, s)
	tb.open("/ui/#login=" + code)
	tb.until(rows + ` >= 0`)
	if h := tb.value(`location.href`); strings.Contains(h, code) {
		t.Fatalf("the spent code stays in the address bar: %s", h)
	}
	if who := tb.value(`document.querySelector("#who").textContent`); !strings.Contains(who, "bob @ acme · subscriber") {
		t.Fatalf("the header names %q", who)
	}
	// The same link in another browser is refused.
	other := newTab(t, s)
	other.open("/ui/#login=" + code)
	other.until(`document.querySelector("#signin-error") && document.querySelector("#signin-error").textContent.includes("already used")`)
	if got := other.value(`String(sessionStorage.getItem("ctxkit.token"))`); got != "null" {
		t.Fatalf("a spent link signed in: %q", got)
	}
}

func TestListFiltersSearchAndPaging(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	for i := range 60 {
		tag, schema := "even", "plan.v1"
		if i%2 == 1 {
			tag, schema = "odd", "note.v1"
		}
		s.create(tok, map[string]any{"title": fmt.Sprintf("record %02d", i), "tags": []string{tag}, "schema_name": schema,
			"context": map[string]any{"n": i}})
	}
	s.create(tok, map[string]any{"title": "the zanzibar plan", "tags": []string{"odd"}, "context": map[string]any{"where": "zanzibar"}})
	// Another owner's record never shows.
	s.create(s.token("globex", "eve", "emitter"), map[string]any{"title": "globex secret", "context": map[string]any{}})

	tb := newTab(t, s)
	tb.signIn(tok)
	tb.until(rows + ` === 50`)
	if first := tb.value(`document.querySelector("#rows tr a.crumb").textContent`); first != "the zanzibar plan" {
		t.Fatalf("the newest first: got %q", first)
	}
	cells := tb.value(`[...document.querySelectorAll("#rows tr:nth-child(2) td")].map(td => td.textContent).join("|")`)
	if !strings.HasPrefix(cells, "record 59|odd|note.v1|1|") || !strings.HasSuffix(cells, " B") {
		t.Fatalf("a row reads %q; want title, tags, schema, version, updated, size", cells)
	}
	tb.screenshot("list")
	tb.click("#next")
	tb.until(rows + ` === 11 && document.querySelector("#page-no").textContent === "Page 2"`)
	if tb.number(`document.querySelectorAll("#rows tr").length`) != 11 || strings.Contains(tb.value(`document.querySelector("main").textContent`), "globex") {
		t.Fatal("page 2 is wrong")
	}
	tb.click("#first")
	tb.until(rows + ` === 50 && document.querySelector("#page-no").textContent === "Page 1"`)

	tb.fill("tag", "even")
	tb.click(`#filters button[type=submit]`)
	tb.until(rows + ` === 30 && [...document.querySelectorAll("#rows .tag")].every(e => e.textContent === "even")`)
	tb.fill("tag", "")
	tb.fill("schema", "note.v1")
	tb.click(`#filters button[type=submit]`)
	tb.until(rows + ` === 30 && [...document.querySelectorAll("#rows tr td:nth-child(3)")].every(e => e.textContent === "note.v1")`)
	tb.fill("schema", "")
	tb.fill("q", "zanzibar")
	tb.click(`#filters button[type=submit]`)
	tb.until(rows + ` === 1 && document.querySelector("#rows a.crumb").textContent === "the zanzibar plan"`)
	tb.screenshot("search")
}

func TestRecordAppearsLiveAndAfterADrop(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "curator")
	tb := newTab(t, s)
	tb.signIn(tok)
	tb.until(rows + ` === 0 && document.querySelector("#live").textContent === "Live updates on"`)
	s.create(tok, map[string]any{"title": "made through the API", "context": map[string]any{"a": 1}})
	tb.until(rows + ` === 1 && document.querySelector("#rows a.crumb").textContent === "made through the API"`)

	// The connection drops; a change is made while the page is away; the
	// page comes back with Last-Event-ID and shows it.
	release := s.dropStreams()
	tb.until(`document.querySelector("#live").textContent.startsWith("Reconnecting")`)
	s.create(tok, map[string]any{"title": "made while away", "context": map[string]any{"a": 2}})
	release()
	tb.until(rows + ` === 2 && document.querySelector("#rows a.crumb").textContent === "made while away"`)
	s.mu.Lock()
	resumed := s.resumed[len(s.resumed)-1]
	s.mu.Unlock()
	if resumed == "" {
		t.Fatalf("the page reconnected without Last-Event-ID (stream requests: %q)", s.resumed)
	}
}
