package server

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/store"
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
	rc := testRecorder(f)
	const secret = "sk-live0123456789abcdefghijklmnopqrstuv"
	f.Fuzz(func(t *testing.T, req, resp []byte, msg string, extra int) {
		if extra < 0 {
			extra = -extra
		}
		cost := 0.5
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
		ctx := b.Context
		if err := store.Prepare(&b); err != nil {
			t.Fatalf("the store refuses the record: %v", err)
		}
		if strings.Contains(string(b.Context), secret) {
			t.Fatalf("the secret is in the record")
		}
		b.OwnerID, b.CreatedBy = x.Caller.Owner, x.Caller.Agent
		rec, _, ok := rc.open(&b)
		if !ok || rec.Usage == nil || rec.Usage.Output != 2 || rec.CostUSD == nil || *rec.CostUSD != 0.5 {
			t.Fatalf("the record does not open: %s", ctx)
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
