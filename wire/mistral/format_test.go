package mistral_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func TestStructuredOutputAndCarriedFields(t *testing.T) {
	req := chat.Request{Model: "mistral-large", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("x")}},
		Format: &chat.OutputFormat{Type: "json_schema", Name: "a", Schema: json.RawMessage(`{"type":"object"}`)},
		Extra:  map[string]json.RawMessage{"seed": json.RawMessage(`42`), "presence_penalty": json.RawMessage(`0.2`), "logit_bias": json.RawMessage(`{}`)}}
	out, warns, err := mistral.EncodeRequest(req, mistral.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"mistral-large","messages":[{"role":"user","content":"x"}],
		"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}},"random_seed":42,"presence_penalty":0.2}`
	if d := wiretest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\n got %s", d, got)
	}
	if len(warns) != 1 || warns[0].Path != "logit_bias" {
		t.Errorf("warnings %v, want one for logit_bias", warns)
	}
}
