package vscodelm

import "github.com/ctxkit/ctxkit/wire"

// Provider is the VS Code Language Model API's row of the provider table:
// a format ctxkit converts to (an extension makes the call).
func Provider() wire.Provider {
	return wire.Provider{Name: "vscodelm", Encode: wire.Stateless(EncodeRequest)}
}
