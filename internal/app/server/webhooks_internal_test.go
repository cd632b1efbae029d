package server

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// faultPath is the field a refusal names: every bad input names one.
func faultPath(t *testing.T, err error) string {
	t.Helper()
	var ae *Error
	var se *store.Error
	switch {
	case errors.As(err, &ae):
		if ae.Status >= 500 {
			t.Fatalf("a bad input answered %d: %v", ae.Status, err)
		}
		if ae.Path == "" && ae.Code != "unknown_field" && ae.Code != "invalid_json" && ae.Code != "invalid_utf8" && ae.Code != "too_deep" && ae.Code != Code(store.CodeInvalid) {
			t.Fatalf("refusal names no field: %v", err)
		}
		return ae.Path
	case errors.As(err, &se):
		if se.Code != store.CodeInvalid && se.Code != store.CodeTooLarge || se.Path == "" {
			t.Fatalf("store refusal %q names no field: %v", se.Code, err)
		}
		return se.Path
	}
	t.Fatalf("not a refusal: %T %v", err, err)
	return ""
}

func fuzzServer(t testing.TB, allowPrivate bool) *Server {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	return New(Options{Key: key, Webhooks: WebhookOptions{AllowPrivate: allowPrivate}})
}

// FuzzWebhookRequest reads arbitrary bodies as POST /webhooks and PATCH
// /webhooks/{id} do: each is accepted, or refused naming the field at
// fault; never a panic or a server error.
func FuzzWebhookRequest(f *testing.F) {
	for _, seed := range []string{
		`{"url": "https://example.com/hook", "selector": {}}`,
		`{"url": "https://example.com/h", "selector": {"any_tags": ["a"], "context_match": [{"path": "$.a", "op": "eq", "value": 1}]}, "payload": "full", "description": "d"}`,
		`{"url": "http://example.com/", "selector": {}}`,
		`{"url": "https://127.0.0.1/", "selector": {}}`,
		`{"url": "https://169.254.169.254/latest", "selector": {}}`,
		`{"url": "https://u:p@example.com/", "selector": {}}`,
		`{"url": "https://example.com/", "selector": {"kinds": ["eaten"]}}`,
		`{"url": "https://example.com/", "selector": {}, "payload": "raw"}`,
		`{"url": "https://example.com/", "selector": null}`,
		`{"paused": true}`, `{"paused": false, "selector": {"all_tags": ["x"]}}`, `{"url": ""}`,
		`{"url": 1}`, `[]`, `{"nope": 1}`, "{\"description\": \"\xff\"}",
	} {
		f.Add(seed)
	}
	strict, open := fuzzServer(f, false), fuzzServer(f, true)
	now := time.Now()
	f.Fuzz(func(t *testing.T, body string) {
		for _, s := range []*Server{strict, open} {
			var req webhookRequest
			if err := s.parse([]byte(body), &req); err != nil {
				faultPath(t, err)
			} else if in, err := s.webhookInput(req); err != nil {
				faultPath(t, err)
			} else if _, err := store.NewWebhook(store.Actor{OwnerID: "o", AgentID: "a"}, in, 0, now); err != nil {
				faultPath(t, err)
			} else if _, err := s.hooks.client.CheckURL(in.URL); err != nil {
				t.Fatalf("accepted a URL the client refuses: %q: %v", in.URL, err)
			}
			var preq webhookPatchRequest
			if err := s.parse([]byte(body), &preq); err != nil {
				faultPath(t, err)
			} else if p, err := s.webhookPatch(preq); err != nil {
				faultPath(t, err)
			} else {
				w := store.Webhook{URL: "https://example.com/", Selector: &store.Selector{}}
				if err := p.Apply(&w, now); err != nil {
					faultPath(t, err)
				}
			}
		}
	})
}

// FuzzDeliveryQuery reads arbitrary query strings as GET
// /webhooks/{id}/deliveries does.
func FuzzDeliveryQuery(f *testing.F) {
	for _, seed := range []string{"", "status=failed", "status=pending&limit=10", "limit=0", "limit=201", "limit=-1",
		"limit=99999999999", "cursor=01900000-0000-7000-8000-000000000000", "cursor=x", "status=lost", "status=%ff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest(http.MethodGet, "/webhooks/x/deliveries", nil)
		r.URL.RawQuery = q
		got, err := deliveryQuery(r)
		if err != nil {
			if p := faultPath(t, err); p != "status" && p != "limit" && p != "cursor" {
				t.Fatalf("names %q", p)
			}
			return
		}
		if got.Limit < 1 || got.Limit > store.MaxDeliveryPage {
			t.Fatalf("limit %d passed", got.Limit)
		}
		vals, _ := url.ParseQuery(q)
		if st := vals.Get("status"); st != string(got.Status) && !strings.Contains(q, ";") {
			t.Fatalf("status %q read as %q", st, got.Status)
		}
	})
}
