// Package openloop measures HTTP hops the way traffic meets them: requests
// start on a fixed schedule whether or not earlier ones have been answered
// (an open loop), and each latency counts from the request's scheduled
// start, so time spent queueing behind a slow hop shows in the figures
// instead of slowing the load down. Targets are measured in interleaved
// rounds (a short turn each, repeated, the order turning), so that a slow
// moment of the machine weighs on all of them alike.
//
// It also runs the programs under test as processes of their own (Build,
// Start), so that each one's peak resident memory is its own (PeakRSS).
package openloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Schedule calls fire(i, at) for i = 0, 1, …, each in a goroutine of its
// own at at = the start + i/rate, for as long as at falls within dur of
// the start, and returns once every call has returned. A call that starts
// late (the machine was busy) still gets its scheduled time, so the
// lateness is counted by whoever measures from at. It stops scheduling
// when ctx ends.
func Schedule(ctx context.Context, rate int, dur time.Duration, fire func(i int, at time.Time)) {
	if rate <= 0 || dur <= 0 {
		return
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; ; i++ {
		// From the start each time, not by adding intervals: no drift.
		off := time.Duration(int64(i) * int64(time.Second) / int64(rate))
		if off >= dur {
			break
		}
		at := start.Add(off)
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				wg.Wait()
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fire(i, at)
		}()
	}
	wg.Wait()
}

// ErrShed is what a Target's Send returns (wrapped or not) for a request
// the hop refused because it was overloaded (a 503 that says so, say): the
// hop working as designed under load, counted apart from failures.
var ErrShed = errors.New("shed: the hop refused the request as overloaded")

// Target is one path to measure: Send makes one request and returns once
// its answer has been read whole, or an error when the answer was not the
// one expected.
type Target struct {
	Name string
	Send func(ctx context.Context) error
}

// Options shape a measurement. The zero value of a field takes its
// default.
type Options struct {
	Rate   int           // requests per second, during a target's turn (default 100)
	Total  time.Duration // measured time per target, split into rounds (default 1 s)
	Round  time.Duration // one turn of one target (default 250 ms; at most Total)
	Warmup time.Duration // an unmeasured turn per target first (default Round; <0: none)
}

func (o Options) withDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = 100
	}
	if o.Total <= 0 {
		o.Total = time.Second
	}
	if o.Round <= 0 {
		o.Round = 250 * time.Millisecond
	}
	o.Round = min(o.Round, o.Total)
	switch {
	case o.Warmup == 0:
		o.Warmup = o.Round
	case o.Warmup < 0:
		o.Warmup = 0
	}
	return o
}

// Result is what one target's requests came to.
type Result struct {
	Name      string
	Latencies []time.Duration // of the answered requests, from their scheduled starts, in no order
	Sent      int
	Shed      int   // refused as overloaded (ErrShed)
	Errors    int   // failed otherwise
	Err       error // the first failure, if any
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of the latencies: the value at
// rank round(q·(n−1)) in sorted order; 0 for none.
func (r Result) Quantile(q float64) time.Duration { return Quantile(r.Latencies, q) }

// Rounds measures the targets in turn: a warm-up turn each, then rounds
// in which every target has a turn of o.Round at o.Rate, the first target
// of a round turning each time, until each has been measured for o.Total.
// A turn ends when its last request has been answered, so one target's
// stragglers never overlap the next one's turn. before, when not nil, is
// called before each target's turn (with its index), as a place to note
// or reset state of the process behind it.
func Rounds(ctx context.Context, targets []Target, o Options, before func(i int)) []Result {
	o = o.withDefaults()
	res := make([]Result, len(targets))
	for i, t := range targets {
		res[i].Name = t.Name
	}
	turn := func(i int, d time.Duration, measured bool) {
		if before != nil {
			before(i)
		}
		var mu sync.Mutex
		Schedule(ctx, o.Rate, d, func(_ int, at time.Time) {
			err := targets[i].Send(ctx)
			lat := time.Since(at)
			if !measured {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			r := &res[i]
			r.Sent++
			if errors.Is(err, ErrShed) {
				r.Shed++
				return
			}
			if err != nil {
				r.Errors++
				if r.Err == nil {
					r.Err = fmt.Errorf("%s: %w", r.Name, err)
				}
				return
			}
			r.Latencies = append(r.Latencies, lat)
		})
	}
	if o.Warmup > 0 {
		for i := range targets {
			turn(i, o.Warmup, false)
		}
	}
	rounds := int((o.Total + o.Round - 1) / o.Round)
	for k := 0; k < rounds && ctx.Err() == nil; k++ {
		d := o.Round
		if k == rounds-1 {
			d = o.Total - time.Duration(rounds-1)*o.Round
		}
		for j := range targets {
			turn((k+j)%len(targets), d, true)
		}
	}
	return res
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of d, the value at rank
// round(q·(n−1)) in sorted order; 0 for none. d is left as it is.
func Quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q = min(max(q, 0), 1)
	return s[int(q*float64(len(s)-1)+0.5)]
}
