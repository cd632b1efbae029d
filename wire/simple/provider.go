package simple

import "github.com/ctxkit/ctxkit/wire"

// Provider is the plain-text format's row of the provider table: a
// format ctxkit converts to, for models behind no chat API.
func Provider() wire.Provider {
	return wire.Provider{Name: "simple", Encode: wire.Stateless(EncodeRequest)}
}
