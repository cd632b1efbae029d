// Package providers is ctxkit's provider table: one row per wire format,
// each declared by its own package (wire.Provider). The gateway routes to
// the rows that have an upstream side, `ctxkit convert` converts to every
// row. Adding a provider is its package and one line here.
package providers

import (
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/deepseek"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/mistral"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/responses"
	"github.com/ctxkit/ctxkit/wire/simple"
	"github.com/ctxkit/ctxkit/wire/vscodelm"
)

// table is in the order the gateway's configuration errors list the
// upstream types.
var table = []wire.Provider{
	openai.Provider(),
	responses.Provider(),
	anthropic.Provider(),
	gemini.Provider(),
	bedrock.Provider(),
	mistral.Provider(),
	deepseek.Provider(),
	vscodelm.Provider(),
	simple.Provider(),
}

// All is every row, in the table's order. The slice is the caller's.
func All() []wire.Provider { return append([]wire.Provider(nil), table...) }

// Lookup is the row named name.
func Lookup(name string) (wire.Provider, bool) {
	for _, p := range table {
		if p.Name == name {
			return p, true
		}
	}
	return wire.Provider{}, false
}

// Upstreams are the names of the rows ctxkit can call, in the table's
// order.
func Upstreams() []string {
	var out []string
	for _, p := range table {
		if p.Upstream != nil {
			out = append(out, p.Name)
		}
	}
	return out
}
