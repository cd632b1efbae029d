package providers_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/wire/providers"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// streams are the stream fixtures of each row with an upstream side:
// its package's directory and the fixtures' extension.
var streams = map[string]string{
	"openai":    ".sse",
	"responses": ".sse",
	"anthropic": ".sse",
	"gemini":    ".sse",
	"bedrock":   ".eventstream",
	"mistral":   ".sse",
}

// TestTable runs every row of the table through the wire suite: its
// encoder through the conformance checks, its upstream side through the
// row checks, and its stream decoder over its package's fixtures.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range providers.All() {
		if seen[p.Name] {
			t.Errorf("%s: two rows", p.Name)
		}
		seen[p.Name] = true
		t.Run(p.Name, func(t *testing.T) {
			wiretest.RunProvider(t, p)
			if ext, ok := streams[p.Name]; ok && p.Upstream != nil {
				t.Run("streams", func(t *testing.T) {
					wiretest.RunStreamFixtures(t, filepath.Join("..", p.Name, "testdata", "stream"), ext, 5, p.Upstream.Decode)
				})
			}
		})
	}
}

// TestLookup: every row is found by its name, nothing else is.
func TestLookup(t *testing.T) {
	for _, p := range providers.All() {
		if got, ok := providers.Lookup(p.Name); !ok || got.Name != p.Name {
			t.Errorf("Lookup(%q): %q, %v", p.Name, got.Name, ok)
		}
	}
	if _, ok := providers.Lookup("nope"); ok {
		t.Errorf("Lookup(nope) found a row")
	}
}

// TestUpstreams: the formats ctxkit calls, in the order the gateway's
// configuration errors list them.
func TestUpstreams(t *testing.T) {
	want := []string{"openai", "responses", "anthropic", "gemini", "bedrock", "mistral", "deepseek"}
	if got := providers.Upstreams(); !slices.Equal(got, want) {
		t.Errorf("Upstreams: %v, want %v", got, want)
	}
}
