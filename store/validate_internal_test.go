package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// resetHintsCache empties acceptedHints for a test and again after it.
func resetHintsCache(t testing.TB) {
	clear := func() {
		acceptedHints.mu.Lock()
		acceptedHints.m = map[string][]byte{}
		acceptedHints.bytes = 0
		acceptedHints.mu.Unlock()
	}
	clear()
	t.Cleanup(clear)
}

// TestPrepareHintsRemembered: hints Prepare has accepted are given the
// same canonical form again without the cache being visible: the record
// that gets them may change its copy, refused hints are refused every
// time with their field, and differently spelled hints get their own
// entry with the same canonical form.
func TestPrepareHintsRemembered(t *testing.T) {
	resetHintsCache(t)
	prepare := func(hints string) (*Breadcrumb, error) {
		b := &Breadcrumb{Title: "t", Context: []byte(`{"a":1}`), LLMHints: []byte(hints)}
		return b, Prepare(b)
	}
	const hints = ` {"exclude": ["request", "response"], "mode": "replace"} `
	const canon = `{"exclude":["request","response"],"mode":"replace"}`
	for i := range 3 {
		b, err := prepare(hints)
		if err != nil || string(b.LLMHints) != canon {
			t.Fatalf("write %d: %s, %v", i, b.LLMHints, err)
		}
		b.LLMHints[2] = 'X' // the record's own copy
	}
	if n := len(acceptedHints.m); n != 1 {
		t.Fatalf("%d hints remembered, want 1", n)
	}
	if b, err := prepare(canon); err != nil || string(b.LLMHints) != canon {
		t.Fatalf("canonical spelling: %s, %v", b.LLMHints, err)
	}

	for i := range 2 {
		_, err := prepare(`{"exclude":["a..b"]}`)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalid || !strings.HasPrefix(e.Path, "llm_hints.exclude") {
			t.Fatalf("refused hints, write %d: %v", i, err)
		}
		_, err = prepare(`{"mode":"x\u0000"}`)
		if !errors.As(err, &e) || !strings.HasPrefix(e.Path, "llm_hints") {
			t.Fatalf("hints with NUL, write %d: %v", i, err)
		}
	}
	if n := len(acceptedHints.m); n != 2 {
		t.Fatalf("%d hints remembered after refusals, want 2", n)
	}
}

// TestHintsCacheBounds: however many distinct hints are written, the
// cache holds at most hintsCacheEntries of them and hintsCacheBytes in
// all, leaves out large documents, and what it holds is what Prepare
// would write without it.
func TestHintsCacheBounds(t *testing.T) {
	resetHintsCache(t)
	check := func(when string) {
		t.Helper()
		total := 0
		for k, v := range acceptedHints.m {
			total += len(k) + len(v)
		}
		if len(acceptedHints.m) > hintsCacheEntries || total > hintsCacheBytes || total != acceptedHints.bytes {
			t.Fatalf("%s: %d entries, %d bytes (counted %d)", when, len(acceptedHints.m), total, acceptedHints.bytes)
		}
	}
	for i := range 3 * hintsCacheEntries {
		h := fmt.Sprintf(`{"exclude":["field%d"]}`, i)
		b := &Breadcrumb{Title: "t", Context: []byte(`{}`), LLMHints: []byte(h)}
		if err := Prepare(b); err != nil || string(b.LLMHints) != h {
			t.Fatalf("%s: %s, %v", h, b.LLMHints, err)
		}
	}
	check("after many small hints")
	if len(acceptedHints.m) != hintsCacheEntries {
		t.Fatalf("%d entries, want a full cache of %d", len(acceptedHints.m), hintsCacheEntries)
	}

	// Documents of some 20 KiB: the bytes bound, not the count, binds.
	for i := range 3 * hintsCacheBytes / (40 << 10) {
		h := fmt.Sprintf(`{"exclude":["f%d",%s"last"]}`, i, strings.Repeat(`"a.b.c.d.e.f.g.h",`, (10<<10)/18))
		b := &Breadcrumb{Title: "t", Context: []byte(`{}`), LLMHints: []byte(h)}
		if err := Prepare(b); err != nil {
			t.Fatal(err)
		}
	}
	check("after large hints")
	if acceptedHints.bytes <= hintsCacheBytes/2 {
		t.Fatalf("%d bytes held: large documents were not remembered", acceptedHints.bytes)
	}

	huge := []byte(`{"exclude":[` + strings.Repeat(`"a.b.c.d.e.f.g.h",`, hintsCacheMaxEntry/18) + `"last"]}`)
	b := &Breadcrumb{Title: "t", Context: []byte(`{}`), LLMHints: huge}
	if err := Prepare(b); err != nil {
		t.Fatal(err)
	}
	if _, ok := acceptedHints.m[string(huge)]; ok {
		t.Fatal("a document over hintsCacheMaxEntry was remembered")
	}
	check("after a huge document")

	// What is remembered is what Prepare writes without the cache.
	for k, v := range acceptedHints.m {
		acceptedHints.mu.Lock()
		delete(acceptedHints.m, k)
		acceptedHints.mu.Unlock()
		b := &Breadcrumb{Title: "t", Context: []byte(`{}`), LLMHints: []byte(k)}
		if err := Prepare(b); err != nil || !bytes.Equal(b.LLMHints, v) {
			t.Fatalf("%.40s: remembered %.40s, prepared %.40s (%v)", k, v, b.LLMHints, err)
		}
		break
	}
}

// TestHintsCacheConcurrent: writers preparing records at once (the
// store's HTTP handlers and the gateway's record writer do) see the same
// hints, under -race.
func TestHintsCacheConcurrent(t *testing.T) {
	resetHintsCache(t)
	done := make(chan error)
	for w := range 8 {
		go func() {
			var err error
			for i := range 200 {
				h := fmt.Sprintf(`{"exclude":["f%d"]}`, (w*200+i)%(2*hintsCacheEntries))
				b := &Breadcrumb{Title: "t", Context: []byte(`{"a":1}`), LLMHints: []byte(h)}
				if e := Prepare(b); e != nil || string(b.LLMHints) != h {
					err = fmt.Errorf("%s: %s, %v", h, b.LLMHints, e)
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkPrepare is Prepare's cost for a gateway record: a context of
// about 900 bytes and the same hints every time.
func BenchmarkPrepare(b *testing.B) {
	ctx := []byte(`{"provider":"openai","model":"gpt-x","route":"/v1/chat/completions","status":200,"duration_ms":412,` +
		`"usage":{"input_tokens":1200,"output_tokens":87,"cost_usd":0.00131},"first_message":"summarise the attached notes about the release",` +
		`"last_message":"and keep it under a hundred words, please","request":{"model":"gpt-x","max_tokens":50,"messages":[{"role":"user","content":"summarise the attached notes about the release <draft> & more"}]},` +
		`"response":{"id":"chatcmpl-0123456789","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"The release adds a gateway, records and views."},"finish_reason":"stop"}]},` +
		`"seal":{"alg":"ed25519","sig":"c2lnbmF0dXJlIGJ5dGVzIGdvIGhlcmUgYW5kIGFyZSBsb25nIGVub3VnaA"}}`)
	hints := []byte(`{"exclude":["request","response","seal"]}`)
	b.ReportAllocs()
	for b.Loop() {
		r := Breadcrumb{Title: "gateway exchange", Context: ctx, Tags: []string{"gateway", "openai"}, SchemaName: "ctxkit.gateway.exchange/v1", LLMHints: hints}
		if err := Prepare(&r); err != nil {
			b.Fatal(err)
		}
	}
}
