package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/server"
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
