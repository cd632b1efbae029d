package sdktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ctxkit/ctxkit/internal/webhook"
)

// swReceiver is an endpoint that checks each request with the Standard
// Webhooks reference library, not with ctxkit's Verify.
type swReceiver struct {
	srv      *httptest.Server
	accepted atomic.Int64
	rejected atomic.Int64
}

func newSWReceiver(t *testing.T, secret string) *swReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &swReceiver{}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if err := wh.Verify(body, r.Header); err != nil {
			rc.rejected.Add(1)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		rc.accepted.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *swReceiver) client() *webhook.Client {
	return webhook.NewClient(webhook.ClientOptions{
		AllowPrivate: true,
		TLS:          rc.srv.Client().Transport.(*http.Transport).TLSClientConfig,
	})
}

// TestWebhookSpecVector: the reference library and ctxkit sign the
// specification's example alike.
func TestWebhookSpecVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	want, err := wh.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	s, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := webhook.Signature("msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body, s); got != want {
		t.Fatalf("ctxkit %q, library %q", got, want)
	}
}

// TestWebhookReferenceReceiver: deliveries the dispatcher makes during a
// secret rotation are accepted by receivers holding either secret; a
// tampered body, a moved timestamp and a foreign secret are rejected.
func TestWebhookReferenceReceiver(t *testing.T) {
	old, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := webhook.Keyring{Current: old}.Rotate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	withOld := newSWReceiver(t, old.Reveal())
	withNew := newSWReceiver(t, keys.Current.Reveal())
	c := withOld.client() // the receivers share httptest's certificate
	defer c.Close()

	q := &webhook.MemQueue{}
	const n = 10
	for i := range n {
		for ep, rc := range map[string]*swReceiver{"old": withOld, "new": withNew} {
			err := q.Enqueue(webhook.Delivery{
				Endpoint: ep, URL: rc.srv.URL + "/hook",
				Message: webhook.Message{
					ID:      fmt.Sprintf("msg_%s_%d", ep, i),
					Body:    fmt.Appendf(nil, `{"kind":"created","seq":%d,"payload":{"n":%d}}`, i, i),
					Secrets: keys.Active(time.Now()),
				},
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := webhook.NewDispatcher(q, webhook.DispatcherOptions{Client: c, Poll: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for q.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
	for name, rc := range map[string]*swReceiver{"old": withOld, "new": withNew} {
		if a, r := rc.accepted.Load(), rc.rejected.Load(); a != n || r != 0 {
			t.Errorf("receiver with the %s secret: %d accepted, %d rejected; want %d, 0", name, a, r, n)
		}
	}
	if _, dead := q.DeadLetters(); dead != 0 {
		t.Errorf("%d dead letters", dead)
	}

	// Tampering, sent past ctxkit's client so nothing re-signs it.
	body := []byte(`{"kind":"created","seq":1}`)
	post := func(h http.Header, b []byte) int {
		req, err := http.NewRequest(http.MethodPost, withNew.srv.URL, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := withNew.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	signed := func() http.Header {
		h := http.Header{}
		webhook.SetHeaders(h, "msg_t", time.Now(), body, keys.Current)
		return h
	}
	if code := post(signed(), body); code != http.StatusNoContent {
		t.Fatalf("untampered request: %d", code)
	}
	if code := post(signed(), []byte(`{"kind":"created","seq":2}`)); code != http.StatusUnauthorized {
		t.Errorf("tampered body: %d, want 401", code)
	}
	h := signed()
	ts, _ := strconv.ParseInt(h.Get(webhook.HeaderTimestamp), 10, 64)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts+1, 10))
	if code := post(h, body); code != http.StatusUnauthorized {
		t.Errorf("moved timestamp: %d, want 401", code)
	}
	h = signed()
	h.Set(webhook.HeaderID, "msg_other")
	if code := post(h, body); code != http.StatusUnauthorized {
		t.Errorf("changed id: %d, want 401", code)
	}
	foreign, _ := webhook.NewSecret()
	a := c.Send(context.Background(), withNew.srv.URL, webhook.Message{ID: "msg_f", Body: body, Secrets: []webhook.Secret{foreign}})
	if a.Status != http.StatusUnauthorized || webhook.Retryable(a) {
		t.Errorf("foreign secret: %+v, want a final 401", a)
	}
}
