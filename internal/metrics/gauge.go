package metrics

import (
	"math"
	"sync/atomic"
)

// A Gauge is a float64 that is set to the value it measures now.
type Gauge struct{ bits atomic.Uint64 }

// Set makes the gauge read v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Value is the gauge's current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

// GaugeOpts names a gauge vector.
type GaugeOpts struct {
	Name, Help string
}

// A GaugeVec is a family of gauges told apart by a fixed list of label
// names; as for CounterVec, take label values from bounded sets only.
type GaugeVec struct{ v *vec[Gauge] }

// NewGaugeVec is a gauge vector with the given label names.
func NewGaugeVec(o GaugeOpts, labels []string) *GaugeVec {
	d := newDesc(o.Name, o.Help, TypeGauge, labels)
	return &GaugeVec{v: newVec(d, func() *Gauge { return &Gauge{} })}
}

// WithLabelValues is the gauge of these label values, created at zero
// when new.
func (g *GaugeVec) WithLabelValues(values ...string) *Gauge { return g.v.get(values) }

// DeleteMatch drops every series whose label has value and says how
// many, as CounterVec.DeleteMatch.
func (g *GaugeVec) DeleteMatch(label, value string) int { return g.v.deleteMatch(label, value) }

func (g *GaugeVec) names() []string { return []string{g.v.desc.name} }

func (g *GaugeVec) collect(out []Family) []Family {
	return append(out, g.v.family(func(g *Gauge, s *Series) { s.Value = g.Value() }))
}
