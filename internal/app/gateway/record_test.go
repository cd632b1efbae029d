package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

func TestRecordsConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	const provider = `"providers":[{"name":"a","type":"openai","base_url":"http://127.0.0.1:1/v1","api_key_env":"CTXKIT_TEST_KEY","models":["m"]}]`
	load := func(records string) (*gateway.Config, error) {
		p := filepath.Join(dir, "c.json")
		os.WriteFile(p, []byte(`{`+provider+records+`}`), 0o600)
		return gateway.LoadConfig(p)
	}
	for _, c := range []struct{ records, want string }{
		{`,"records":{"ttl":"1s"}`, "records.ttl: 1s is not between 1m0s and"},
		{`,"records":{"ttl":"100000h"}`, "records.ttl: 100000h0m0s is not between"},
		{`,"records":{"ttl":"soon"}`, `"soon" is not a duration`},
		{`,"records":{"queue":-1}`, "records.queue: -1 is not between 1 and"},
		{`,"records":{"queue":2000000}`, "records.queue: 2000000 is not between 1 and"},
		{`,"records":{"size":1}`, `unknown field "size"`},
	} {
		if _, err := load(c.records); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.records, err, c.want)
		}
	}
	cfg, err := load(`,"records":{"ttl":"24h"}`)
	if err != nil {
		t.Fatal(err)
	}
	if ttl, queue := gateway.New(cfg, gateway.Options{}).RecordSettings(); ttl != 24*time.Hour || queue != gateway.DefaultRecordQueue {
		t.Errorf("settings: %v %d", ttl, queue)
	}
	cfg, _ = load("")
	if ttl, queue := gateway.New(cfg, gateway.Options{}).RecordSettings(); ttl != gateway.DefaultRecordTTL || queue != gateway.DefaultRecordQueue {
		t.Errorf("defaults: %v %d", ttl, queue)
	}
}

// exchanges is a Recorder that keeps what it is handed.
type exchanges struct {
	mu  sync.Mutex
	got []*gateway.Exchange
}

func (e *exchanges) Record(_ context.Context, x *gateway.Exchange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, x)
}

// TestRecordedBodiesBounded: the gateway hands a recorder the start of a
// large request and of a large streamed answer, with their whole sizes,
// never all of them.
func TestRecordedBodiesBounded(t *testing.T) {
	big := strings.Repeat("y", 600<<10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 700 {
			w.Write([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("z", 1000) + "\"}}]}\n\n"))
		}
		w.Write([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9}}\n\ndata: [DONE]\n\n"))
	}))
	defer up.Close()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	p := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(p, []byte(`{"providers":[{"name":"a","type":"openai","base_url":"`+up.URL+`/v1","api_key_env":"CTXKIT_TEST_KEY","models":["m-direct"]}],`+
		`"routes":[{"model":"m","targets":[{"provider":"a","model":"m"}],"record":true}]}`), 0o600)
	cfg, err := gateway.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	rec := &exchanges{}
	g.SetRecorder(rec)
	srv := httptest.NewServer(http.HandlerFunc(g.ChatCompletions))
	defer srv.Close()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + big + `"}]}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := readAll(resp)
	if resp.StatusCode != 200 || n < 700_000 {
		t.Fatalf("%d, %d bytes", resp.StatusCode, n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 {
		t.Fatalf("%d exchanges recorded", len(rec.got))
	}
	x := rec.got[0]
	if x.RequestSize != int64(len(body)) || len(x.Request) > gateway.RecordedBodyBytes+16<<10 || len(x.Request) < gateway.RecordedBodyBytes {
		t.Errorf("request: %d bytes kept of %d", len(x.Request), x.RequestSize)
	}
	if x.ResponseSize < 700_000 || len(x.Response) > gateway.RecordedBodyBytes+16<<10 {
		t.Errorf("response: %d bytes kept of %d", len(x.Response), x.ResponseSize)
	}
	if x.Usage == nil || x.Usage.Output != 9 || x.Status != 200 || !x.Stream || x.FirstByte <= 0 || x.Total < x.FirstByte || len(x.Attempts) != 1 {
		t.Errorf("exchange: %+v", x)
	}
	if len(x.FirstMessage) > 2*gateway.ExcerptBytes || !strings.HasPrefix(x.FirstMessage, "yyy") {
		t.Errorf("first message excerpt: %d bytes", len(x.FirstMessage))
	}
}

func readAll(resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// TestRecordedCancel: a client that goes away in the middle of a stream
// leaves a record of what it got, marked canceled.
func TestRecordedCancel(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	p := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(p, []byte(`{"providers":[{"name":"a","type":"openai","base_url":"`+up.URL+`/v1","api_key_env":"CTXKIT_TEST_KEY","models":["m-direct"]}],`+
		`"routes":[{"model":"m","targets":[{"provider":"a","model":"m"}],"record":true}]}`), 0o600)
	cfg, err := gateway.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(cfg, gateway.Options{})
	rec := &exchanges{}
	g.SetRecorder(rec)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		g.Messages(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var got string
	for !strings.Contains(got, "partial") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("%v after %q", err, got)
		}
		got += string(buf[:n])
	}
	cancel()
	resp.Body.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway went on after the client left")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 {
		t.Fatalf("%d exchanges recorded", len(rec.got))
	}
	x := rec.got[0]
	if x.ErrorClass != "canceled" || x.Status != 200 || !strings.Contains(string(x.Response), "partial") || x.LastMessage != "partial" {
		t.Errorf("exchange: class %q status %d response %s last %q", x.ErrorClass, x.Status, x.Response, x.LastMessage)
	}
}
