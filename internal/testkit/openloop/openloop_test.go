package openloop_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/openloop"
)

// TestMain lets the test binary play a program under test: with
// OPENLOOP_TEST_ROLE=ready it says it is ready and waits for the end of
// its standard input, as the benchmarks' programs do.
func TestMain(m *testing.M) {
	if os.Getenv("OPENLOOP_TEST_ROLE") == "ready" {
		fmt.Println("warming up")
		fmt.Println("ready on http://127.0.0.1:1")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestScheduleIsOpen: every request of the schedule starts, each with its
// own scheduled time, even though every answer takes far longer than the
// interval between starts: nothing waits for an answer.
func TestScheduleIsOpen(t *testing.T) {
	const rate, dur, answer = 200, 200 * time.Millisecond, 300 * time.Millisecond
	var (
		mu  sync.Mutex
		ats = map[int]time.Time{}
	)
	t0 := time.Now()
	openloop.Schedule(context.Background(), rate, dur, func(i int, at time.Time) {
		mu.Lock()
		ats[i] = at
		mu.Unlock()
		time.Sleep(answer)
	})
	took := time.Since(t0)
	if len(ats) != 40 {
		t.Fatalf("%d requests started, want 40 (200/s for 200ms)", len(ats))
	}
	// Closed, it would take 40 × 300ms = 12s.
	if took > 3*time.Second {
		t.Fatalf("the schedule took %s: it waited for answers", took)
	}
	if took < answer {
		t.Fatalf("Schedule returned after %s, before its calls had", took)
	}
	for i := 1; i < 40; i++ {
		if gap := ats[i].Sub(ats[i-1]); gap < 4*time.Millisecond || gap > 6*time.Millisecond {
			t.Fatalf("scheduled times %d and %d are %s apart, want 5ms", i-1, i, gap)
		}
	}
}

func TestScheduleEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n := 0
	var mu sync.Mutex
	t0 := time.Now()
	openloop.Schedule(ctx, 100, time.Hour, func(int, time.Time) { mu.Lock(); n++; mu.Unlock() })
	if took := time.Since(t0); took > 5*time.Second || n == 0 || n > 100 {
		t.Fatalf("%d calls in %s: want a few, then the end with the context", n, took)
	}
	openloop.Schedule(context.Background(), 0, time.Second, func(int, time.Time) { t.Fatal("rate 0 called fire") })
}

// TestRoundsInterleave: the targets take turns, one at a time, the first
// of a round turning; each is measured for Total at Rate; failures and
// shed requests are counted apart and kept out of the latencies.
func TestRoundsInterleave(t *testing.T) {
	var (
		mu    sync.Mutex
		turns []string // one entry per run of sends to one target
		busy  = map[string]int{}
	)
	send := func(name string, fail error) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			for other, n := range busy {
				if other != name && n > 0 {
					mu.Unlock()
					return fmt.Errorf("%s sent while %s had %d requests out", name, other, n)
				}
			}
			busy[name]++
			if len(turns) == 0 || turns[len(turns)-1] != name {
				turns = append(turns, name)
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			busy[name]--
			mu.Unlock()
			return fail
		}
	}
	var shedEvery, failEvery int
	targets := []openloop.Target{
		{Name: "a", Send: send("a", nil)},
		{Name: "b", Send: func(ctx context.Context) error {
			err := send("b", nil)(ctx)
			mu.Lock()
			defer mu.Unlock()
			if shedEvery++; err == nil && shedEvery%2 == 0 {
				return fmt.Errorf("503: %w", openloop.ErrShed)
			}
			return err
		}},
		{Name: "c", Send: func(ctx context.Context) error {
			err := send("c", nil)(ctx)
			mu.Lock()
			defer mu.Unlock()
			if failEvery++; err == nil && failEvery%5 == 0 {
				return errors.New("wrong answer")
			}
			return err
		}},
	}
	var before []int
	res := openloop.Rounds(context.Background(), targets, openloop.Options{Rate: 100, Total: 100 * time.Millisecond, Round: 50 * time.Millisecond},
		func(i int) { before = append(before, i) })
	// A warm-up turn each (0 1 2), then round 0 (0 1 2) and round 1 (1 2 0).
	if want := "a b c a b c b c a"; strings.Join(turns, " ") != want {
		t.Fatalf("turns %v, want %s", turns, want)
	}
	if fmt.Sprint(before) != "[0 1 2 0 1 2 1 2 0]" {
		t.Fatalf("before was called for %v", before)
	}
	for i, r := range res {
		if r.Name != targets[i].Name || r.Sent != 10 || r.Shed+r.Errors+len(r.Latencies) != 10 {
			t.Fatalf("%s: sent %d, shed %d, failed %d, %d latencies; want 10 sent, all accounted for", r.Name, r.Sent, r.Shed, r.Errors, len(r.Latencies))
		}
		for _, l := range r.Latencies {
			if l < 2*time.Millisecond {
				t.Fatalf("%s: a latency of %s, less than the answer took", r.Name, l)
			}
		}
	}
	if res[0].Errors != 0 || res[0].Shed != 0 || res[1].Shed != 5 || res[1].Errors != 0 || res[2].Errors != 2 || res[2].Shed != 0 {
		t.Fatalf("shed/failed: a %d/%d, b %d/%d, c %d/%d; want 0/0, 5/0, 0/2",
			res[0].Shed, res[0].Errors, res[1].Shed, res[1].Errors, res[2].Shed, res[2].Errors)
	}
	if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "c: wrong answer") {
		t.Fatalf("the first failure: %v", res[2].Err)
	}
}

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		d    []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(5, 1, 3, 2, 4), 0.5, 3 * time.Millisecond},
		{ms(5, 1, 3, 2, 4), 0, time.Millisecond},
		{ms(5, 1, 3, 2, 4), 1, 5 * time.Millisecond},
		{ms(5, 1, 3, 2, 4), 2, 5 * time.Millisecond},
		{ms(4, 1, 3, 2), 0.5, 3 * time.Millisecond}, // rank round(1.5) = 2
	} {
		in := fmt.Sprint(c.d)
		if got := openloop.Quantile(c.d, c.q); got != c.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.d, c.q, got, c.want)
		}
		if fmt.Sprint(c.d) != in {
			t.Errorf("Quantile reordered its input: %v", c.d)
		}
	}
}

func TestParseVmHWM(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  string
	}{
		{"Name:\tctxkit\nVmPeak:\t 1000 kB\nVmHWM:\t   30184 kB\nVmRSS:\t 30000 kB\n", 30184 << 10, ""},
		{"VmHWM: 0 kB", 0, ""},
		{"Name:\tx\n", 0, "no VmHWM line"},
		{"VmHWM:\t12 MB\n", 0, "want a number of kB"},
		{"VmHWM:\t-12 kB\n", 0, "want a number of kB"},
		{"VmHWM:\t99999999999999999999 kB\n", 0, "want a number of kB"},
		{"VmHWM:\n", 0, "want a number of kB"},
		{strings.Repeat("x", 70000), 0, "more than"},
	} {
		got, err := openloop.ParseVmHWM([]byte(c.in))
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("ParseVmHWM(%.40q) = %d, %v; want %d", c.in, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseVmHWM(%.40q) = %d, %v; want an error saying %q", c.in, got, err, c.err)
		}
	}
}

func FuzzParseVmHWM(f *testing.F) {
	f.Add([]byte("Name:\tctxkit\nVmHWM:\t   30184 kB\nVmRSS:\t 30000 kB\n"))
	f.Add([]byte("VmHWM: 1 kB"))
	f.Add([]byte("VmHWM:\t1 2 kB\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := openloop.ParseVmHWM(b)
		if err == nil && (n < 0 || n%1024 != 0) {
			t.Fatalf("%d bytes from %q: not a whole number of kB", n, b)
		}
		if err != nil && n != 0 {
			t.Fatalf("%d with the error %v", n, err)
		}
	})
}

// TestStartStop: Start returns once the program has said it is ready,
// with the line's submatches, skipping what it printed before; the peak
// RSS is the program's; Stop ends it.
func TestStartStop(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, m := openloop.Start(t, "ready", exe, []string{"-test.run=^$"}, []string{"OPENLOOP_TEST_ROLE=ready"},
		regexp.MustCompile(`ready on (http://\S+)`))
	if len(m) != 2 || m[1] != "http://127.0.0.1:1" {
		t.Fatalf("submatches %q", m)
	}
	if runtime.GOOS == "linux" {
		n, err := p.PeakRSS()
		if err != nil || n < 1<<20 || n > 1<<30 {
			t.Fatalf("peak RSS %d, %v: want a Go program's few MiB", n, err)
		}
	}
	done := make(chan struct{})
	go func() { p.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not end the program")
	}
	if _, err := p.PeakRSS(); err == nil && runtime.GOOS == "linux" {
		t.Fatal("the peak RSS of a program that has exited was read")
	}
}
