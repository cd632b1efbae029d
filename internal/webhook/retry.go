package webhook

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy decides what follows an attempt. Its methods are pure: the clock
// and the random draw are arguments. The zero value is the default policy.
type Policy struct {
	Horizon       time.Duration // retry until this long after the delivery was due first; 0: 24 h
	Base          time.Duration // the first backoff's ceiling; 0: 5 s
	MaxBackoff    time.Duration // ceiling of any backoff; 0: 1 h
	MaxRetryAfter time.Duration // an endpoint's Retry-After is capped here; 0: 1 h
	PauseAfter    time.Duration // an endpoint failing this long in a row is paused; 0: 24 h
}

func (p Policy) withDefaults() Policy {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.Horizon, 24*time.Hour)
	def(&p.Base, 5*time.Second)
	def(&p.MaxBackoff, time.Hour)
	def(&p.MaxRetryAfter, time.Hour)
	def(&p.PauseAfter, 24*time.Hour)
	return p
}

// Verdict is what becomes of a delivery after an attempt.
type Verdict string

const (
	Delivered Verdict = "delivered"
	Retrying  Verdict = "retry"
	Dead      Verdict = "dead"
)

// Decision is a Verdict with, for Retrying, when to try next and, for
// Dead, why.
type Decision struct {
	Verdict Verdict
	At      time.Time
	Reason  string
}

// Retryable reports whether an attempt failed for a reason that may pass:
// no connection, no answer in time, a 5xx, 408 or 429. Any other status
// is the endpoint's final word, and a refused address or URL does not
// change by waiting.
func Retryable(a Attempt) bool {
	switch a.Class {
	case ClassTimeout, ClassConnect, ClassDNS, ClassTLS, ClassTransport, ClassCanceled:
		return true
	case ClassStatus:
		return a.Status >= 500 || a.Status == http.StatusRequestTimeout || a.Status == http.StatusTooManyRequests
	}
	return false
}

// Decide is the fate of a delivery first due at firstDue after its
// attempt number n (1 for the first) ended at now as a. rnd, in [0, 1),
// draws the jitter: the backoff is uniform in [0, min(MaxBackoff,
// Base·2^(n-1))] ("full jitter", so endpoints that failed together do not
// retry together), raised to the endpoint's Retry-After when it asks for
// longer (capped at MaxRetryAfter). A retry that would fall past the
// horizon dead-letters the delivery now.
func (p Policy) Decide(firstDue time.Time, n int, a Attempt, now time.Time, rnd float64) Decision {
	p = p.withDefaults()
	if a.Class == ClassOK {
		return Decision{Verdict: Delivered, At: now}
	}
	if !Retryable(a) {
		return Decision{Verdict: Dead, At: now, Reason: "final: " + describe(a)}
	}
	ceiling := p.MaxBackoff
	if n < 1 {
		n = 1
	}
	if n-1 < 62 {
		if c := float64(p.Base) * math.Exp2(float64(n-1)); c < float64(ceiling) {
			ceiling = time.Duration(c)
		}
	}
	rnd = min(max(rnd, 0), 1)
	wait := time.Duration(rnd * float64(ceiling))
	if a.RetryAfter != "" {
		if ra, ok := ParseRetryAfter(a.RetryAfter, now); ok {
			wait = max(wait, min(ra, p.MaxRetryAfter))
		}
	}
	at := now.Add(wait)
	if at.After(firstDue.Add(p.Horizon)) {
		return Decision{Verdict: Dead, At: now, Reason: "retries exhausted after " + p.Horizon.String() + ": " + describe(a)}
	}
	return Decision{Verdict: Retrying, At: at}
}

// ShouldPause reports whether an endpoint failing without a success since
// failingSince (zero: it is not failing) is to be paused at now.
func (p Policy) ShouldPause(failingSince, now time.Time) bool {
	p = p.withDefaults()
	return !failingSince.IsZero() && now.Sub(failingSince) >= p.PauseAfter
}

func describe(a Attempt) string {
	if a.Class == ClassStatus {
		return "status " + strconv.Itoa(a.Status)
	}
	if a.Err != "" {
		return string(a.Class) + ": " + a.Err
	}
	return string(a.Class)
}

// ParseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): whole
// seconds, or an HTTP date, as a wait from now. A date in the past is a
// wait of zero; ok is false for anything else, which the caller ignores.
// Callers bound the result (Policy.MaxRetryAfter).
func ParseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxRetryAfterLen {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
		}
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil || s > int64(math.MaxInt64/time.Second) {
			// More seconds than a Duration holds: as long as one can be.
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if !t.After(now) {
		return 0, true
	}
	d := t.Sub(now) // saturates at the largest Duration
	return d, true
}
