package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

func relayContext() map[string]any {
	return map[string]any{
		"source_agent": "Orchestrator", "target_agent": "Analyzer", "task": "Audit login",
		"constraints": []string{"read only"}, "memory": map[string]any{"repo": "acme/web"},
		"prompts": []any{
			map[string]any{"id": "role", "position": "system", "content": "You review code for security."},
			map[string]any{"id": "style", "content": "Use tabs.", "metadata": map[string]any{"n": 3}},
			map[string]any{"id": "ask", "position": "user", "content": "Check {{what}} for security bugs.", "variables": map[string]string{"what": "login.go"}},
		},
	}
}

func TestRelayRoute(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleSubscriber) // any role will do
	pipeline := map[string]any{"transformers": []any{
		map[string]any{"type": "context_injector"},
		map[string]any{"type": "scope_narrower", "keywords": []string{"security"}},
	}}

	r := e.do("POST", "/relay", tok, map[string]any{"pipeline": pipeline, "context": relayContext()})
	want(t, r, 200, `"id":"relay:Orchestrator>Analyzer"`)
	body := string(r.body)
	for _, s := range []string{
		`"content":"Delegated by: Orchestrator\nTask: Audit login\nConstraints:\n  - read only\n\nShared Context: 1 items available"`,
		`"metadata":{"hop":1,"relay":true,"source":"Orchestrator","target":"Analyzer"}`,
		`"trace":{"steps":[{"transformer":"context_injector","added":["relay:Orchestrator>Analyzer"],"removed":[],"changed":[]},{"transformer":"scope_narrower","added":[],"removed":["style"],"changed":[]}]}`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("reply lacks %s:\n%s", s, body)
		}
	}
	if strings.Contains(body, `"request"`) {
		t.Error("a request without assemble")
	}

	// assemble, with the pipeline as a YAML file's text.
	yaml := "transformers:\n  - type: context_injector\n    include_memory: false\n"
	r = e.do("POST", "/relay", tok, map[string]any{"pipeline": yaml, "context": relayContext(), "assemble": true})
	want(t, r, 200, `"request":{"system":"Delegated by: Orchestrator\nTask: Audit login\nConstraints:\n  - read only\n\nYou review code for security.\n\nUse tabs.","messages":[{"role":"user","content":"Check login.go for security bugs."}]}`)
	// integers stay integers through the relay
	want(t, r, 200, `"metadata":{"n":3}`)

	if items := e.do("GET", "/breadcrumbs", tok, nil).json(t)["items"].([]any); len(items) != 0 {
		t.Fatal("the relay stored something")
	}
}

func TestRelayRouteErrors(t *testing.T) {
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleEmitter)
	ok := map[string]any{"transformers": []any{}}
	bad := func(prompts ...any) map[string]any {
		return map[string]any{"source_agent": "A", "task": "T", "prompts": prompts}
	}
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		msg    string
	}{
		{"unknown transformer", map[string]any{"pipeline": map[string]any{"transformers": []any{map[string]any{"type": "summarizer"}}}, "context": relayContext()},
			400, "RELAY_INVALID_PIPELINE", `pipeline.transformers[0].type: unknown transformer type \"summarizer\"`},
		{"unknown setting", map[string]any{"pipeline": "transformers:\n  - type: token_budget\n    max_token: 5\n", "context": relayContext()},
			400, "RELAY_INVALID_PIPELINE", `pipeline.transformers[0]: unknown setting \"max_token\" for token_budget`},
		{"bad pipeline JSON text", map[string]any{"pipeline": "{\"transformers\": [", "context": relayContext()},
			400, "RELAY_INVALID_PIPELINE", `pipeline: unexpected end of JSON input`},
		{"unknown position", map[string]any{"pipeline": ok, "context": bad(map[string]any{"id": "a", "content": "x"}, map[string]any{"id": "b", "content": "x", "position": "sytem"})},
			400, "RELAY_INVALID_PROMPT", `context.prompts[1].position: unknown position \"sytem\"`},
		{"duplicate id", map[string]any{"pipeline": ok, "context": bad(map[string]any{"id": "a", "content": "x"}, map[string]any{"id": "a", "content": "y"})},
			400, "RELAY_INVALID_PROMPT", `context.prompts[1].id: \"a\" is used twice`},
		{"unknown context field", map[string]any{"pipeline": ok, "context": map[string]any{"prompts": []any{}, "agent": "x"}},
			400, "RELAY_INVALID_CONTEXT", `context: unknown field \"agent\"`},
		{"transform failure", map[string]any{"pipeline": map[string]any{"transformers": []any{map[string]any{"type": "token_budget", "max_tokens": 1}}},
			"context": bad(map[string]any{"id": "s", "position": "system", "content": "a system prompt of several tokens"})},
			422, "RELAY_TRANSFORM_FAILED", `transformers[0] (token_budget): the budget of 1 tokens cannot be met`},
		{"missing pipeline", map[string]any{"context": relayContext()}, 400, "RELAY_INVALID_PIPELINE", "pipeline: required"},
		{"missing context", map[string]any{"pipeline": ok}, 400, "RELAY_INVALID_CONTEXT", "context: required"},
		{"unknown body field", map[string]any{"pipeline": ok, "context": relayContext(), "assembled": true}, 400, "unknown_field", `unknown field \"assembled\"`},
		{"too large", map[string]any{"pipeline": ok, "context": bad(map[string]any{"id": "a", "content": strings.Repeat("x", 70<<10)})}, 413, "too_large", "over"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/relay", tok, c.body)
			want(t, r, c.status, `"code":"`+c.code+`"`)
			want(t, r, c.status, c.msg)
		})
	}
	want(t, e.do("POST", "/relay", "", map[string]any{"pipeline": ok, "context": relayContext()}), 401, `"unauthorized"`)
	r := e.do("GET", "/relay", tok, nil)
	want(t, r, 405, `"method_not_allowed"`)
	if r.header.Get("Allow") != "POST" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	if r := e.do("POST", "/relay", tok, map[string]any{"pipeline": ok, "context": relayContext()}); r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// hostileEnv is a server with the default body limit of ctxkit serve
// (1 MiB), not the small one of newEnv: the limits on POST /relay must
// hold at the size a real server takes.
func hostileEnv(t *testing.T, tweaks ...func(*server.Options)) *env {
	return newEnv(t, append([]func(*server.Options){func(o *server.Options) { o.MaxBodyBytes = 0 }}, tweaks...)...)
}

func TestRelayRouteHostileInput(t *testing.T) {
	e := hostileEnv(t)
	tok := e.token("acme", "a", server.RoleSubscriber)
	none := map[string]any{"transformers": []any{}}
	x := strings.Repeat("x", 5000)
	var heavy []string
	for i := range 30 {
		heavy = append(heavy, fmt.Sprintf("%c{100}%d", 'a'+i%26, i))
	}
	many := []any{}
	for range 17 {
		many = append(many, map[string]any{"type": "scope_narrower"})
	}
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		msg    string
	}{
		{"variable bomb", map[string]any{"pipeline": none, "assemble": true, "context": map[string]any{"prompts": []any{
			map[string]any{"id": "bomb", "content": strings.Repeat("{{x}}", 20000), "variables": map[string]string{"x": x}}}}},
			413, "RELAY_TOO_LARGE", `context.prompts[0]: prompt \"bomb\"`},
		{"template too long", map[string]any{"pipeline": map[string]any{"transformers": []any{map[string]any{"type": "context_injector",
			"template": strings.Repeat("{Memory}", 100_000)}}}, "context": relayContext()},
			413, "RELAY_TOO_LARGE", "pipeline.transformers[0].template"},
		{"template bomb", map[string]any{"pipeline": map[string]any{"transformers": []any{map[string]any{"type": "context_injector",
			"template": strings.Repeat("{Memory}", 2000), "include_memory_values": true}}},
			"context": map[string]any{"source_agent": "A", "task": "T", "memory": map[string]any{"k": strings.Repeat("m", 10_000)}, "prompts": []any{}}},
			413, "RELAY_TOO_LARGE", "transformers[0] (context_injector): template: the template makes"},
		{"costly pattern", map[string]any{"pipeline": map[string]any{"transformers": []any{map[string]any{"type": "redactor",
			"patterns": []any{map[string]any{"kind": "k", "regex": strings.Join(heavy, "|")}}}}}, "context": relayContext()},
			400, "RELAY_INVALID_PIPELINE", "pipeline.transformers[0].patterns[0].regex: compiles to"},
		{"too many transformers", map[string]any{"pipeline": map[string]any{"transformers": many}, "context": relayContext()},
			413, "RELAY_TOO_LARGE", "17 transformers; POST /relay takes at most 16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/relay", tok, c.body)
			want(t, r, c.status, `"code":"`+c.code+`"`)
			want(t, r, c.status, c.msg)
		})
	}
}

// bigContext is about 900 KB of prompts.
func bigContext() map[string]any {
	var prompts []any
	for i := range 100 {
		prompts = append(prompts, map[string]any{"id": fmt.Sprint("p", i), "content": strings.Repeat("Some text to scan for secrets. ", 290)})
	}
	return map[string]any{"source_agent": "A", "task": "T", "prompts": prompts}
}

func TestRelayRouteDeadline(t *testing.T) {
	e := hostileEnv(t, func(o *server.Options) { o.RelayTimeout = time.Millisecond })
	tok := e.token("acme", "a", server.RoleSubscriber)
	var steps []any
	for range 16 {
		steps = append(steps, map[string]any{"type": "redactor", "emails": true})
	}
	start := time.Now()
	r := e.do("POST", "/relay", tok, map[string]any{"pipeline": map[string]any{"transformers": steps}, "context": bigContext()})
	want(t, r, 503, `"code":"RELAY_TIMEOUT"`)
	want(t, r, 503, "deadline of 1ms")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the relay ran for %s past a deadline of 1ms", d)
	}
}

func TestRelayRouteConcurrency(t *testing.T) {
	e := hostileEnv(t, func(o *server.Options) {
		o.RelayTimeout = 200 * time.Millisecond
		o.MaxConcurrentViews = 1
	})
	tok := e.token("acme", "a", server.RoleSubscriber)
	// One pattern run over one text that cannot be stopped midway and
	// takes far longer than the deadline: the relay holding the only slot
	// keeps it past the deadline of those waiting for it.
	var alts []string
	for i := range 19 {
		alts = append(alts, fmt.Sprintf("[a-z%c]{100}%d", 'A'+i, i%10))
	}
	body := map[string]any{
		"pipeline": map[string]any{"transformers": []any{map[string]any{"type": "redactor", "builtins": false,
			"patterns": []any{map[string]any{"kind": "k", "regex": strings.Join(alts, "|")}}}}},
		"context": map[string]any{"prompts": []any{map[string]any{"id": "a", "content": strings.Repeat("abcdefghij", 1500)}}},
	}
	replies := make([]reply, 3)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() { replies[i] = e.do("POST", "/relay", tok, body) })
	}
	wg.Wait()
	busy := 0
	for _, r := range replies {
		if r.status != 503 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if strings.Contains(string(r.body), `"code":"RELAY_BUSY"`) {
			busy++
			if r.header.Get("Retry-After") == "" {
				t.Error("a busy reply without Retry-After")
			}
		}
	}
	if busy == 0 {
		t.Fatalf("no relay was turned away: %s %s %s", replies[0].body, replies[1].body, replies[2].body)
	}
}
