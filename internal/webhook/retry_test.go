package webhook

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var p Policy // defaults: 24 h horizon, 5 s base, 1 h ceiling, Retry-After ≤ 1 h
	st := func(code int) Attempt { return Attempt{Class: ClassStatus, Status: code} }
	cases := []struct {
		name    string
		n       int
		a       Attempt
		now     time.Time
		rnd     float64
		verdict Verdict
		at      time.Time
		reason  string
	}{
		{"2xx", 1, Attempt{Class: ClassOK, Status: 204}, t0, 0.5, Delivered, t0, ""},
		{"500 first, top of the jitter", 1, st(500), t0, 0.999999, Retrying, t0.Add(4999995 * time.Microsecond), ""},
		{"500 first, bottom", 1, st(500), t0, 0, Retrying, t0, ""},
		{"503 third, half", 3, st(503), t0, 0.5, Retrying, t0.Add(10 * time.Second), ""},
		{"ceiling", 40, st(502), t0, 0.5, Retrying, t0.Add(30 * time.Minute), ""},
		{"huge n", 1 << 30, st(502), t0, 0.5, Retrying, t0.Add(30 * time.Minute), ""},
		{"408", 1, st(408), t0, 0, Retrying, t0, ""},
		{"429 with Retry-After", 1, Attempt{Class: ClassStatus, Status: 429, RetryAfter: "120"}, t0, 0.1, Retrying, t0.Add(2 * time.Minute), ""},
		{"Retry-After shorter than the draw", 5, Attempt{Class: ClassStatus, Status: 503, RetryAfter: "1"}, t0, 0.5, Retrying, t0.Add(40 * time.Second), ""},
		{"Retry-After capped", 1, Attempt{Class: ClassStatus, Status: 503, RetryAfter: "999999"}, t0, 0, Retrying, t0.Add(time.Hour), ""},
		{"Retry-After date", 1, Attempt{Class: ClassStatus, Status: 503, RetryAfter: t0.Add(90 * time.Second).Format(http.TimeFormat)}, t0, 0, Retrying, t0.Add(90 * time.Second), ""},
		{"Retry-After garbage ignored", 1, Attempt{Class: ClassStatus, Status: 503, RetryAfter: "soon"}, t0, 0, Retrying, t0, ""},
		{"timeout", 2, Attempt{Class: ClassTimeout}, t0, 1, Retrying, t0.Add(10 * time.Second), ""},
		{"connect", 1, Attempt{Class: ClassConnect, Err: "refused"}, t0, 0, Retrying, t0, ""},
		{"400 final", 1, st(400), t0, 0, Dead, t0, "final: status 400"},
		{"410 final", 1, st(410), t0, 0, Dead, t0, "final: status 410"},
		{"302 final", 1, st(302), t0, 0, Dead, t0, "final: status 302"},
		{"address final", 1, Attempt{Class: ClassAddress, Err: "address 10.0.0.1 refused"}, t0, 0, Dead, t0, "final: address"},
		{"past the horizon", 30, st(500), t0.Add(24*time.Hour - time.Minute), 0.5, Dead, t0.Add(24*time.Hour - time.Minute), "retries exhausted after 24h0m0s: status 500"},
		{"just inside the horizon", 30, st(500), t0.Add(24*time.Hour - time.Minute), 0.01, Retrying, t0.Add(24*time.Hour - time.Minute + 36*time.Second), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(t0, c.n, c.a, c.now, c.rnd)
			if d.Verdict != c.verdict || !d.At.Equal(c.at) || !strings.HasPrefix(d.Reason, c.reason) {
				t.Fatalf("Decide = %+v, want %s at %s (%q)", d, c.verdict, c.at, c.reason)
			}
		})
	}
	short := Policy{Horizon: time.Minute}
	if d := short.Decide(t0, 1, st(500), t0.Add(59*time.Second), 0.5); d.Verdict != Dead {
		t.Fatalf("configured horizon: %+v", d)
	}
}

func TestShouldPause(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var p Policy
	for _, c := range []struct {
		since, now time.Time
		want       bool
	}{
		{time.Time{}, t0, false},
		{t0, t0.Add(23 * time.Hour), false},
		{t0, t0.Add(24 * time.Hour), true},
		{t0, t0.Add(48 * time.Hour), true},
	} {
		if got := p.ShouldPause(c.since, c.now); got != c.want {
			t.Errorf("ShouldPause(%v, %v) = %v", c.since, c.now, got)
		}
	}
	if !(Policy{PauseAfter: time.Hour}).ShouldPause(t0, t0.Add(time.Hour)) {
		t.Error("configured PauseAfter ignored")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 5 ", 5 * time.Second, true},
		{"99999999999999999999", time.Duration(1<<63 - 1), true},
		{"Fri, 27 Nov 2026 12:01:00 GMT", time.Minute, true},
		{"Friday, 27-Nov-26 12:01:00 GMT", time.Minute, true},
		{"Fri Nov 27 12:01:00 2026", time.Minute, true},
		{"Thu, 26 Nov 2026 12:00:00 GMT", 0, true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"5s", 0, false},
		{"tomorrow", 0, false},
		{strings.Repeat("9", 65), 0, false},
	} {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseRetryAfter: any value yields a wait that is never negative,
// and a Policy's retry stays within its bounds whatever the endpoint says.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "Fri, 27 Nov 2026 12:01:00 GMT", "-1", "9223372036854775808", "Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v", v, d, ok)
		}
		var p Policy
		dec := p.Decide(now, 1, Attempt{Class: ClassStatus, Status: 429, RetryAfter: v}, now, 0.5)
		if dec.Verdict != Retrying || dec.At.Before(now) || dec.At.After(now.Add(time.Hour)) {
			t.Fatalf("Retry-After %q: %+v", v, dec)
		}
	})
}
