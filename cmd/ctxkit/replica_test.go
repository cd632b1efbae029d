package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

type change struct {
	Seq     int64  `json:"seq"`
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// streamEvents reads an SSE stream into out until the stream ends; it
// returns the response's status.
func streamEvents(ctx context.Context, url, token, lastID string, out chan<- change) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var event, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "":
				if event != "" && event != "ping" {
					var c change
					json.Unmarshal([]byte(data), &c)
					out <- c
				}
				event, data = "", ""
			}
		}
	}()
	return resp.StatusCode, nil
}

// TestReplicasLoseNoEvent: two ctxkit processes on one PostgreSQL database.
// Writers write through A (creates, updates, deletes, from several
// goroutines) while an SSE client listens on B. B is killed with SIGKILL
// mid-stream; the writers go on; the client reconnects to A with
// Last-Event-ID. Every acknowledged write arrives exactly once, in seq
// order and in version order per breadcrumb.
func TestReplicasLoseNoEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills servers; skipped with -short")
	}
	dbURL := pgtest.Shared(t).NewDatabase(t)
	bin := buildCtxkit(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	a := serve(t, bin, dirA, "--db", dbURL)
	if a.token == "" {
		t.Fatal("first start printed no admin token")
	}
	b := serve(t, bin, dirB, "--db", dbURL, "--key", filepath.Join(dirA, "signing.key"))
	tok := a.token
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(method, path, body string) (int, change) {
		req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, change{}
		}
		defer resp.Body.Close()
		var c change
		json.NewDecoder(resp.Body).Decode(&c)
		return resp.StatusCode, c
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan change, 4096)
	if code, err := streamEvents(ctx, b.url, tok, "", first); err != nil || code != 200 {
		t.Fatalf("stream on B: %d %v", code, err)
	}

	var (
		mu    sync.Mutex
		acked = map[string]bool{} // "kind id version" of every acknowledged write
		wg    sync.WaitGroup
		stop  = make(chan struct{})
	)
	ack := func(kind, id string, v int64) {
		mu.Lock()
		acked[fmt.Sprintf("%s %s %d", kind, id, v)] = true
		mu.Unlock()
	}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, c := do("POST", "/breadcrumbs", fmt.Sprintf(`{"title":"w%d-%d","context":{"i":%d}}`, w, i, i))
				if code != 201 {
					t.Errorf("create: %d", code)
					return
				}
				ack("created", c.ID, 1)
				if code, u := do("PATCH", "/breadcrumbs/"+c.ID, `{"title":"patched"}`); code == 200 {
					ack("updated", c.ID, u.Version)
				} else {
					t.Errorf("patch: %d", code)
				}
				if i%3 == 0 {
					if code, _ := do("DELETE", "/breadcrumbs/"+c.ID, ""); code == 204 {
						ack("deleted", c.ID, 2)
					} else {
						t.Errorf("delete: %d", code)
					}
				}
			}
		}()
	}

	var got []change
	lastSeq := func() string { return fmt.Sprint(got[len(got)-1].Seq) }
	// Some events arrive on B, then B dies mid-stream.
	deadline := time.After(20 * time.Second)
	for len(got) < 60 {
		select {
		case c, ok := <-first:
			if !ok {
				t.Fatal("stream on B ended early")
			}
			got = append(got, c)
		case <-deadline:
			t.Fatalf("only %d events reached B through A's writes", len(got))
		}
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.cmd.Wait()
	for c := range first { // whatever B flushed before it died
		got = append(got, c)
	}
	t.Logf("%d events on B before the kill", len(got))
	time.Sleep(300 * time.Millisecond) // writes go on while the client is away

	second := make(chan change, 4096)
	if code, err := streamEvents(ctx, a.url, tok, lastSeq(), second); err != nil || code != 200 {
		t.Fatalf("resume on A: %d %v", code, err)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	mu.Lock()
	want := len(acked)
	mu.Unlock()
	deadline = time.After(20 * time.Second)
	for len(got) < want {
		select {
		case c, ok := <-second:
			if !ok {
				t.Fatal("stream on A ended")
			}
			got = append(got, c)
		case <-deadline:
			t.Fatalf("%d of %d events arrived", len(got), want)
		}
	}
	select {
	case c := <-second:
		t.Fatalf("an event beyond the %d acknowledged writes: %+v", want, c)
	case <-time.After(300 * time.Millisecond):
	}

	seen := map[string]bool{}
	version := map[string]int64{}
	for i, c := range got {
		k := fmt.Sprintf("%s %s %d", c.Kind, c.ID, c.Version)
		if seen[k] {
			t.Errorf("duplicate event %s", k)
		}
		seen[k] = true
		if !acked[k] {
			t.Errorf("event for a write never acknowledged: %s", k)
		}
		if i > 0 && c.Seq <= got[i-1].Seq {
			t.Errorf("seq %d after %d", c.Seq, got[i-1].Seq)
		}
		if c.Kind != "deleted" && c.Version <= version[c.ID] {
			t.Errorf("%s: version %d after %d", c.ID, c.Version, version[c.ID])
		}
		version[c.ID] = c.Version
	}
	for k := range acked {
		if !seen[k] {
			t.Errorf("acknowledged write with no event: %s", k)
		}
	}
	t.Logf("%d writes through A, every one seen exactly once across the kill of B", want)
}
