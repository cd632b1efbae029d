package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/metrics"
)

// fake is an OpenAI-type upstream on loopback that fails on demand: each
// request gets the next step of plan (the last one repeats), unless its
// key has a step of its own in byKey. Steps: "ok"; a status, optionally
// with a Retry-After ("429 ra=1") or quoting the key it was sent ("401
// echo"); "noheaders" (no answer until the request ends); "nobyte"
// (headers, then nothing until the request ends); "cut" (the first part
// of the answer, then the end).
type fake struct {
	srv   *httptest.Server
	mu    sync.Mutex
	plan  []string
	byKey map[string]string
	seen  []seen
	gone  chan struct{} // a request that waited saw its end
}

// seen is what the fake learnt of one request.
type seen struct {
	key, model string
	maxTokens  float64
	stream     bool
}

func newFake(t *testing.T, plan ...string) *fake {
	f := &fake{plan: plan, byKey: map[string]string{}, gone: make(chan struct{}, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model     string  `json:"model"`
		MaxTokens float64 `json:"max_completion_tokens"`
		Stream    bool    `json:"stream"`
	}
	data, _ := io.ReadAll(r.Body)
	json.Unmarshal(data, &body)
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	f.seen = append(f.seen, seen{key: key, model: body.Model, maxTokens: body.MaxTokens, stream: body.Stream})
	step := "ok"
	if s, ok := f.byKey[key]; ok {
		step = s
	} else if len(f.plan) > 0 {
		step = f.plan[min(len(f.seen)-1, len(f.plan)-1)]
	}
	f.mu.Unlock()
	whole := r.Header.Get("Accept") == "application/json"
	switch word, arg, _ := strings.Cut(step, " "); word {
	case "ok":
		if whole {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, openAIWhole)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, openAIStream)
	case "cut":
		if whole {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, openAIWhole[:40])
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, openAIStream[:strings.Index(openAIStream, "\n\n")+2])
	case "overloaded", "limited":
		// 200, and a stream whose first event is the failure: what an
		// upstream sends when it fails after its headers went out.
		typ := "overloaded_error"
		if word == "limited" {
			typ = "rate_limit_exceeded"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"busy\",\"type\":%q}}\n\n", typ)
	case "noheaders", "nobyte":
		if word == "nobyte" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		f.gone <- struct{}{}
	default:
		status, _ := strconv.Atoi(word)
		if ra, ok := strings.CutPrefix(arg, "ra="); ok {
			w.Header().Set("Retry-After", ra)
		}
		msg := "step " + step
		if arg == "echo" {
			msg = "bad key " + key + " (Authorization: " + r.Header.Get("Authorization") + ")"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"error"}}`, msg)
	}
}

// requests is what the fake has seen.
func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.seen...)
}

func (f *fake) setKey(key, step string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byKey[key] = step
}

// routed is a gateway on loopback with the configuration cfg (JSON), its
// metrics registry and its log.
func routed(t *testing.T, cfg string) (*httptest.Server, *metrics.Registry, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	srv, reg := gatewayServing(t, cfg, gateway.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, nil)
	return srv, reg, logs
}

// attempts is the value of the attempts counter for these labels.
func attempts(t *testing.T, reg *metrics.Registry, provider, model, outcome, key string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	reg.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := fmt.Sprintf(`ctxkit_gateway_attempts_total{key=%q,model=%q,outcome=%q,provider=%q} `, key, model, outcome, provider)
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// call is one way a client asks: its dialect's path and body, streamed
// or not.
type call struct {
	name, path, body string
	stream           bool
}

// calls are a request for model in both client dialects, streamed and
// not.
func calls(model string) []call {
	return []call{
		{"anthropic", "/v1/messages", `{"model":"` + model + `","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, false},
		{"anthropic-stream", "/v1/messages", `{"model":"` + model + `","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, true},
		{"openai", "/v1/chat/completions", `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`, false},
		{"openai-stream", "/v1/chat/completions", `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true},
	}
}

// text is the answer's text, whatever the dialect and mode; failed
// reports an error in a stream.
func text(c call, body []byte) (out string, failed bool) {
	if !c.stream {
		var v struct {
			Content []struct{ Text string }
			Choices []struct{ Message struct{ Content string } }
		}
		json.Unmarshal(body, &v)
		for _, b := range v.Content {
			out += b.Text
		}
		for _, ch := range v.Choices {
			out += ch.Message.Content
		}
		return out, false
	}
	for _, d := range sseData(body) {
		var e struct {
			Type    string
			Delta   struct{ Text string }
			Choices []struct{ Delta struct{ Content string } }
			Error   json.RawMessage
		}
		json.Unmarshal([]byte(d), &e)
		out += e.Delta.Text
		for _, ch := range e.Choices {
			out += ch.Delta.Content
		}
		if e.Type == "error" || e.Error != nil {
			failed = true
		}
	}
	return out, failed
}

func provider(name, url, env string) string {
	return fmt.Sprintf(`{"name":%q,"type":"openai","base_url":%q,"api_key_env":%q,"models":[%q]}`, name, url, env, name+"-own")
}

// TestRouteFallsBackInOrder: a target that answers 500, 502, 503, 504,
// 529 or 429, or that cannot be reached, hands the request to the next
// one, in order, in both client dialects, streamed and not; the client
// gets the answer with the attempt that served named, the upstream got
// the target's model and parameters, and every attempt is counted.
func TestRouteFallsBackInOrder(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	for _, status := range []string{"500", "502", "503", "504", "529", "429"} {
		a, b, c := newFake(t, status), newFake(t, "503"), newFake(t, "ok")
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close() // nothing listens there any more
		srv, reg, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`,`+
			provider("c", c.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("dead", dead.URL, "CTXKIT_TEST_RK")+`],
			"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"dead","model":"d-1"},{"provider":"b","model":"b-1"},
				{"provider":"c","model":"c-1","params":{"max_tokens":77}}]}]}`)
		for _, cl := range calls("smart") {
			t.Run(status+"/"+cl.name, func(t *testing.T) {
				resp, body := post(t, srv.URL+cl.path, cl.body)
				got, failed := text(cl, body)
				if resp.StatusCode != 200 || got != "Hello, world" || failed {
					t.Fatalf("%d %q %s", resp.StatusCode, got, body)
				}
				if u, n := resp.Header.Get("X-Ctxkit-Upstream"), resp.Header.Get("X-Ctxkit-Attempts"); u != "c/c-1" || n != "4" {
					t.Errorf("served by %q after %q attempts, want c/c-1 after 4", u, n)
				}
				for f, model := range map[*fake]string{a: "a-1", b: "b-1", c: "c-1"} {
					r := f.requests()
					if last := r[len(r)-1]; last.model != model || last.stream != cl.stream {
						t.Errorf("upstream got %+v, want model %s, stream %v", last, model, cl.stream)
					}
				}
				if r := c.requests(); r[len(r)-1].maxTokens != 77 {
					t.Errorf("the target's max_tokens did not replace the client's: %+v", r[len(r)-1])
				}
			})
		}
		outcome := "server_error"
		if status == "429" {
			outcome = "rate_limited"
		}
		for _, want := range []struct {
			provider, model, outcome string
		}{{"a", "a-1", outcome}, {"dead", "d-1", "connect_error"}, {"b", "b-1", "server_error"}, {"c", "c-1", "ok"}} {
			if n := attempts(t, reg, want.provider, want.model, want.outcome, "key1"); n != 4 {
				t.Errorf("%s: attempts{%s/%s %s} = %v, want 4", status, want.provider, want.model, want.outcome, n)
			}
		}
	}
}

// TestRouteFallsBackOnStreamThatOpensWithFailure: an upstream that
// answers 200 and then fails in its stream's first event (overloaded, or
// rate limited) has sent the client nothing yet: the next target is
// tried, in both dialects, streamed and not. A route's last target that
// does so still gets its stream to the client as it was.
func TestRouteFallsBackOnStreamThatOpensWithFailure(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	for _, step := range []string{"overloaded", "limited"} {
		a, b := newFake(t, step), newFake(t, "ok")
		srv, reg, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`],
			"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]},
				{"model":"alone","targets":[{"provider":"a","model":"a-1"}]}]}`)
		for _, cl := range calls("smart") {
			t.Run(step+"/"+cl.name, func(t *testing.T) {
				resp, body := post(t, srv.URL+cl.path, cl.body)
				got, failed := text(cl, body)
				if resp.StatusCode != 200 || got != "Hello, world" || failed {
					t.Fatalf("%d %q %s", resp.StatusCode, got, body)
				}
				if u, n := resp.Header.Get("X-Ctxkit-Upstream"), resp.Header.Get("X-Ctxkit-Attempts"); u != "b/b-1" || n != "2" {
					t.Errorf("served by %q after %q attempts, want b/b-1 after 2", u, n)
				}
			})
		}
		outcome := "server_error"
		if step == "limited" {
			outcome = "rate_limited"
		}
		if n := attempts(t, reg, "a", "a-1", outcome, "key1"); n != 4 {
			t.Errorf("%s: attempts{a/a-1 %s} = %v, want 4", step, outcome, n)
		}
		for _, cl := range calls("alone") {
			if !cl.stream {
				continue
			}
			t.Run(step+"/last/"+cl.name, func(t *testing.T) {
				resp, body := post(t, srv.URL+cl.path, cl.body)
				if _, failed := text(cl, body); resp.StatusCode != 200 || !failed {
					t.Fatalf("%d %s, want the upstream's failure in the stream", resp.StatusCode, body)
				}
			})
		}
	}
}

// TestRouteNoFallbackOnClientError: a 400, 404 or 422 from a target goes
// to the client as today; the next target never hears of the request.
func TestRouteNoFallbackOnClientError(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	for status, want := range map[string]int{"400": 400, "404": 404, "422": 400, "501": 502} {
		a, b := newFake(t, status), newFake(t, "ok")
		srv, reg, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`],
			"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
		for _, cl := range calls("smart") {
			t.Run(status+"/"+cl.name, func(t *testing.T) {
				resp, body := post(t, srv.URL+cl.path, cl.body)
				if resp.StatusCode != want || !strings.Contains(string(body), "step "+status) {
					t.Fatalf("%d %s, want %d with the upstream's message", resp.StatusCode, body, want)
				}
				if u, n := resp.Header.Get("X-Ctxkit-Upstream"), resp.Header.Get("X-Ctxkit-Attempts"); u != "a/a-1" || n != "1" {
					t.Errorf("error after %q attempts by %q, want 1 by a/a-1", n, u)
				}
			})
		}
		if n := len(b.requests()); n != 0 {
			t.Errorf("%s: the next target got %d requests", status, n)
		}
		outcome := "client_error"
		if status == "501" {
			outcome = "server_error"
		}
		if n := attempts(t, reg, "a", "a-1", outcome, "key1"); n != 4 {
			t.Errorf("%s: %v attempts counted %s", status, n, outcome)
		}
	}
}

// TestRouteNoFallbackAfterFirstByte: an answer that began and was cut is
// the client's error — an error event in a stream, a 502 otherwise — and
// the next target is never tried.
func TestRouteNoFallbackAfterFirstByte(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a, b := newFake(t, "cut"), newFake(t, "ok")
	srv, _, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`],
		"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
	for _, cl := range calls("smart") {
		t.Run(cl.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+cl.path, cl.body)
			if cl.stream {
				got, failed := text(cl, body)
				if resp.StatusCode != 200 || got != "Hello" || !failed {
					t.Fatalf("%d %q: want the stream's start and an error event: %s", resp.StatusCode, got, body)
				}
			} else if resp.StatusCode != 502 {
				t.Fatalf("%d %s, want 502", resp.StatusCode, body)
			}
			if u := resp.Header.Get("X-Ctxkit-Upstream"); u != "a/a-1" {
				t.Errorf("served by %q", u)
			}
		})
	}
	if n := len(b.requests()); n != 0 {
		t.Errorf("the next target got %d requests", n)
	}
}

// TestRouteFirstByteTimeout: a target that sends no headers, or headers
// and then nothing, within its first_byte timeout hands over to the next,
// streamed or not (a streaming client's headers wait for the first byte);
// the silent target sees its request end.
func TestRouteFirstByteTimeout(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	for _, step := range []string{"noheaders", "nobyte"} {
		a, b := newFake(t, step), newFake(t, "ok")
		srv, reg, _ := routed(t, `{"providers":[
			{"name":"a","type":"openai","base_url":"`+a.srv.URL+`","api_key_env":"CTXKIT_TEST_RK","models":["a-own"],"timeouts":{"first_byte":"150ms"}},`+
			provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`],
			"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
		for _, cl := range calls("smart") {
			t.Run(step+"/"+cl.name, func(t *testing.T) {
				start := time.Now()
				resp, body := post(t, srv.URL+cl.path, cl.body)
				got, failed := text(cl, body)
				if resp.StatusCode != 200 || got != "Hello, world" || failed {
					t.Fatalf("%d %q %s", resp.StatusCode, got, body)
				}
				if u := resp.Header.Get("X-Ctxkit-Upstream"); u != "b/b-1" {
					t.Errorf("served by %q", u)
				}
				if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
					t.Errorf("answered after %v", d)
				}
				select {
				case <-a.gone:
				case <-time.After(5 * time.Second):
					t.Fatal("the silent target's request did not end")
				}
			})
		}
		if n := attempts(t, reg, "a", "a-1", "timeout", "key1"); n != 4 {
			t.Errorf("%s: %v timeouts counted", step, n)
		}
	}
}

// TestRouteBoundedAttempts: max_attempts stops the tries (the client gets
// the last failure, with the attempts made), max_time stops a target
// still silent when it passes and starts no other.
func TestRouteBoundedAttempts(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a, b, c := newFake(t, "500"), newFake(t, "503"), newFake(t, "ok")
	slow := newFake(t, "noheaders")
	srv, _, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`,`+
		provider("c", c.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("slow", slow.srv.URL, "CTXKIT_TEST_RK")+`],
		"routes":[{"model":"two","max_attempts":2,"targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"},{"provider":"c","model":"c-1"}]},
			{"model":"quick","max_time":"300ms","targets":[{"provider":"slow","model":"s-1"},{"provider":"c","model":"c-1"}]}]}`)
	for _, cl := range calls("two") {
		t.Run("max_attempts/"+cl.name, func(t *testing.T) {
			resp, body := post(t, srv.URL+cl.path, cl.body)
			if resp.StatusCode != 503 || !strings.Contains(string(body), "upstream b: step 503") {
				t.Fatalf("%d %s, want b's 503", resp.StatusCode, body)
			}
			if u, n := resp.Header.Get("X-Ctxkit-Upstream"), resp.Header.Get("X-Ctxkit-Attempts"); u != "b/b-1" || n != "2" {
				t.Errorf("%q attempts, last %q", n, u)
			}
		})
	}
	if n := len(c.requests()); n != 0 {
		t.Fatalf("a third attempt was made (%d)", n)
	}
	for _, cl := range calls("quick") {
		t.Run("max_time/"+cl.name, func(t *testing.T) {
			start := time.Now()
			resp, body := post(t, srv.URL+cl.path, cl.body)
			if d := time.Since(start); resp.StatusCode != 504 || !strings.Contains(string(body), "max_time") || d < 300*time.Millisecond || d > 5*time.Second {
				t.Fatalf("%d after %v: %s", resp.StatusCode, d, body)
			}
			if n := resp.Header.Get("X-Ctxkit-Attempts"); n != "1" {
				t.Errorf("%q attempts", n)
			}
			<-slow.gone
		})
	}
	if n := len(c.requests()); n != 0 {
		t.Fatalf("an attempt started after max_time (%d)", n)
	}
}

// TestRouteClientGone: a client that goes away while an attempt waits for
// its first byte cancels it (the upstream sees its request end), and no
// other target is tried.
func TestRouteClientGone(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a, b := newFake(t, "nobyte"), newFake(t, "ok")
	srv, reg, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`],
		"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
	for i, cl := range calls("smart") {
		t.Run(cl.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+cl.path, strings.NewReader(cl.body))
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			for len(a.requests()) <= i {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			select {
			case <-a.gone:
			case <-time.After(5 * time.Second):
				t.Fatal("the attempt in flight was not cancelled")
			}
			<-done
		})
	}
	time.Sleep(50 * time.Millisecond) // a next attempt would have started by now
	if n := len(b.requests()); n != 0 {
		t.Errorf("the next target got %d requests after the client left", n)
	}
	if n := attempts(t, reg, "a", "a-1", "canceled", "key1"); n != 4 {
		t.Errorf("%v cancelled attempts counted", n)
	}
}

// pooled is a provider of the fake with keys k1 and k2 (in the
// environment), resting a key key_cooldown after a 429 without
// Retry-After.
func pooled(name, url, cooldown string) string {
	return fmt.Sprintf(`{"name":%q,"type":"openai","base_url":%q,"models":[%q],"key_cooldown":%q,
		"keys":[{"id":"k1","env":"CTXKIT_TEST_K1"},{"id":"k2","env":"CTXKIT_TEST_K2"}]}`, name, url, name+"-own", cooldown)
}

// TestKeyPoolRests: a key that got 429 rests for the Retry-After it was
// given, the other key serves meanwhile, then it is used again.
func TestKeyPoolRests(t *testing.T) {
	t.Setenv("CTXKIT_TEST_K1", "key-one-0123456789")
	t.Setenv("CTXKIT_TEST_K2", "key-two-0123456789")
	a := newFake(t, "ok")
	a.setKey("key-one-0123456789", "429 ra=1")
	srv, reg, _ := routed(t, `{"providers":[`+pooled("a", a.srv.URL, "1h")+`]}`)
	cl := calls("a-own")[2]
	resp, body := post(t, srv.URL+cl.path, cl.body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("%d %s (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	a.setKey("key-one-0123456789", "ok")
	for range 4 {
		if resp, body := post(t, srv.URL+cl.path, cl.body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	keys := func() (out []string) {
		for _, s := range a.requests() {
			out = append(out, s.key[:7])
		}
		return out
	}
	if got := strings.Join(keys(), ","); got != "key-one,key-two,key-two,key-two,key-two" {
		t.Fatalf("keys used: %s", got)
	}
	time.Sleep(1100 * time.Millisecond)
	for range 2 {
		post(t, srv.URL+cl.path, cl.body)
	}
	if got := strings.Join(keys()[5:], ","); !strings.Contains(got, "key-one") {
		t.Fatalf("after its rest the key is not used again: %s", got)
	}
	if n := attempts(t, reg, "a", "a-own", "rate_limited", "k1"); n != 1 {
		t.Errorf("rate_limited{k1} = %v", n)
	}
	if n := attempts(t, reg, "a", "a-own", "ok", "k2"); n < 5 {
		t.Errorf("ok{k2} = %v", n)
	}
}

// TestKeyPoolAllResting: with every key of a target resting, the target
// is skipped (counted no_key, nothing sent) and the next one serves; a
// route of that target alone answers 429 with the time until a key is
// free.
func TestKeyPoolAllResting(t *testing.T) {
	t.Setenv("CTXKIT_TEST_K1", "key-one-0123456789")
	t.Setenv("CTXKIT_TEST_K2", "key-two-0123456789")
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a, b := newFake(t, "429"), newFake(t, "ok")
	srv, reg, _ := routed(t, `{"providers":[`+pooled("a", a.srv.URL, "30s")+`,`+provider("b", b.srv.URL, "CTXKIT_TEST_RK")+`],
		"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
	for i, cl := range calls("smart") {
		resp, body := post(t, srv.URL+cl.path, cl.body)
		want := "1"
		if i < 2 { // k1, then k2 get their 429
			want = "2"
		}
		if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Attempts") != want || resp.Header.Get("X-Ctxkit-Upstream") != "b/b-1" {
			t.Fatalf("%s: %d after %s attempts by %s: %s", cl.name, resp.StatusCode, resp.Header.Get("X-Ctxkit-Attempts"), resp.Header.Get("X-Ctxkit-Upstream"), body)
		}
	}
	if n := len(a.requests()); n != 2 {
		t.Errorf("the resting target got %d requests, want 2", n)
	}
	if n := attempts(t, reg, "a", "a-1", "no_key", ""); n != 2 {
		t.Errorf("no_key = %v", n)
	}
	cl := calls("a-own")[0]
	resp, body := post(t, srv.URL+cl.path, cl.body)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || ra < 25 || ra > 30 || !strings.Contains(string(body), "rate_limit_error") {
		t.Fatalf("%d (Retry-After %d) %s", resp.StatusCode, ra, body)
	}
	if resp.Header.Get("X-Ctxkit-Attempts") != "" {
		t.Errorf("nothing was sent, yet X-Ctxkit-Attempts is %q", resp.Header.Get("X-Ctxkit-Attempts"))
	}
}

// TestKeyPoolAllRestingSoonest: with every key of every target resting,
// the client's Retry-After is the time until the first of them is free,
// whichever target it belongs to, not the last target's.
func TestKeyPoolAllRestingSoonest(t *testing.T) {
	t.Setenv("CTXKIT_TEST_K1", "key-one-0123456789")
	t.Setenv("CTXKIT_TEST_K2", "key-two-0123456789")
	a, b := newFake(t, "429"), newFake(t, "429")
	srv, _, _ := routed(t, `{"providers":[`+pooled("a", a.srv.URL, "5s")+`,`+pooled("b", b.srv.URL, "1h")+`],
		"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
	cl := calls("smart")[0]
	for range 2 { // k1, then k2 of each target get their 429
		if resp, body := post(t, srv.URL+cl.path, cl.body); resp.StatusCode != 429 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	resp, body := post(t, srv.URL+cl.path, cl.body)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || ra < 1 || ra > 5 {
		t.Fatalf("%d (Retry-After %d) %s, want 429 with the 5s of a's keys", resp.StatusCode, ra, body)
	}
	if n := len(a.requests()) + len(b.requests()); n != 4 {
		t.Errorf("the resting targets got %d requests, want 4", n)
	}
}

// TestKeyPoolRefusedKey: a key that got 401 is taken out (logged by id,
// never by value) and the other serves from then on; with every key out,
// nothing is sent and the client gets a 502. No key of the pool reaches
// the client or the log.
func TestKeyPoolRefusedKey(t *testing.T) {
	const k1, k2 = "key-one-0123456789", "key-two-0123456789"
	t.Setenv("CTXKIT_TEST_K1", k1)
	t.Setenv("CTXKIT_TEST_K2", k2)
	a := newFake(t, "ok")
	a.setKey(k1, "401 echo")
	srv, reg, logs := routed(t, `{"providers":[`+pooled("a", a.srv.URL, "1m")+`]}`)
	cl := calls("a-own")[0]
	resp, body := post(t, srv.URL+cl.path, cl.body)
	if resp.StatusCode != 502 || strings.Contains(string(body), k1) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for range 3 {
		if resp, body := post(t, srv.URL+cl.path, cl.body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	for _, s := range a.requests()[1:] {
		if s.key != k2 {
			t.Fatalf("the refused key was used again")
		}
	}
	a.setKey(k2, "401 echo")
	resp, body = post(t, srv.URL+cl.path, cl.body)
	if resp.StatusCode != 502 || strings.Contains(string(body), k2) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	sent := len(a.requests())
	resp, body = post(t, srv.URL+cl.path, cl.body)
	if resp.StatusCode != 502 || !strings.Contains(string(body), "refused every key") || len(a.requests()) != sent {
		t.Fatalf("every key out: %d %s (%d sent)", resp.StatusCode, body, len(a.requests())-sent)
	}
	log := logs.String()
	if strings.Contains(log, k1) || strings.Contains(log, k2) || !strings.Contains(log, "key=k1") || !strings.Contains(log, "key=k2") {
		t.Errorf("log: %s", log)
	}
	if attempts(t, reg, "a", "a-own", "auth_error", "k1") != 1 || attempts(t, reg, "a", "a-own", "auth_error", "k2") != 1 {
		t.Errorf("auth errors not counted by key")
	}
}

// TestPlainModelNamesItsUpstream: a model a provider lists is a route of
// one target: one attempt, named in the headers, counted.
func TestPlainModelNamesItsUpstream(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a := newFake(t, "ok")
	srv, reg, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`],
		"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"}]}]}`)
	for _, cl := range calls("a-own") {
		resp, body := post(t, srv.URL+cl.path, cl.body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Ctxkit-Upstream") != "a/a-own" || resp.Header.Get("X-Ctxkit-Attempts") != "1" {
			t.Fatalf("%s: %d %v %s", cl.name, resp.StatusCode, resp.Header, body)
		}
	}
	if n := attempts(t, reg, "a", "a-own", "ok", "key1"); n != 4 {
		t.Errorf("ok = %v", n)
	}
	_, body := func() (*http.Response, []byte) {
		resp, err := http.Get(srv.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}()
	if !strings.Contains(string(body), `"id":"smart"`) {
		t.Errorf("the route is not listed: %s", body)
	}
}

// TestKeyFile: a key read from a file (trimmed) is sent.
func TestKeyFile(t *testing.T) {
	a := newFake(t, "ok")
	file := filepath.Join(t.TempDir(), "key")
	os.WriteFile(file, []byte("  key-from-file-0123\n"), 0o600)
	srv, _, _ := routed(t, fmt.Sprintf(`{"providers":[{"name":"a","type":"openai","base_url":%q,"models":["m"],"keys":[{"file":%q}]}]}`, a.srv.URL, file))
	if resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if r := a.requests(); r[0].key != "key-from-file-0123" {
		t.Errorf("key sent %q", r[0].key)
	}
}

// TestRouteConfigErrors: every bad field of keys, timeouts and routes is
// refused at load, naming its path.
func TestRouteConfigErrors(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	t.Setenv("CTXKIT_TEST_NL", "rk-0123\n")
	dir := t.TempDir()
	empty, big, twoLines := filepath.Join(dir, "empty"), filepath.Join(dir, "big"), filepath.Join(dir, "two")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	os.WriteFile(big, []byte(strings.Repeat("k", 70<<10)), 0o600)
	os.WriteFile(twoLines, []byte("key-a\nkey-b\n"), 0o600)
	p := func(extra string) string {
		return `{"name":"a","type":"openai","base_url":"http://127.0.0.1:1","models":["m"]` + extra + `}`
	}
	withKey := func(extra string) string { return p(`,"api_key_env":"CTXKIT_TEST_RK"` + extra) }
	withRoute := func(route string) string {
		return `{"providers":[` + withKey("") + `],"routes":[` + route + `]}`
	}
	for _, c := range []struct{ cfg, want string }{
		{`{"providers":[` + p(``) + `]}`, "providers[0].api_key_env: required"},
		{`{"providers":[` + withKey(`,"keys":[{"env":"CTXKIT_TEST_RK"}]`) + `]}`, "providers[0].keys: either api_key_env or keys"},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_RK","file":"x"}]`) + `]}`, "providers[0].keys[0]: either env or file"},
		{`{"providers":[` + p(`,"keys":[{"id":"a"}]`) + `]}`, "providers[0].keys[0]: env or file required"},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_UNSET"}]`) + `]}`, "providers[0].keys[0].env: CTXKIT_TEST_UNSET is not set"},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_NL"}]`) + `]}`, "providers[0].keys[0].env: CTXKIT_TEST_NL holds control characters"},
		{`{"providers":[` + p(`,"keys":[{"file":"`+empty+`"}]`) + `]}`, "providers[0].keys[0].file: " + empty + " is empty"},
		{`{"providers":[` + p(`,"keys":[{"file":"`+big+`"}]`) + `]}`, "providers[0].keys[0].file: " + big + " is larger than"},
		{`{"providers":[` + p(`,"keys":[{"file":"`+twoLines+`"}]`) + `]}`, "providers[0].keys[0].file: " + twoLines + " holds control characters"},
		{`{"providers":[` + p(`,"keys":[{"file":"`+dir+`/none"}]`) + `]}`, "providers[0].keys[0].file: open"},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_RK","id":"a b"}]`) + `]}`, `providers[0].keys[0].id: "a b" is not an id`},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_RK","id":"x"},{"env":"CTXKIT_TEST_RK","id":"x"}]`) + `]}`, `providers[0].keys[1].id: "x" is used twice`},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_RK"},{"env":"CTXKIT_TEST_RK","id":"key1"}]`) + `]}`, `providers[0].keys[1].id: "key1" is used twice`},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_RK","weight":-1}]`) + `]}`, "providers[0].keys[0].weight: from 1 to 1000"},
		{`{"providers":[` + p(`,"keys":[{"env":"CTXKIT_TEST_RK","weight":1001}]`) + `]}`, "providers[0].keys[0].weight: from 1 to 1000"},
		{`{"providers":[` + withKey(`,"key_cooldown":"5s"`) + `]}`, "providers[0].key_cooldown: only for a pool of keys"},
		{`{"providers":[` + p(`,"key_cooldown":"2h","keys":[{"env":"CTXKIT_TEST_RK"}]`) + `]}`, "providers[0].key_cooldown: from 1s to 1h0m0s"},
		{`{"providers":[` + p(`,"key_cooldown":"10ms","keys":[{"env":"CTXKIT_TEST_RK"}]`) + `]}`, "providers[0].key_cooldown: from 1s"},
		{`{"providers":[` + withKey(`,"timeouts":{"first_byte":"1us"}`) + `]}`, "providers[0].timeouts.first_byte: at least 1ms"},
		{`{"providers":[` + withKey(`,"timeouts":{"connect":"1ns"}`) + `]}`, "providers[0].timeouts.connect: at least 1ms"},
		{`{"providers":[` + withKey(`,"timeouts":{"idle":"5"}`) + `]}`, "is not a duration"},
		{`{"providers":[` + withKey(`,"timeouts":{"total":"-1s"}`) + `]}`, "is not a duration"},
		{withRoute(`{"targets":[{"provider":"a","model":"x"}]}`), "routes[0].model: required"},
		{withRoute(`{"model":"m","targets":[{"provider":"a","model":"x"}]}`), `routes[0].model: "m" is also a model of provider a`},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x"}]},{"model":"r","targets":[{"provider":"a","model":"x"}]}`), `routes[1].model: "r" is routed twice`},
		{withRoute(`{"model":"r","targets":[]}`), "routes[0].targets: at least one target"},
		{withRoute(`{"model":"r"}`), "routes[0].targets: at least one target"},
		{withRoute(`{"model":"r","targets":[{"provider":"b","model":"x"}]}`), `routes[0].targets[0].provider: "b" is not a configured provider`},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x"},{"provider":"a"}]}`), "routes[0].targets[1].model: required"},
		{withRoute(`{"model":"r","max_attempts":2,"targets":[{"provider":"a","model":"x"}]}`), "routes[0].max_attempts: from 1 to the number of targets (1)"},
		{withRoute(`{"model":"r","max_attempts":-1,"targets":[{"provider":"a","model":"x"}]}`), "routes[0].max_attempts"},
		{withRoute(`{"model":"r","max_time":"soon","targets":[{"provider":"a","model":"x"}]}`), "is not a duration"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"seed":1}}]}`), "routes[0].targets[0].params.seed: not a parameter a target sets (max_tokens, reasoning_effort, stop, temperature, top_p)"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"max_tokens":0}}]}`), "routes[0].targets[0].params.max_tokens: a whole number"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"max_tokens":1.5}}]}`), "routes[0].targets[0].params.max_tokens: a whole number"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"temperature":3}}]}`), "routes[0].targets[0].params.temperature: a number from 0 to 2"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"top_p":"high"}}]}`), "routes[0].targets[0].params.top_p: a number from 0 to 1"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"stop":[1]}}]}`), "routes[0].targets[0].params.stop: a string or a list of strings"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"stop":[""]}}]}`), "routes[0].targets[0].params.stop: an empty stop sequence"},
		{withRoute(`{"model":"r","targets":[{"provider":"a","model":"x","params":{"reasoning_effort":"max"}}]}`), "routes[0].targets[0].params.reasoning_effort: one of minimal, low, medium, high"},
	} {
		path := filepath.Join(dir, "g.json")
		os.WriteFile(path, []byte(c.cfg), 0o600)
		_, err := gateway.LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  error %v\n  want  %s", c.cfg, err, c.want)
		}
	}
	// And the good ones load.
	for _, cfg := range []string{
		withRoute(`{"model":"r","max_attempts":1,"max_time":"30s","record":true,"targets":[{"provider":"a","model":"x","params":{"max_tokens":10,"temperature":0.2,"top_p":0.9,"stop":"END","reasoning_effort":"low"}}]}`),
		`{"providers":[` + p(`,"key_cooldown":"30s","keys":[{"env":"CTXKIT_TEST_RK","weight":3},{"id":"b.2","env":"CTXKIT_TEST_RK"}],"timeouts":{"connect":"1s","first_byte":"5s","idle":"30s","total":"10m"}`) + `]}`,
	} {
		path := filepath.Join(dir, "g.json")
		os.WriteFile(path, []byte(cfg), 0o600)
		if _, err := gateway.LoadConfig(path); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
}

// TestProviderTimeouts: a provider's idle timeout ends a stream that goes
// quiet, and its total timeout an answer that lasts too long, each named
// in the error the client gets (an error event once the stream has
// begun).
func TestProviderTimeouts(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	quiet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, openAIStream[:strings.Index(openAIStream, "\n\n")+2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer quiet.Close()
	// slow keeps sending, never quiet for long, never done.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, openAIStream[:strings.Index(openAIStream, "\n\n")+2])
		for {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
				io.WriteString(w, ": keep-alive\n\n")
			}
		}
	}))
	defer slow.Close()
	srv, _, _ := routed(t, `{"providers":[
		{"name":"quiet","type":"openai","base_url":"`+quiet.URL+`","api_key_env":"CTXKIT_TEST_RK","models":["q"],"timeouts":{"idle":"150ms"}},
		{"name":"slow","type":"openai","base_url":"`+slow.URL+`","api_key_env":"CTXKIT_TEST_RK","models":["s"],"timeouts":{"idle":"150ms","total":"300ms"}}]}`)
	for model, want := range map[string]string{"q": "sent nothing for 150ms", "s": "total timeout (300ms)"} {
		for _, cl := range calls(model) {
			if !cl.stream {
				continue // a stream is what can go quiet or last
			}
			t.Run(model+"/"+cl.name, func(t *testing.T) {
				start := time.Now()
				resp, body := post(t, srv.URL+cl.path, cl.body)
				got, failed := text(cl, body)
				if resp.StatusCode != 200 || got != "Hello" || !failed || !strings.Contains(string(body), want) {
					t.Fatalf("%d %q: %s", resp.StatusCode, got, body)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("ended after %v", d)
				}
			})
		}
	}
}

// TestRouteFallbackPassesOverRefusingTarget: a later target that cannot
// take a field of the request (seed, to an Anthropic upstream) is passed
// over, and the client gets the failure of the target that took it, not
// a 400 for a request the route accepted.
func TestRouteFallbackPassesOverRefusingTarget(t *testing.T) {
	t.Setenv("CTXKIT_TEST_RK", "rk-0123456789")
	a, b := newFake(t, "503"), newFake(t, "ok")
	srv, _, _ := routed(t, `{"providers":[`+provider("a", a.srv.URL, "CTXKIT_TEST_RK")+`,
		{"name":"b","type":"anthropic","base_url":"`+b.srv.URL+`","api_key_env":"CTXKIT_TEST_RK","models":["b-own"]}],
		"routes":[{"model":"smart","targets":[{"provider":"a","model":"a-1"},{"provider":"b","model":"b-1"}]}]}`)
	resp, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"smart","seed":7,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode == http.StatusBadRequest || resp.StatusCode < 500 || !strings.Contains(string(body), "step 503") {
		t.Fatalf("%d %s, want the first target's failure", resp.StatusCode, body)
	}
	if n := len(b.requests()); n != 0 {
		t.Errorf("the refusing target got %d requests", n)
	}
}
