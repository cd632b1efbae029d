package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON.
var encode = wiretest.Adapt(anthropic.EncodeRequest)

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

// TestConformanceCached runs the conformance corpus with the caching
// strategy on: it must not lose content or change its input either.
func TestConformanceCached(t *testing.T) {
	wiretest.Run(t, func(req chat.Request, _ json.RawMessage) (any, []chat.Warning, error) {
		return encode(req, json.RawMessage(`{"cache":"anthropic"}`))
	})
}

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }
