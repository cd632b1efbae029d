package sdktest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestNoSilentDrops: Chat Completions fields reach an OpenAI upstream
// (seed, user); n > 1 is refused with a 400 unsupported_field naming it
// and the upstream; an advisory field
// (user) an upstream cannot take is dropped with x-ctxkit-warnings naming
// it.
func TestNoSilentDrops(t *testing.T) {
	e := newEnv(t, false)
	client := e.openai()
	params := openai.ChatCompletionNewParams{Model: find("openai").model, Seed: openai.Int(7), User: openai.String("u-1"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")}}
	if _, err := client.Chat.Completions.New(ctx(t), params); err != nil {
		t.Fatal(err)
	}
	ex, _ := e.fake("openai").Last("/chat/completions")
	var sent map[string]any
	json.Unmarshal(ex.Body, &sent)
	if sent["seed"] != 7.0 || sent["user"] != "u-1" {
		t.Fatalf("fields lost on the way to the upstream: %s", ex.Body)
	}

	// n > 1: the gateway answers one choice, so it refuses n: 2 for every
	// upstream rather than answer one.
	params.N = openai.Int(2)
	for _, typ := range []string{"openai", "anthropic"} {
		params.Model = find(typ).model
		_, err := client.Chat.Completions.New(ctx(t), params)
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || oe.Code != "unsupported_field" || oe.Param != "n" || !strings.Contains(oe.Message, typ) {
			t.Fatalf("n: 2 to an %s upstream: %v", typ, err)
		}
	}

	var resp *http.Response
	_, err := client.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: find("anthropic").model, User: openai.String("u-1"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")}}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if w := resp.Header.Get("X-Ctxkit-Warnings"); !strings.Contains(w, "user") {
		t.Fatalf("user dropped without a warning naming it: X-Ctxkit-Warnings %q", w)
	}
}
