package providers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// TestImageDetailNeverSilent: an image's detail (OpenAI's resolution
// hint, which sets its cost) reaches every upstream type that takes it
// and is named in a warning by every other; none sends it where the API
// refuses unknown fields. (An upstream that takes no such image at all
// replaces it, detail and all, by a text stub with a warning.)
func TestImageDetailNeverSilent(t *testing.T) {
	img := chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo=",
		Extra: map[string]json.RawMessage{"detail": json.RawMessage(`"low"`)}}}
	req := chat.Request{Model: "m", MaxTokens: 100, Messages: []chat.Message{
		{Role: "user", Content: chat.Content{Blocks: []chat.Block{{Type: chat.TypeText, Text: "what is it?"}, img}}},
	}}
	for _, p := range providers.All() {
		if p.Upstream == nil {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			body, _, warns, err := p.Encode(req, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			carried := strings.Contains(string(data), `"detail":"low"`)
			warned := false
			for _, w := range warns {
				if strings.Contains(w.String(), "detail") || strings.Contains(w.String(), "replaced by") {
					warned = true
				}
			}
			if carried == warned {
				t.Fatalf("carried %v, warned %v: %s %v", carried, warned, data, warns)
			}
			if want := p.Name == "openai" || p.Name == "responses"; carried != want {
				t.Fatalf("carried %v: %s", carried, data)
			}
		})
	}
}
