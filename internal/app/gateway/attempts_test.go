package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/metrics"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// next waits (bounded) for the n-th exchange recorded, counting from 1.
func (e *exchanges) next(t *testing.T, n int) *gateway.Exchange {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		e.mu.Lock()
		if len(e.got) >= n {
			x := e.got[n-1]
			e.mu.Unlock()
			return x
		}
		e.mu.Unlock()
	}
	t.Fatalf("exchange %d was not recorded", n)
	return nil
}

// gatewayServing is a gateway on loopback with the configuration cfg
// (JSON) and opts, serving the chat, count, embeddings and models paths, its
// exchanges going to rec (nil: none); and its metrics registry.
func gatewayServing(t *testing.T, cfg string, opts gateway.Options, rec gateway.Recorder) (*httptest.Server, *metrics.Registry) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := gateway.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(c, opts)
	if rec != nil {
		g.SetRecorder(rec)
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(g.Collectors()...)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("POST /v1/messages/count_tokens", g.CountTokens)
	mux.HandleFunc("POST /v1/embeddings", g.Embeddings)
	mux.HandleFunc("GET /v1/models", g.Models)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, reg
}

// TestAttemptTimeoutNamesRequestLimit: an upstream still silent when the
// request's whole time (MaxDuration) runs out, before its own first-byte
// time, is a 504 that names the request's limit, not the first-byte time
// it never reached — for chat requests in both dialects, streamed and
// not, and for embeddings alike.
func TestAttemptTimeoutNamesRequestLimit(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	chatUp := newFake(t, "noheaders")
	embedUp := newEmbedFake(t, "stall")
	srv, _ := gatewayServing(t, `{"providers":[`+provider("a", chatUp.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("e", embedUp.srv.URL, "CTXKIT_TEST_RK")+`]}`,
		gateway.Options{MaxDuration: 200 * time.Millisecond}, nil)
	check := func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), "lasted longer than the gateway allows") ||
			strings.Contains(string(body), "sent no answer within 1m") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	for _, cl := range calls("a-own") {
		t.Run(cl.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+cl.path, cl.body)
			check(t, resp, body)
		})
	}
	t.Run("embeddings", func(t *testing.T) {
		resp, body := post(t, srv.URL+"/v1/embeddings", `{"model":"e-own","input":"x"}`)
		check(t, resp, body)
	})
}

// TestAttemptPassesOverUnencodable: after a target failed, a later one
// that cannot take the request — the encoder refuses it (a Gemini target
// and a conversation with nothing to send), or the embedding call does
// (token ids to Mistral) — is passed over, and the client gets the
// failure of the target that took the request; with no earlier failure,
// the refusal is the client's 400.
func TestAttemptPassesOverUnencodable(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a, gm := newFake(t, "503"), newFake(t, "ok")
	ea, ms := newEmbedFake(t, "503"), newEmbedFake(t, "ok")
	srv, _ := gatewayServing(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("ea", ea.srv.URL, "CTXKIT_TEST_RK")+`,
		{"name":"gm","type":"gemini","base_url":"`+gm.srv.URL+`","api_key_env":"CTXKIT_TEST_RK","models":["gm-own"]},
		{"name":"ms","type":"mistral","base_url":"`+ms.srv.URL+`","api_key_env":"CTXKIT_TEST_RK","models":["ms-own"]}],
		"routes":[{"model":"chat","targets":[{"provider":"a","model":"a-1"},{"provider":"gm","model":"gm-1"}]},
			{"model":"chat-gemini-first","targets":[{"provider":"gm","model":"gm-1"},{"provider":"a","model":"a-1"}]},
			{"model":"embed","targets":[{"provider":"ea","model":"ea-1"},{"provider":"ms","model":"ms-1"}]},
			{"model":"embed-mistral-first","targets":[{"provider":"ms","model":"ms-1"},{"provider":"ea","model":"ea-1"}]}]}`,
		gateway.Options{}, nil)
	empty := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":""}]}`
	}
	tokens := func(model string) string { return `{"model":"` + model + `","input":[[1,2,3]]}` }
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"chat after a failure", "/v1/chat/completions", empty("chat"), 503, "step 503"},
		{"chat refused first", "/v1/chat/completions", empty("chat-gemini-first"), 400, "invalid_request_error"},
		{"embeddings after a failure", "/v1/embeddings", tokens("embed"), 503, "step 503"},
		{"embeddings refused first", "/v1/embeddings", tokens("embed-mistral-first"), 400, "token ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+tc.path, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s, want %d with %q", resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
	if n := len(gm.requests()); n != 0 {
		t.Errorf("the Gemini target got %d requests", n)
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if n := len(ms.keys); n != 0 {
		t.Errorf("the Mistral target got %d requests", n)
	}
}

// TestAttemptSkipsRestingTargetFirst: a target whose keys all rest is
// skipped before the request is readied for it — it is as if the route
// began at the next target — so a request it could not have taken is
// served by the next one rather than refused, for chat (seed, which an
// Anthropic target refuses) and embeddings (token ids, which a Mistral
// target refuses) alike.
func TestAttemptSkipsRestingTargetFirst(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	anth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	}))
	t.Cleanup(anth.Close)
	a, ea, ms := newFake(t, "ok"), newEmbedFake(t, "ok"), newEmbedFake(t, "429 ra=60")
	srv, reg := gatewayServing(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("ea", ea.srv.URL, "CTXKIT_TEST_RK")+`,
		{"name":"an","type":"anthropic","base_url":"`+anth.URL+`","keys":[{"id":"k1","env":"CTXKIT_TEST_RK"}],"models":["an-own"]},
		{"name":"ms","type":"mistral","base_url":"`+ms.srv.URL+`","keys":[{"id":"k1","env":"CTXKIT_TEST_RK"}],"models":["ms-own"]}],
		"routes":[{"model":"chat","targets":[{"provider":"an","model":"an-1"},{"provider":"a","model":"a-1"}]},
			{"model":"embed","targets":[{"provider":"ms","model":"ms-1"},{"provider":"ea","model":"ea-1"}]}]}`,
		gateway.Options{}, nil)
	for _, tc := range []struct{ name, path, first, second string }{
		{"chat", "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"hi"}]}`, `{"model":"chat","seed":7,"messages":[{"role":"user","content":"hi"}]}`},
		{"embeddings", "/v1/embeddings", `{"model":"embed","input":"x"}`, `{"model":"embed","input":[[1,2,3]]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first target's one key gets 429 and rests.
			if resp, body := post(t, srv.URL+tc.path, tc.first); resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Attempts") != "2" {
				t.Fatalf("first: %d %v %s", resp.StatusCode, resp.Header, body)
			}
			resp, body := post(t, srv.URL+tc.path, tc.second)
			if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Attempts") != "1" {
				t.Fatalf("second: %d %v %s", resp.StatusCode, resp.Header, body)
			}
		})
	}
	if attempts(t, reg, "an", "an-1", "no_key", "") != 1 || attempts(t, reg, "ms", "ms-1", "no_key", "") != 1 {
		t.Error("the skipped targets were not counted no_key")
	}
}

// countFake is an Anthropic upstream whose count_tokens answers status
// (with a Retry-After of 60 for a 429) or, for 200, 42 tokens.
func countFake(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	n := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "60")
		}
		w.WriteHeader(status)
		if status == http.StatusOK {
			io.WriteString(w, `{"input_tokens":42}`)
			return
		}
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"count %d"}}`, status)
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

// TestCountTokensRoute: a token count goes through the route as a message
// would: a target that answers 529 or 503 hands over to the next, whose
// count the client gets with the attempts named; one that answers 400 is
// the client's at once; a target whose upstream counts nothing is
// estimated for its model, nothing sent.
func TestCountTokensRoute(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	busy, busyN := countFake(t, 529)
	bad, _ := countFake(t, 400)
	fine, fineN := countFake(t, 200)
	oai := newFake(t, "ok")
	prov := func(name, url string) string {
		return `{"name":"` + name + `","type":"anthropic","base_url":"` + url + `","api_key_env":"CTXKIT_TEST_RK","models":["` + name + `-own"]}`
	}
	srv, reg := gatewayServing(t, `{"providers":[`+prov("busy", busy.URL)+`,`+prov("bad", bad.URL)+`,`+prov("fine", fine.URL)+`,`+provider("o", oai.srv.URL, "CTXKIT_TEST_RK")+`],
		"routes":[{"model":"falls","targets":[{"provider":"busy","model":"b-1"},{"provider":"fine","model":"f-1"}]},
			{"model":"refused","targets":[{"provider":"bad","model":"x-1"},{"provider":"fine","model":"f-1"}]},
			{"model":"estimated","targets":[{"provider":"o","model":"o-1"},{"provider":"fine","model":"f-1"}]}]}`,
		gateway.Options{}, nil)
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}]}`
	}
	resp, data := post(t, srv.URL+"/v1/messages/count_tokens", body("falls"))
	if resp.StatusCode != 200 || strings.TrimSpace(string(data)) != `{"input_tokens":42}` || resp.Header.Get("X-Ctxkit-Token-Count") != "exact" ||
		resp.Header.Get("X-Ctxkit-Upstream") != "fine/f-1" || resp.Header.Get("X-Ctxkit-Attempts") != "2" || busyN.Load() != 1 {
		t.Fatalf("falls: %d %v %s", resp.StatusCode, resp.Header, data)
	}
	if attempts(t, reg, "busy", "b-1", "server_error", "key1") != 1 || attempts(t, reg, "fine", "f-1", "ok", "key1") != 1 {
		t.Error("the count's attempts were not counted")
	}
	before := fineN.Load()
	resp, data = post(t, srv.URL+"/v1/messages/count_tokens", body("refused"))
	if resp.StatusCode != 400 || !strings.Contains(string(data), "count 400") || fineN.Load() != before {
		t.Fatalf("refused: %d %s", resp.StatusCode, data)
	}
	resp, data = post(t, srv.URL+"/v1/messages/count_tokens", body("estimated"))
	if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Token-Count") != "estimate" || fineN.Load() != before || len(oai.requests()) != 0 {
		t.Fatalf("estimated: %d %v %s", resp.StatusCode, resp.Header, data)
	}
}

// TestRecordErrorClassAgrees: a recorded exchange that failed has the
// error class of the attempt whose failure the client got, for every kind
// of failure: the record, its attempts and the attempts counter's
// outcome label say the same thing.
func TestRecordErrorClassAgrees(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	answer := func(status int, body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that the server sees the request end
			if status == 0 {
				<-r.Context().Done() // no answer at all
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	plain := func(msg string) string { return `{"error":{"message":"` + msg + `","type":"error"}}` }
	refused := httptest.NewServer(http.NotFoundHandler())
	refused.Close() // nothing listens there any more
	cases := []struct {
		name  string
		url   string
		class string
	}{
		{"401", answer(401, plain("who are you")).URL, "auth_error"},
		{"403 key", answer(403, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`).URL, "auth_error"},
		{"403 other", answer(403, `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","code":"unsupported_country_region_territory"}}`).URL, "client_error"},
		{"404", answer(404, plain("no such model")).URL, "client_error"},
		{"408", answer(408, plain("too slow")).URL, "client_error"},
		{"429", answer(429, plain("slow down")).URL, "rate_limited"},
		{"500", answer(500, plain("broken")).URL, "server_error"},
		{"503", answer(503, plain("busy")).URL, "server_error"},
		{"timeout", answer(0, "").URL, "timeout"},
		{"connection refused", refused.URL, "connect_error"},
	}
	var providers, routes []string
	for i, tc := range cases {
		providers = append(providers, fmt.Sprintf(`{"name":"p%d","type":"openai","base_url":%q,"keys":[{"id":"k%d","env":"CTXKIT_TEST_RK"}],"models":["p%d-own"],"timeouts":{"first_byte":"200ms"}}`, i, tc.url, i, i))
		routes = append(routes, fmt.Sprintf(`{"model":"r%d","record":true,"targets":[{"provider":"p%d","model":"m%d"}]}`, i, i, i))
	}
	rec := &exchanges{}
	srv, reg := gatewayServing(t, `{"providers":[`+strings.Join(providers, ",")+`],"routes":[`+strings.Join(routes, ",")+`]}`, gateway.Options{}, rec)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":"r%d","messages":[{"role":"user","content":"hi"}]}`, i))
			if resp.StatusCode < 400 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			x := rec.next(t, i+1)
			if x.Route != fmt.Sprintf("r%d", i) || len(x.Attempts) != 1 {
				t.Fatalf("exchange %+v", x)
			}
			if x.ErrorClass != tc.class || x.Attempts[0].ErrorClass != tc.class || x.Status != resp.StatusCode {
				t.Errorf("record %q (status %d), attempt %q; want %q", x.ErrorClass, x.Status, x.Attempts[0].ErrorClass, tc.class)
			}
			if n := attempts(t, reg, fmt.Sprintf("p%d", i), fmt.Sprintf("m%d", i), tc.class, fmt.Sprintf("k%d", i)); n != 1 {
				t.Errorf("attempts{outcome=%q} = %v", tc.class, n)
			}
		})
	}
}
