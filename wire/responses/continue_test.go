package responses_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// TestContinue: a request continued by previous_response_id is the
// previous conversation, the previous answer as an assistant turn, and
// the new input, with the new request's instructions and settings; the
// requests it was made of are not changed.
func TestContinue(t *testing.T) {
	prev, err := responses.DecodeRequest([]byte(`{"model":"gpt-5","instructions":"Old.","input":"Weather in Paris?",
		"tools":[{"type":"function","name":"get_weather"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := chat.Collect(replay(anthropicTurn()))
	if err != nil {
		t.Fatal(err)
	}
	next, err := responses.DecodeRequest([]byte(`{"model":"gpt-5","instructions":"New.","previous_response_id":"resp_1",
		"tools":[{"type":"function","name":"get_weather"}],
		"input":[{"type":"function_call_output","call_id":"toolu_01","output":"18C"},{"type":"function_call_output","call_id":"toolu_02","output":"noon"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal([]any{prev, out.Content, next})
	got := responses.Continue(prev, out, next)
	if after, _ := json.Marshal([]any{prev, out.Content, next}); string(after) != string(before) {
		t.Errorf("Continue changed its arguments")
	}
	gotJSON, _ := json.Marshal(got)
	want := `{"model":"gpt-5","system":"New.","messages":[
	 {"role":"user","content":"Weather in Paris?"},
	 {"role":"assistant","content":[{"type":"thinking","thinking":"Let me think.","signature":"EqQBCkgIARABsig"},
	  {"type":"redacted_thinking","data":"EmwKAhgBEgyRedacted"},{"type":"text","text":"Checking <both> & more."},
	  {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"18C"},{"type":"tool_result","tool_use_id":"toolu_02","content":"noon"}]}],
	 "tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{}}}],
	 "previous_response_id":"resp_1"}`
	if d := wiretest.Diff([]byte(want), gotJSON); d != "" {
		t.Errorf("%s\n%s", d, gotJSON)
	}
	got.Messages[1].Content.Blocks[0].Thinking = "changed"
	if out.Content[0].Thinking == "changed" {
		t.Errorf("the result shares blocks with the previous response")
	}
}

// TestAdvisory: what an upstream may drop, and what it must refuse.
func TestAdvisory(t *testing.T) {
	for name, want := range map[string]bool{"metadata": true, "user": true, "service_tier": true, "reasoning": true,
		"text": true, "include": true, "prompt": false, "context_management": false, "store": false} {
		if got := responses.Advisory(name); got != want {
			t.Errorf("Advisory(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRows: the dialect's and the provider's rows.
func TestRows(t *testing.T) {
	d := responses.Dialect()
	if d.Name != "responses" || d.IDPrefix != "resp_" || d.Decode == nil || d.Response == nil || d.Stream == nil || d.Error == nil || d.StreamType != nil {
		t.Errorf("dialect row %+v", d)
	}
	p := responses.Provider()
	if p.Name != "responses" || p.Upstream == nil || p.Upstream.Path("gpt-5") != "/responses" {
		t.Errorf("provider row %+v", p)
	}
	wiretest.RunProvider(t, p)
}
