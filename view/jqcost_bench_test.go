package view

import (
	"context"
	"testing"

	"github.com/itchyny/gojq"
)

// BenchmarkJQPricing compares priced queries with the same queries compiled
// plainly, in one run: the price of the prelude on typical view queries and
// on arithmetic in a loop, the worst case (every + is priced).
func BenchmarkJQPricing(b *testing.B) {
	doc, err := DecodeJSON([]byte(`{"title":"t","items":[{"name":"a","n":1},{"name":"b","n":2},{"name":"c","n":3}],"tags":["x","y"]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, query string }{
		{"typical", `{names: [.items[].name], total: (.items | map(.n) | add), label: "\(.title) (\(.tags | join(", ")))"}`},
		{"update", `.items |= map(.n += 1) | .items[0].name = "z"`},
		{"arithmetic", `reduce range(1000) as $i (0; . + $i * 2)`},
		{"literals", `[.items[] | .n + 1, .n - 1, .n / 2, (.name | length - 1)]`},
	} {
		q, err := gojq.Parse(c.query)
		if err != nil {
			b.Fatal(err)
		}
		plain, err := gojq.Compile(q)
		if err != nil {
			b.Fatal(err)
		}
		q2, _ := gojq.Parse(c.query)
		priced, err := compilePriced(q2)
		if err != nil {
			b.Fatal(err)
		}
		drain := func(it gojq.Iter) {
			for {
				v, ok := it.Next()
				if !ok {
					return
				}
				if err, isErr := v.(error); isErr {
					b.Fatal(err)
				}
			}
		}
		b.Run(c.name+"/plain", func(b *testing.B) {
			for b.Loop() {
				// The same cancellable context as a priced run: gojq checks
				// it before every step.
				ctx, cancel := context.WithCancel(context.Background())
				drain(plain.RunWithContext(ctx, doc))
				cancel()
			}
		})
		b.Run(c.name+"/priced", func(b *testing.B) {
			for b.Loop() {
				m := newMeter(context.Background(), defaultMaxMemory)
				drain(priced.RunWithContext(m.ctx, doc, m))
				m.done()
			}
		})
	}
}
