package gateway

import (
	"net/http"

	"github.com/ctxkit/ctxkit/wire"
)

// A client whose dialect is its upstream's own API (a Chat Completions
// client of an OpenAI upstream, a Messages client of an Anthropic one, a
// Responses client of a Responses upstream) is streamed most of the
// upstream's events with only the fields the gateway changes rewritten
// (wire.Forwarder), rather than every event decoded to chunks and encoded
// again: the stream's start and end, usage, stops, errors and tool-call
// starts still go through the chunk pipeline (tool-call ids restored,
// errors cleaned, cost and metrics, the record, a kept response), so the
// client reads the same stream either way.

// forwarder is the dialect's forwarder of a stream from p, or nil when
// the stream is decoded and encoded event by event: p is not of the
// dialect's own API, or something between the two changes what the
// events say (a format sent as a forced tool becomes text).
func (g *Gateway) forwarder(w http.ResponseWriter, d Dialect, p *Provider, sent *outbound, out wire.Outgoing, kept bool) wire.Forwarder {
	row := d.row()
	if row.Forward == nil || g.noForward || row.Name != p.row.Name || sent.tool != "" {
		return nil
	}
	// A recorded exchange keeps the stream's text, and a kept response
	// (a Responses client's, stored by default) is collected from its
	// chunks: the forwarded events' chunks are yielded too.
	rw, recording := w.(*recordWriter)
	return row.Forward(out, wire.ForwardOptions{Chunks: kept || recording && rw.x != nil})
}
