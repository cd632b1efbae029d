package server

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlite"
	"github.com/ctxkit/ctxkit/wire"
)

func testRecorder(t testing.TB) *exchangeRecorder {
	_, key, _ := ed25519.GenerateKey(nil)
	s := New(Options{Key: key, Gateway: gateway.New(&gateway.Config{}, gateway.Options{})})
	return s.records
}

// FuzzExchangeRecord: whatever bodies and excerpts an exchange holds, its
// record is one the store takes (bounded, valid, no NUL), its seal
// holds, and a known secret in it is redacted.
func FuzzExchangeRecord(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"key sk-live0123456789abcdefghijklmnopqrstuv"}]}`), []byte(`{"ok":true}`), "hi", 10)
	f.Add([]byte("not json \x00 \xff sk-live0123456789abcdefghijklmnopqrstuv"), []byte("data: {}\n\n"), "\x00", 0)
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`), []byte(`"\u0000"`), "", 1<<20)
	f.Add([]byte(strings.Repeat(`\"`, 1000)), []byte(strings.Repeat("\x01", 3000)), strings.Repeat("é", 300), 5)
	f.Add([]byte(`{"b":"<a href=\"x\">&amp;</a> \u2028","a":[1e300,-0.0000001,1.5e-7,12345678901234567890]}`), []byte("<&>\u2028 \xe2\x80\xa8"), "<route & model>", 7)
	thought := wire.SealSignature(wire.HomeAnthropic, "sig", "key sk-live0123456789abcdefghijklmnopqrstuv")
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"thoughtSignature":"`+thought+`"}]}]}`), []byte("data: {\"s\":\""+thought+"\"}\n\n"), thought, 0)
	f.Add([]byte(`{"a":"`+thought[:40]+`"}`), []byte("data: "+thought[:41]), "x "+thought, 3)
	rc := testRecorder(f)
	const secret = "sk-live0123456789abcdefghijklmnopqrstuv"
	f.Fuzz(func(t *testing.T, req, resp []byte, msg string, extra int) {
		if extra < 0 {
			extra = -extra
		}
		cost := 0.5 + float64(extra)/3e9 // fractions and exponents as the encoder writes them
		x := &gateway.Exchange{
			Caller: gateway.Caller{Owner: "o", Agent: "a"}, Dialect: "openai", Route: msg, Started: time.Now(), Status: 200,
			Attempts: []gateway.Attempt{{Provider: "p", Model: msg, Status: 200}}, Usage: &chat.Usage{Input: 1, Output: 2, Cost: &cost},
			Request: req, RequestSize: int64(len(req) + extra), Response: resp, ResponseSize: int64(len(resp)),
			FirstMessage: msg, LastMessage: msg + " " + secret,
		}
		b, err := rc.breadcrumb(x)
		if err != nil {
			t.Fatal(err)
		}
		// The search text it is written with reads into the store's own
		// words of it.
		derived := b
		derived.SearchText = ""
		if got, want := store.Document(&b).Body, store.Document(&derived).Body; !slices.Equal(got, want) {
			t.Fatalf("search words %q; the store's own: %q", got, want)
		}
		ctx := b.Context
		if err := store.Prepare(&b); err != nil {
			t.Fatalf("the store refuses the record: %v", err)
		}
		if string(b.Context) != string(ctx) {
			t.Fatalf("the record is not in the store's canonical form:\n%s\n%s", ctx, b.Context)
		}
		if strings.Contains(string(b.Context), secret) {
			t.Fatalf("the secret is in the record")
		}
		b.OwnerID, b.CreatedBy = x.Caller.Owner, x.Caller.Agent
		rec, _, ok := rc.open(&b)
		if !ok || rec.Usage == nil || rec.Usage.Output != 2 || rec.CostUSD == nil || *rec.CostUSD != cost {
			t.Fatalf("the record does not open: %s", ctx)
		}
		// What the client and the model said (not the route's and
		// model's names, which the configuration gives) holds no
		// envelope with anything in it the redactor would change; the
		// search text is made of it.
		for _, said := range []string{string(rec.Request), string(rec.Response), rec.Summary.FirstMessage, rec.Summary.LastMessage} {
			if bad := sealedUnredacted(rc, said); len(bad) > 0 {
				t.Fatalf("the secret is sealed in the record: %q", bad)
			}
		}
		if extra > 0 && !rec.RequestTruncated {
			t.Fatalf("a cut request not marked")
		}
		var m map[string]any
		if json.Unmarshal(b.Context, &m) != nil {
			t.Fatal("not JSON")
		}
	})
}

// TestExchangeRecordLarge: bodies that escape to several times their
// size still make a record within the store's bound.
func TestExchangeRecordLarge(t *testing.T) {
	rc := testRecorder(t)
	body := []byte(strings.Repeat("\x01", gateway.RecordedBodyBytes))
	x := &gateway.Exchange{Caller: gateway.Caller{Owner: "o", Agent: "a"}, Route: "m", Request: body, RequestSize: int64(len(body)),
		Response: body, ResponseSize: int64(len(body))}
	b, err := rc.breadcrumb(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Prepare(&b); err != nil {
		t.Fatal(err)
	}
	b.OwnerID, b.CreatedBy = x.Caller.Owner, x.Caller.Agent
	rec, _, ok := rc.open(&b)
	if !ok || !rec.RequestTruncated || !rec.ResponseTruncated || len(b.Context) > store.MaxContextBytes {
		t.Fatalf("%d bytes, truncated %v %v", len(b.Context), rec.RequestTruncated, rec.ResponseTruncated)
	}
}

// benchExchange is an exchange like those of BenchmarkRecordOverhead: a
// short prompt, a short answer in the Anthropic dialect.
func benchExchange() *gateway.Exchange {
	req := []byte(`{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"hello there, a prompt of a few words"}]}`)
	resp := []byte(`{"id":"msg_0123456789","type":"message","role":"assistant","model":"gpt-x","content":[{"type":"text","text":"Hello, world"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7}}`)
	return &gateway.Exchange{
		Caller: gateway.Caller{Owner: "acme", Agent: "agent"}, Dialect: "anthropic", Route: "gpt-x", Started: time.Now(), Status: 200,
		Attempts: []gateway.Attempt{{Provider: "up", Model: "gpt-x", Status: 200, Latency: 700 * time.Microsecond}},
		Usage:    &chat.Usage{Input: 100, Output: 7}, FirstByte: 800 * time.Microsecond, Total: 900 * time.Microsecond,
		Request: req, RequestSize: int64(len(req)), Response: resp, ResponseSize: int64(len(resp)),
		FirstMessage: "hello there, a prompt of a few words", LastMessage: "Hello, world",
	}
}

// BenchmarkRecordWriter is the writer's cost per record, apart from any
// load: "record" makes the sealed breadcrumb of an exchange; "store/1"
// makes it and writes it to a SQLite store alone (a transaction per
// record), "store/32" and "store/128" in batches of 32 and 128 (the
// writer's largest), as the writer does under load.
// cpu-ns/record is the process's CPU time (user and system) per record,
// which the machine's other work hardly changes; writes/record and
// written-B/record are the write calls the process made (SQLite's, to
// its log and its file) and the bytes they wrote, which it does not
// change at all.
func BenchmarkRecordWriter(b *testing.B) {
	cpu := func(b *testing.B, run func()) {
		b.ReportAllocs()
		start := ProcessCPU()
		calls, written, _ := processWrites()
		n := 0
		for b.Loop() {
			run()
			n++
		}
		if used := ProcessCPU() - start; used > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(n), "cpu-ns/record")
		}
		if c, w, ok := processWrites(); ok {
			b.ReportMetric(float64(c-calls)/float64(n), "writes/record")
			b.ReportMetric(float64(w-written)/float64(n), "written-B/record")
		}
	}
	b.Run("record", func(b *testing.B) {
		rc := testRecorder(b)
		x := benchExchange()
		cpu(b, func() {
			if _, err := rc.breadcrumb(x); err != nil {
				b.Fatal(err)
			}
		})
	})
	// "large" exchanges carry bodies of some 16 KiB each, as a long
	// conversation does: the record's search text leaves them out.
	large := benchExchange()
	turn := `{"role":"user","content":"a longer prompt of a conversation that goes on for a while, turn after turn"},`
	large.Request = []byte(`{"model":"gpt-x","max_tokens":50,"messages":[` + strings.Repeat(turn, 160) + `{"role":"user","content":"last"}]}`)
	large.Response = []byte(`{"id":"msg_0123456789","type":"message","role":"assistant","model":"gpt-x","content":[{"type":"text","text":"` +
		strings.Repeat("words of an answer that is long ", 500) + `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7}}`)
	large.RequestSize, large.ResponseSize = int64(len(large.Request)), int64(len(large.Response))
	for _, c := range []struct {
		name string
		size int
		x    *gateway.Exchange
	}{{"store/1", 1, benchExchange()}, {"store/32", 32, benchExchange()}, {"store/128", 128, benchExchange()}, {"store/32/large", 32, large}} {
		size := c.size
		b.Run(c.name, func(b *testing.B) {
			db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ctxkit.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			_, key, _ := ed25519.GenerateKey(nil)
			s := New(Options{Store: db, Key: key, Gateway: gateway.New(&gateway.Config{}, gateway.Options{})})
			rc := s.records
			x := c.x
			var batch []*gateway.Exchange
			// One op is one record; a batch is written when it is full.
			cpu(b, func() {
				if batch = append(batch, x); len(batch) == size {
					rc.keep(batch)
					batch = batch[:0]
				}
			})
			if len(batch) > 0 {
				rc.keep(batch)
			}
			if lost := rc.dropped.WithLabelValues("store_error").Value(); lost > 0 {
				b.Fatalf("%v records not written", lost)
			}
		})
	}
}

// TestRecordSearchText checks that the search text a record is written
// with reads into the words the store would derive from the whole record
// (the view's: no body, no seal), for records with and without
// usage, with words of other scripts, and with bodies whose words must
// not be found.
func TestRecordSearchText(t *testing.T) {
	rc := testRecorder(t)
	plain := benchExchange()
	odd := benchExchange()
	odd.FirstMessage = "İstanbul'da ÇAĞRI Ⅻ straße ǅemal — ½ 日本語の文"
	odd.LastMessage = strings.Repeat("word ", 300)
	odd.Request = []byte(`{"messages":[{"role":"user","content":"zebrabody in the request"}]}`)
	odd.Response = []byte(`{"content":"zebrabody in the response"}`)
	odd.Usage, odd.CostUSD = nil, nil
	for i, x := range []*gateway.Exchange{plain, odd} {
		b, err := rc.breadcrumb(x)
		if err != nil {
			t.Fatal(err)
		}
		if b.SearchText == "" {
			t.Fatalf("exchange %d: no search text", i)
		}
		got := store.Document(&b).Body
		derived := b
		derived.SearchText = ""
		want := store.Document(&derived).Body
		if !slices.Equal(got, want) {
			t.Errorf("exchange %d: search words\n%q\nwant the store's own\n%q", i, got, want)
		}
		if slices.Contains(got, "zebrabody") {
			t.Errorf("exchange %d: a body's word is searchable: %q", i, got)
		}
	}
}
