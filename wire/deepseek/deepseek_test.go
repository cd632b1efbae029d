package deepseek_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/deepseek"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON.
func encode(req chat.Request, options json.RawMessage) (any, []chat.Warning, error) {
	var opts deepseek.Options
	if len(options) > 0 && string(options) != "null" {
		dec := json.NewDecoder(bytes.NewReader(options))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			return nil, nil, err
		}
	}
	return deepseek.EncodeRequest(req, opts)
}

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }
