package simple_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/simple"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON.
var encode = wiretest.Adapt(simple.EncodeRequest)

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

// TestConformanceThinkingText runs the corpus with reasoning rendered as text.
func TestConformanceThinkingText(t *testing.T) {
	wiretest.Run(t, func(req chat.Request, _ json.RawMessage) (any, []chat.Warning, error) {
		return encode(req, json.RawMessage(`{"thinking":"text"}`))
	})
}

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }
