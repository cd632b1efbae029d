package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

type sse struct {
	id, event, data string
}

// subscribe opens an event stream and returns its events as they arrive.
func (e *env) subscribe(token, query string, headers ...string) (<-chan sse, func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/events/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		e.t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sse, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" {
					out <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				cur.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				cur.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out, cancel
}

func next(t *testing.T, ch <-chan sse, skipPings bool) sse {
	t.Helper()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("stream closed")
			}
			if skipPings && ev.event == "ping" {
				continue
			}
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
		}
	}
}

func TestEventStream(t *testing.T) {
	e := newEnv(t, func(o *server.Options) { o.PingEvery = 100 * time.Millisecond })
	writer := e.token("acme", "w", server.RoleEmitter)
	sub := e.token("acme", "s", server.RoleSubscriber)
	evil := e.token("evil", "m", server.RoleCurator)

	want(t, e.do("GET", "/events/stream", writer, nil), 403, "subscriber")
	want(t, e.do("GET", "/events/stream", sub, nil, "Last-Event-ID", "x"), 400, "Last-Event-ID")

	all, stopAll := e.subscribe(sub, "")
	defer stopAll()
	tagged, stopTagged := e.subscribe(sub, "?tag=hot&schema_name=s.v1")
	defer stopTagged()
	theirs, stopTheirs := e.subscribe(evil, "")
	defer stopTheirs()

	plain := e.create(writer, map[string]any{"title": "plain", "context": map[string]any{}})
	hot := e.create(writer, map[string]any{"title": "hot", "context": map[string]any{}, "tags": []string{"hot"}, "schema_name": "s.v1"})
	e.do("PATCH", "/breadcrumbs/"+plain, writer, map[string]any{"title": "plain 2"})

	ev := next(t, all, true)
	var data struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
		Kind    string `json:"kind"`
	}
	json.Unmarshal([]byte(ev.data), &data)
	if ev.event != "created" || data.ID != plain || ev.id == "" {
		t.Fatalf("first event %+v", ev)
	}
	firstID := ev.id
	if ev = next(t, all, true); ev.event != "created" || !strings.Contains(ev.data, hot) {
		t.Fatalf("second event %+v", ev)
	}
	if ev = next(t, all, true); ev.event != "updated" || !strings.Contains(ev.data, `"version":2`) {
		t.Fatalf("third event %+v", ev)
	}
	if ev = next(t, tagged, true); !strings.Contains(ev.data, hot) {
		t.Fatalf("filtered stream got %+v", ev)
	}
	if ev = next(t, all, false); ev.event != "ping" {
		t.Fatalf("no ping: %+v", ev)
	}
	// The other owner's stream saw nothing but pings.
	select {
	case ev := <-theirs:
		if ev.event != "ping" {
			t.Fatalf("another owner received %+v", ev)
		}
	case <-time.After(300 * time.Millisecond):
	}
	// Only the one matching event reached the filtered stream.
	quiet := time.After(300 * time.Millisecond)
drain:
	for {
		select {
		case ev := <-tagged:
			if ev.event != "ping" {
				t.Fatalf("filtered stream got an extra %+v", ev)
			}
		case <-quiet:
			break drain
		}
	}

	// Resume: events made while disconnected arrive after Last-Event-ID.
	stopAll()
	third := e.create(writer, map[string]any{"title": "while away", "context": map[string]any{}})
	resumed, stopResumed := e.subscribe(sub, "", "Last-Event-ID", firstID)
	defer stopResumed()
	got := []string{}
	for len(got) < 3 {
		ev := next(t, resumed, true)
		got = append(got, ev.event)
		if len(got) == 3 && !strings.Contains(ev.data, third) {
			t.Fatalf("resume missed the event made while away: %+v", ev)
		}
	}
	if strings.Join(got, ",") != "created,updated,created" {
		t.Fatalf("resumed events %v", got)
	}
}

// TestEventStreamsGetTheirShare: event streams of several owners, agents
// (with and without the curator role) and filters, open while writes of
// every kind interleave through the API (creates of each visibility,
// updates that change tags, schema and visibility, deletes). Each stream
// receives exactly the changes its caller may see and its filter lets
// through, in order: the same as a stream that resumes from the start
// afterwards and reads them from the backlog, and the same as the
// visibility rule applied to the writes. Closed streams leave no
// goroutine behind.
func TestEventStreamsGetTheirShare(t *testing.T) {
	e := newEnv(t, func(o *server.Options) { o.PingEvery = time.Hour })
	type caller struct {
		actor store.Actor
		token string
	}
	var callers []caller
	for _, c := range []struct {
		owner, agent string
		roles        []string
	}{
		{"acme", "alice", []string{server.RoleEmitter, server.RoleSubscriber}},
		{"acme", "bob", []string{server.RoleEmitter, server.RoleSubscriber}},
		{"acme", "root", []string{server.RoleCurator}},
		{"globex", "gina", []string{server.RoleEmitter, server.RoleSubscriber}},
		{"globex", "root", []string{server.RoleCurator}},
	} {
		a := store.Actor{OwnerID: c.owner, AgentID: c.agent, Curator: slices.Contains(c.roles, server.RoleCurator)}
		callers = append(callers, caller{a, e.token(c.owner, c.agent, c.roles...)})
	}
	filters := []struct {
		query  string
		filter *store.Selector
	}{
		{"", nil},
		{"?tag=hot", mustSelector(t, `{"all_tags":["hot"]}`)},
		{"?tag=hot&tag=cold", mustSelector(t, `{"all_tags":["hot","cold"]}`)},
		{"?schema_name=s.v1", mustSelector(t, `{"schema_name":"s.v1"}`)},
	}
	for _, src := range []string{
		`{"any_tags":["cold"],"schema_name":"s.*","kinds":["created","deleted"]}`,
		`{"context_match":[{"path":"$.i","op":"lt","value":60}]}`,
		`{"all_tags":["hot"],"context_match":[{"path":"$.i","op":"gt","value":20},{"path":"$.i","op":"ne","value":77}]}`,
	} {
		filters = append(filters, struct {
			query  string
			filter *store.Selector
		}{"?selector=" + url.QueryEscape(src), mustSelector(t, src)})
	}
	many := url.Values{}
	for i := range store.MaxTags + 1 {
		many.Add("tag", fmt.Sprint("t", i))
	}
	want(t, e.do("GET", "/events/stream?"+many.Encode(), callers[0].token, nil), 400, `"tag`)

	http.DefaultClient.CloseIdleConnections()
	baseline := runtime.NumGoroutine()
	type stream struct {
		c      caller
		query  string
		filter *store.Selector
		mu     sync.Mutex
		got    []sse
		stop   func()
	}
	var streams []*stream
	for _, c := range callers {
		for _, f := range filters {
			ch, stop := e.subscribe(c.token, f.query)
			st := &stream{c: c, query: f.query, filter: f.filter, stop: stop}
			go func() {
				for ev := range ch {
					if ev.event != "ping" {
						st.mu.Lock()
						st.got = append(st.got, ev)
						st.mu.Unlock()
					}
				}
			}()
			streams = append(streams, st)
		}
	}

	r := rand.New(rand.NewPCG(5, 6))
	var (
		log  []store.Change
		live []store.Breadcrumb
	)
	content := func() map[string]any {
		var tags []string
		for _, t := range []string{"hot", "cold"} {
			if r.IntN(2) == 0 {
				tags = append(tags, t)
			}
		}
		return map[string]any{"visibility": []string{"team", "private", "public"}[r.IntN(3)], "tags": tags,
			"schema_name": []string{"", "s.v1", "s.v2"}[r.IntN(3)]}
	}
	record := func(kind store.EventKind, body []byte) store.Breadcrumb {
		var b store.Breadcrumb
		if err := json.Unmarshal(body, &b); err != nil || b.ID == "" {
			t.Fatalf("%s: %s", kind, body)
		}
		log = append(log, store.Change{Event: store.Event{Kind: kind, BreadcrumbID: b.ID, Version: b.Version, Tags: b.Tags, SchemaName: b.SchemaName},
			OwnerID: b.OwnerID, Visibility: b.Visibility, CreatedBy: b.CreatedBy, Context: b.Context})
		return b
	}
	for i := range 150 {
		c := callers[r.IntN(len(callers))]
		var mine []int
		for j := range live {
			if store.Writable(c.actor, &live[j]) {
				mine = append(mine, j)
			}
		}
		switch op := r.IntN(10); {
		case op < 5 || len(mine) == 0:
			body := content()
			body["title"], body["context"] = fmt.Sprint("w", i), map[string]any{"i": i}
			res := e.do("POST", "/breadcrumbs", c.token, body)
			if res.status != 201 {
				t.Fatalf("create: %d %s", res.status, res.body)
			}
			full := e.do("GET", "/breadcrumbs/"+res.json(t)["id"].(string)+"/full", c.token, nil)
			live = append(live, record(store.Created, full.body))
		case op < 8 || !c.actor.Curator:
			j := mine[r.IntN(len(mine))]
			res := e.do("PATCH", "/breadcrumbs/"+live[j].ID, c.token, content())
			if res.status != 200 {
				t.Fatalf("update: %d %s", res.status, res.body)
			}
			live[j] = record(store.Updated, res.body)
		default:
			j := mine[r.IntN(len(mine))]
			if res := e.do("DELETE", "/breadcrumbs/"+live[j].ID, c.token, nil); res.status != 204 {
				t.Fatalf("delete: %d %s", res.status, res.body)
			}
			b := live[j] // a delete event carries the version deleted
			log = append(log, store.Change{Event: store.Event{Kind: store.Deleted, BreadcrumbID: b.ID, Version: b.Version, Tags: b.Tags, SchemaName: b.SchemaName},
				OwnerID: b.OwnerID, Visibility: b.Visibility, CreatedBy: b.CreatedBy})
			live = slices.Delete(live, j, j+1)
		}
	}

	type seen struct {
		id, kind string
		version  int64
	}
	decode := func(evs []sse) []seen {
		out := make([]seen, len(evs))
		for i, ev := range evs {
			var d struct {
				ID      string `json:"id"`
				Version int64  `json:"version"`
			}
			json.Unmarshal([]byte(ev.data), &d)
			out[i] = seen{d.ID, ev.event, d.Version}
		}
		return out
	}
	gone := map[string]bool{}
	for _, c := range log {
		if c.Kind == store.Deleted {
			gone[c.BreadcrumbID] = true
		}
	}
	for _, st := range streams {
		var expect []seen
		for _, c := range log {
			var doc any
			if c.Context != nil {
				doc, _ = view.DecodeJSON(c.Context)
			}
			if c.VisibleTo(st.c.actor) && st.filter.Match(&c.Event, doc) {
				expect = append(expect, seen{c.BreadcrumbID, string(c.Kind), c.Version})
			}
		}
		var got []sse
		for deadline := time.Now().Add(10 * time.Second); ; {
			st.mu.Lock()
			got = slices.Clone(st.got)
			st.mu.Unlock()
			if len(got) >= len(expect) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !slices.Equal(decode(got), expect) {
			t.Fatalf("%+v %q: got %v, want %v", st.c.actor, st.query, decode(got), expect)
		}
		if len(expect) == 0 {
			continue
		}
		// The same from the backlog, with the same ids, but for the
		// changes of records deleted since, which answer the context
		// conditions of no agent but a curator any more.
		var replay []sse
		for i, x := range decode(got) {
			if !(st.filter.NeedsContext() && !st.c.actor.Curator && gone[x.id] && x.kind != string(store.Deleted)) {
				replay = append(replay, got[i])
			}
		}
		if len(replay) == 0 {
			continue
		}
		resumed, stop := e.subscribe(st.c.token, st.query, "Last-Event-ID", "0")
		var backlog []sse
		for len(backlog) < len(replay) {
			backlog = append(backlog, next(t, resumed, true))
		}
		stop()
		if !slices.EqualFunc(backlog, replay, func(x, y sse) bool { return x == y }) {
			t.Fatalf("%+v %q: live %v, from the backlog %v", st.c.actor, st.query, got, backlog)
		}
	}

	for _, st := range streams {
		st.stop()
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		t.Fatalf("%d goroutines after the streams closed, %d before they opened", n, baseline)
	}
}

// mustSelector parses a selector the test means to be valid.
func mustSelector(t *testing.T, src string) *store.Selector {
	t.Helper()
	sel, err := store.ParseSelector([]byte(src))
	if err != nil {
		t.Fatalf("selector %s: %v", src, err)
	}
	return sel
}
