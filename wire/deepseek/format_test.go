package deepseek_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/deepseek"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

func TestStructuredOutput(t *testing.T) {
	base := chat.Request{Model: "deepseek-chat", Messages: []chat.Message{{Role: chat.User, Content: chat.Str("json")}},
		Extra: map[string]json.RawMessage{"frequency_penalty": json.RawMessage(`1`)}}
	req := base
	req.Format = &chat.OutputFormat{Type: "json_object"}
	out, warns, err := deepseek.EncodeRequest(req, deepseek.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(out)
	want := `{"model":"deepseek-chat","messages":[{"role":"user","content":"json"}],"response_format":{"type":"json_object"},"frequency_penalty":1}`
	if d := wiretest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\n got %s", d, got)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
	req.Format = &chat.OutputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}
	_, _, err = deepseek.EncodeRequest(req, deepseek.Options{})
	var ce *chat.Error
	if !errors.As(err, &ce) || ce.Path != "output_config.format" {
		t.Errorf("json_schema: err %v, want a *chat.Error at output_config.format", err)
	}
}
