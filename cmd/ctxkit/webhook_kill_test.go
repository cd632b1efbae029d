package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

// hookSink is a webhook receiver that counts what it gets, by
// webhook-id, and the breadcrumbs the events name.
type hookSink struct {
	srv   *httptest.Server
	mu    sync.Mutex
	byID  map[string]int      // webhook-id → times received
	crumb map[string]struct{} // breadcrumb ids of the events received
}

func newHookSink(t *testing.T) *hookSink {
	s := &hookSink{byID: map[string]int{}, crumb: map[string]struct{}{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b struct {
			Event struct {
				ID string `json:"id"`
			} `json:"event"`
		}
		json.Unmarshal(body, &b)
		s.mu.Lock()
		s.byID[r.Header.Get("webhook-id")]++
		s.crumb[b.Event.ID] = struct{}{}
		s.mu.Unlock()
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *hookSink) missing(ids []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := s.crumb[id]; !ok {
			n++
		}
	}
	return n
}

func (s *hookSink) duplicates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.byID {
		n += c - 1
	}
	return n
}

// TestKillNineWebhooksLoseNothing writes matching and other events while
// 'ctxkit serve' (SQLite) delivers them to five healthy receivers and one
// dead one, kills it with SIGKILL mid-load, restarts it, and checks that
// every acknowledged matching event reached every healthy receiver at
// least once. Duplicates are allowed (at-least-once) and reported.
func TestKillNineWebhooksLoseNothing(t *testing.T) {
	bin := buildCtxkit(t)
	data := t.TempDir()
	p := serve(t, bin, data, "--webhook-allow-private")
	client := &http.Client{Timeout: 5 * time.Second}
	url := p.url
	do := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		if json.NewDecoder(resp.Body).Decode(&m) != nil {
			return resp.StatusCode, nil
		}
		return resp.StatusCode, m
	}
	var sinks []*hookSink
	for range 5 {
		sinks = append(sinks, newHookSink(t))
	}
	// A dead endpoint: a port nothing listens on any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/hook"
	ln.Close()
	targets := []string{dead}
	for _, s := range sinks {
		targets = append(targets, s.srv.URL+"/hook")
	}
	for _, u := range targets {
		if code, m := do("POST", "/webhooks", fmt.Sprintf(`{"url": %q, "selector": {"any_tags": ["k"]}}`, u)); code != 201 {
			t.Fatalf("create webhook: %d %v", code, m)
		}
	}

	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tags := `["k"]`
				if i%3 == 2 {
					tags = `["other"]`
				}
				code, m := do("POST", "/breadcrumbs", fmt.Sprintf(`{"title": "w%d-%d", "tags": %s, "context": {"i": %d}}`, w, i, tags, i))
				if code == 201 && tags == `["k"]` {
					mu.Lock()
					acked = append(acked, m["id"].(string))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	close(stop)
	wg.Wait()
	if len(acked) < 20 {
		t.Fatalf("only %d matching writes acknowledged before the kill", len(acked))
	}
	before := 0
	for _, s := range sinks {
		before += len(acked) - s.missing(acked)
	}

	p2 := serve(t, bin, data, "--webhook-allow-private")
	url = p2.url
	deadline := time.Now().Add(2 * time.Minute)
	for {
		missing := 0
		for _, s := range sinks {
			missing += s.missing(acked)
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("losses: %d of %d deliveries of acknowledged events never arrived", missing, len(acked)*len(sinks))
		}
		time.Sleep(50 * time.Millisecond)
	}
	dups := 0
	for _, s := range sinks {
		dups += s.duplicates()
	}
	t.Logf("kill -9 mid-load: %d acknowledged matching events × %d healthy receivers; %d of the %d deliveries arrived before "+
		"the kill, the rest after restart; losses 0, duplicates %d", len(acked), len(sinks), before, len(acked)*len(sinks), dups)
}

// TestKillNineWebhookReplica runs two replicas on one PostgreSQL
// database delivering to five healthy receivers, kills one with SIGKILL
// mid-load and checks that the other delivers every acknowledged
// matching event to every receiver (the dead replica's leased deliveries
// are due again once their lease runs out). Duplicates are reported.
func TestKillNineWebhookReplica(t *testing.T) {
	dbURL := pgtest.Shared(t).NewDatabase(t)
	bin := buildCtxkit(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	flags := []string{"--db", dbURL, "--webhook-allow-private", "--webhook-timeout", "2s"}
	a := serve(t, bin, dirA, flags...)
	b := serve(t, bin, dirB, append(flags, "--key", filepath.Join(dirA, "signing.key"))...)
	client := &http.Client{Timeout: 5 * time.Second}
	do := func(url, method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	var sinks []*hookSink
	for range 5 {
		s := newHookSink(t)
		sinks = append(sinks, s)
		if code, m := do(a.url, "POST", "/webhooks", fmt.Sprintf(`{"url": %q, "selector": {"any_tags": ["k"]}}`, s.srv.URL)); code != 201 {
			t.Fatalf("create webhook: %d %v", code, m)
		}
	}
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := a.url
			if w%2 == 1 {
				url = b.url
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, m := do(url, "POST", "/breadcrumbs", fmt.Sprintf(`{"title": "w%d-%d", "tags": ["k"], "context": {}}`, w, i))
				if code == 201 {
					mu.Lock()
					acked = append(acked, m["id"].(string))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	time.Sleep(500 * time.Millisecond) // replica B goes on taking writes
	close(stop)
	wg.Wait()
	if len(acked) < 20 {
		t.Fatalf("only %d writes acknowledged", len(acked))
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		missing := 0
		for _, s := range sinks {
			missing += s.missing(acked)
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("losses: %d of %d deliveries of acknowledged events never arrived", missing, len(acked)*len(sinks))
		}
		time.Sleep(50 * time.Millisecond)
	}
	dups := 0
	for _, s := range sinks {
		dups += s.duplicates()
	}
	t.Logf("kill -9 of one of two PostgreSQL replicas: %d acknowledged events × %d receivers delivered; losses 0, duplicates %d",
		len(acked), len(sinks), dups)
}
