package oaicompat

import "github.com/ctxkit/ctxkit/chat"

// ResolveParams is chat.ResolveParams for the OpenAI-shaped format f, its
// warnings appended to warns, with temperature and top_p copied and the
// stop sequences limited to maxStop (limitStop), so that the wire request
// shares nothing mutable with the canonical one.
func ResolveParams(req chat.Request, f chat.Format, maxStop int, warns []chat.Warning) (chat.Params, []chat.Warning) {
	p, pw := chat.ResolveParams(req, f)
	warns = append(warns, pw...)
	p.Temperature, p.TopP = copyFloat(p.Temperature), copyFloat(p.TopP)
	p.Stop, warns = limitStop(p.Stop, maxStop, string(f), warns)
	return p, warns
}

// limitStop is a copy of the first max stop sequences (all of them when
// max is 0), with a warning about the rest.
func limitStop(stop []string, max int, format string, warns []chat.Warning) ([]string, []chat.Warning) {
	if len(stop) == 0 {
		return nil, warns
	}
	if max > 0 && len(stop) > max {
		warns = append(warns, chat.Warnf("stop_sequences", "%s takes at most %d stop sequences: the last %d dropped", format, max, len(stop)-max))
		stop = stop[:max]
	}
	return append([]string(nil), stop...), warns
}

// copyFloat is a copy of *f (nil for nil), so that the wire request shares
// nothing mutable with the canonical one.
func copyFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}
