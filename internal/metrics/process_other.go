//go:build !linux

package metrics

// processCollector writes nothing: the process_* series come from /proc.
type processCollector struct{}

// NewProcessCollector is the collector of the process_* series: CPU time,
// resident and virtual memory, open and maximum file descriptors, start
// time. They are read from /proc, so only on Linux; elsewhere the
// collector writes nothing.
func NewProcessCollector() Collector { return processCollector{} }

func (processCollector) names() []string { return nil }

func (processCollector) collect(out []Family) []Family { return out }
