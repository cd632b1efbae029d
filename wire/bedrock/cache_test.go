package bedrock_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/bedrock"
)

// placements encodes req with the cache strategy and returns its
// placements.
func placements(t *testing.T, req chat.Request) []bedrock.Placement {
	t.Helper()
	out, _, err := bedrock.EncodeRequest(req, bedrock.Options{Cache: bedrock.CacheBedrock, Model: "anthropic.claude-sonnet-4-20250514-v1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return out.CacheState.Placements
}

// stubbed is a request whose user message holds text and block b, and
// the same request with b replaced by text.
func stubbed(b chat.Block, stub string) (with, as chat.Request) {
	long := strings.Repeat("context ", 700) // about 1,400 tokens
	mk := func(x chat.Block) chat.Request {
		return chat.Request{Model: "m", Messages: []chat.Message{
			{Role: chat.User, Content: chat.Of(chat.Block{Type: chat.TypeText, Text: long}, x)},
			{Role: chat.Assistant, Content: chat.Str("ok")},
			{Role: chat.User, Content: chat.Of(chat.Block{Type: chat.TypeToolResult, ToolUseID: "t", Content: &chat.Content{Blocks: []chat.Block{x}}})},
		}}
	}
	return mk(b), mk(chat.Block{Type: chat.TypeText, Text: stub})
}

// TestCachePointsCountWhatIsSent: an image or a document Converse cannot
// carry is sent as a short text stub, and the cache points are placed by
// the tokens of that text — as for a request that held the text itself —
// not by an image's 1,600; one Converse carries still counts 1,600.
func TestCachePointsCountWhatIsSent(t *testing.T) {
	for _, c := range []struct {
		name string
		b    chat.Block
	}{
		{"image by URL", chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "url", URL: "https://example.com/cat.png"}}},
		{"image of another format", chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: "image/bmp", Data: "Qk0="}}},
		{"document by URL", chat.Block{Type: chat.TypeDocument, Title: "Spec", Source: &chat.Source{Type: "url", URL: "https://example.com/spec.pdf"}}},
		{"document of another format", chat.Block{Type: chat.TypeDocument, Source: &chat.Source{Type: "base64", MediaType: "application/zip", Data: "UEs="}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stub := chat.ImageStub(c.b.Source)
			if c.b.Type == chat.TypeDocument {
				stub = chat.DocumentStub(&c.b)
			}
			with, as := stubbed(c.b, stub)
			got, want := placements(t, with), placements(t, as)
			if len(want) == 0 {
				t.Fatal("no placement for the text request")
			}
			if len(got) != len(want) || got[0] != want[0] {
				t.Fatalf("placements %+v, want those of the text %q: %+v", got, stub, want)
			}
		})
	}
	png := chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "base64", MediaType: "image/png", Data: "iVBORw0KGgo="}}
	with, as := stubbed(png, "")
	got, text := placements(t, with), placements(t, as)
	if len(got) == 0 || len(text) == 0 || got[0].Tokens != text[0].Tokens+1600 {
		t.Fatalf("a carried image: placements %+v, the same without it %+v", got, text)
	}
}

// TestCachePointPlacedOnlyForWhatIsSent: a message of a few words and
// three images Converse cannot carry is far below a model's minimum for a
// cache point, and gets none.
func TestCachePointPlacedOnlyForWhatIsSent(t *testing.T) {
	var blocks []chat.Block
	for _, u := range []string{"https://a.example/1.png", "https://a.example/2.png", "https://a.example/3.png"} {
		blocks = append(blocks, chat.Block{Type: chat.TypeImage, Source: &chat.Source{Type: "url", URL: u}})
	}
	blocks = append(blocks, chat.Block{Type: chat.TypeText, Text: "what differs?"})
	req := chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: chat.Of(blocks...)}}}
	if p := placements(t, req); len(p) != 0 {
		t.Fatalf("placements %+v for a few dozen tokens", p)
	}
	out, _, _ := bedrock.EncodeRequest(req, bedrock.Options{Cache: bedrock.CacheBedrock, Model: "anthropic.claude-sonnet-4-20250514-v1:0"})
	if body, _ := json.Marshal(out); strings.Contains(string(body), "cachePoint") {
		t.Fatalf("a cache point: %s", body)
	}
}
