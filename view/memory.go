package view

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is bounded at two levels, because Go cannot tell how much of the
// heap one goroutine holds:
//
//   - Each evaluation (one Apply: every rule, and the JSON encoding of the
//     result) carries a meter. Steps that can allocate far more than their
//     inputs (string repetition and concatenation, path updates at large
//     indexes, encodings, regular-expression matches, flattening, …) are
//     priced before they run, from their arguments, and refused when the
//     price passes the budget, so no single step allocates more than
//     MaxMemory. The prices of costly steps are summed (most of what they
//     made is garbage by the end, so the sum may reach spentFactor ×
//     MaxMemory), and what the evaluation keeps (rule outputs, the encoded
//     result) is summed against MaxMemory itself.
//   - A Budget, shared by the evaluations of a process, watches the heap
//     while any evaluation runs and stops the costliest one when the heap
//     passes its limit. It catches what grows by many small steps (arrays
//     collected element by element, builtins that loop inside jq), which no
//     price of a single step sees.
//
// An evaluation stopped either way ends with CodeTooCostly.

// defaultMaxMemory is Options.MaxMemory's default.
const defaultMaxMemory = 64 << 20

// spentFactor bounds the summed price of an evaluation's costly steps as a
// multiple of MaxMemory: a loop that rebuilds a string leaves garbage behind
// that the collector takes back, so the sum may pass what is ever live.
const spentFactor = 8

// ErrHeapLimit is the cause of an evaluation the Budget stopped: the heap
// passed the Budget's limit while it was the costliest evaluation running.
// Unlike a refused step it depends on the load of the moment, so a result
// that failed with it should not be cached.
var ErrHeapLimit = errors.New("the heap passed the view memory limit")

// meter accounts the memory of one evaluation. Its context ends when the
// meter or the Budget refuses the evaluation, with the refusal as the cause.
type meter struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	limit  int64 // MaxMemory
	spent  atomic.Int64
	held   atomic.Int64
	start  time.Time
}

// newMeter starts an evaluation's accounting under ctx; call done when the
// evaluation ends.
func newMeter(ctx context.Context, limit int64) *meter {
	m := &meter{limit: limit, start: time.Now()}
	m.ctx, m.cancel = context.WithCancelCause(ctx)
	return m
}

func (m *meter) done() { m.cancel(nil) }

// price is what the Budget compares evaluations by.
func (m *meter) price() int64 { return m.spent.Load() + m.held.Load() }

// spend prices a costly step before it runs. n < 0 means "more than any
// budget" (an estimate that overflowed).
func (m *meter) spend(n int64, what string) *Error {
	if n < 0 || n > m.limit {
		return m.refuse(fmt.Sprintf("%s would allocate about %s; a step may take at most %s", what, byteCount(n), byteCount(m.limit)))
	}
	if total := m.spent.Add(n); total > spentFactor*m.limit {
		return m.refuse(fmt.Sprintf("%s: the view's costly steps allocated %s in all; the limit is %s", what, byteCount(total), byteCount(spentFactor*m.limit)))
	}
	return nil
}

// hold accounts n bytes the evaluation keeps to its end.
func (m *meter) hold(n int64, what string) *Error {
	if n < 0 || n > m.limit {
		return m.refuse(fmt.Sprintf("%s is about %s; a view may hold at most %s", what, byteCount(n), byteCount(m.limit)))
	}
	if total := m.held.Add(n); total > m.limit {
		return m.refuse(fmt.Sprintf("%s: the view's output is about %s; a view may hold at most %s", what, byteCount(total), byteCount(m.limit)))
	}
	return nil
}

// refuse stops the evaluation: its context is cancelled with the error as
// the cause, so a jq query that catches the error still ends at its next
// step.
func (m *meter) refuse(msg string) *Error {
	e := &Error{Code: CodeTooCostly, Msg: msg}
	m.cancel(e)
	return e
}

// stopped turns the end of ctx into the error a rule reports: the meter's
// or the Budget's refusal when that was the cause, else nil.
func stopped(ctx context.Context) *Error {
	var e *Error
	if errors.As(context.Cause(ctx), &e) && e.Code == CodeTooCostly {
		return e
	}
	return nil
}

func byteCount(n int64) string {
	switch {
	case n < 0:
		return "more than 8 EiB"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// mulCost multiplies sizes, saturating to -1 (more than any budget).
func mulCost(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	if a != 0 && b > math.MaxInt64/a {
		return -1
	}
	return a * b
}

// Budget bounds the heap of a process while views are evaluated in it. It
// is shared by every View compiled with it (Options.Budget) and safe for
// concurrent use. While at least one evaluation runs, a watchdog samples
// the heap every few milliseconds. When the heap passes the limit less the
// room the running evaluations' steps in progress may still allocate
// (their MaxMemory together, at least an eighth and at most half of the
// limit), it
// stops every evaluation that has run for at least 10 ms and for at least
// half as long as the oldest one (growing a heap by hundreds of megabytes
// takes far longer than a typical view, which is done in well under a
// millisecond, so views that just started are spared), or else the one
// that has priced the most; it then waits for them to end and collects the
// garbage before it looks again. Once the last evaluation has ended after such a stop, the
// freed memory is returned to the operating system.
type Budget struct {
	limit uint64
	every time.Duration

	mu        sync.Mutex
	running   map[*meter]struct{}
	watching  bool
	softLimit int64 // the runtime's soft memory limit before the watchdog lowered it; -1 when it did not
	stopped   int   // evaluations stopped since the memory was last returned
	stopCount atomic.Int64
}

// stopAge is how long an evaluation must have run for the watchdog to stop
// it together with the costliest one.
const stopAge = 10 * time.Millisecond

// NewBudget returns a Budget that keeps the heap under limit bytes.
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = 1 << 30
	}
	return &Budget{limit: uint64(limit), every: 2 * time.Millisecond, running: map[*meter]struct{}{}}
}

// Limit reports the heap limit in bytes.
func (b *Budget) Limit() int64 { return int64(b.limit) }

// Stopped reports how many evaluations the watchdog has stopped.
func (b *Budget) Stopped() int64 { return b.stopCount.Load() }

func (b *Budget) enter(m *meter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[m] = struct{}{}
	if !b.watching {
		b.watching = true
		// While views run, the collector works to keep the heap under the
		// limit too: between two samples of the watchdog, views that grow
		// by many small steps otherwise leave garbage the sample counts and
		// the collector has not yet swept.
		b.softLimit = -1
		if prev := debug.SetMemoryLimit(-1); prev > int64(b.limit) {
			debug.SetMemoryLimit(int64(b.limit))
			b.softLimit = prev
		}
		go b.watch()
	}
}

// restoreSoftLimit gives back the soft memory limit the watchdog lowered,
// unless someone else has changed it since. b.mu is held.
func (b *Budget) restoreSoftLimit() {
	if b.softLimit >= 0 && debug.SetMemoryLimit(-1) == int64(b.limit) {
		debug.SetMemoryLimit(b.softLimit)
	}
	b.softLimit = -1
}

func (b *Budget) leave(m *meter) {
	b.mu.Lock()
	delete(b.running, m)
	b.mu.Unlock()
}

// heapObjects is the live and not yet swept heap: it grows with every
// allocation, where the collector's own live-heap figure waits for a cycle.
const heapObjects = "/memory/classes/heap/objects:bytes"

func (b *Budget) watch() {
	t := time.NewTicker(b.every)
	defer t.Stop()
	sample := []metrics.Sample{{Name: heapObjects}}
	var victims []*meter // stopped, not yet ended
	for range t.C {
		b.mu.Lock()
		if len(b.running) == 0 {
			b.watching = false
			b.restoreSoftLimit()
			free := b.stopped > 0
			b.stopped = 0
			b.mu.Unlock()
			if free {
				// What the stopped evaluations built is garbage now; give
				// it back rather than keep the peak for the process's life.
				debug.FreeOSMemory()
			}
			return
		}
		if len(victims) > 0 {
			victims = slices.DeleteFunc(victims, func(m *meter) bool { _, runs := b.running[m]; return !runs })
			b.mu.Unlock()
			if len(victims) == 0 {
				runtime.GC() // so that the next sample counts what is live, not their garbage
			}
			continue
		}
		threshold := b.threshold()
		b.mu.Unlock()
		metrics.Read(sample)
		if sample[0].Value.Uint64() <= threshold {
			continue
		}
		b.mu.Lock()
		victims = b.victims()
		b.stopped += len(victims)
		b.mu.Unlock()
		b.stopCount.Add(int64(len(victims)))
		for _, m := range victims {
			m.cancel(&Error{Code: CodeTooCostly, Err: ErrHeapLimit,
				Msg: fmt.Sprintf("stopped: the heap passed the view memory limit (%s) while this view ran", byteCount(int64(b.limit)))})
		}
	}
}

// threshold is the heap above which the watchdog stops evaluations: the
// limit less the room the running evaluations' steps in progress may take
// before they see that they were stopped (no priced step allocates more
// than its evaluation's MaxMemory), and at least an eighth of the limit
// for the rest of the process. b.mu is held.
func (b *Budget) threshold() uint64 {
	var room uint64
	for m := range b.running {
		room += uint64(max(m.limit, 0))
	}
	room = min(max(room, b.limit/8), b.limit/2)
	return b.limit - room
}

// victims picks the evaluations to stop: those running for stopAge or
// longer, or else the costliest. b.mu is held.
func (b *Budget) victims() []*meter {
	var (
		out       []*meter
		costliest *meter
		oldest    time.Duration
	)
	now := time.Now()
	for m := range b.running {
		oldest = max(oldest, now.Sub(m.start))
	}
	for m := range b.running {
		if stopped(m.ctx) != nil {
			continue
		}
		if age := now.Sub(m.start); age >= stopAge && age >= oldest/2 {
			out = append(out, m)
		}
		if costliest == nil || m.price() > costliest.price() || (m.price() == costliest.price() && m.start.Before(costliest.start)) {
			costliest = m
		}
	}
	if len(out) == 0 && costliest != nil {
		out = append(out, costliest)
	}
	return out
}
