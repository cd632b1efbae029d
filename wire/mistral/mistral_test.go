package mistral_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON.
var encode = wiretest.Adapt(mistral.EncodeRequest)

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }
