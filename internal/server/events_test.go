package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/server"
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
