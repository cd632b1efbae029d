package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/testkit/fakeupstream"
	"github.com/ctxkit/ctxkit/internal/testkit/openloop"
)

// BenchmarkOpenLoop puts 'ctxkit serve' and a bare reverse proxy
// (net/http/httputil, nothing else) side by side in front of one fake
// upstream, each a process of its own, and reports what each hop adds to
// a request made straight to the upstream: for every client dialect
// (chat, messages, responses), plain and streamed, at each rate.
//
// Requests start on a fixed schedule and never wait for earlier answers
// (an open loop); a latency counts from the scheduled start, so queueing
// shows. The three paths — direct, bare, ctxkit — are measured in
// interleaved rounds, a short turn each, so a slow moment of the machine
// weighs on all alike. Each dialect goes to an upstream of its own type,
// which is what the bare proxy can serve; ctxkit's client holds a token
// minted by 'ctxkit token', as any agent's does.
//
// Metrics of a cell: ctxkit's added p50 over the bare proxy's added p50
// (x-bare-p50; the goal is ≤ 1.25), the same at p99 (x-bare-p99),
// the added latencies themselves, the direct p50, and the peak resident
// memory (VmHWM) of the ctxkit and bare processes during the cell, with
// their ratio (x-bare-rss). Each cell starts new ctxkit and bare
// processes (on the same data directory), so its figures are its own; the
// summary logged at the end is a table of every cell and each hop's peak
// over the whole run.
//
// Environment (defaults in brackets):
//
//	CTXKIT_OPENLOOP_TIME   measured time per path per cell [1s]
//	CTXKIT_OPENLOOP_ROUND  one path's turn within a round [250ms]
//	CTXKIT_OPENLOOP_RATES  requests per second, comma-separated [100,500,2000]
//
// For figures, give each cell a few seconds and repeat the run; -v shows
// the summary table:
//
//	CTXKIT_OPENLOOP_TIME=3s go test ./cmd/ctxkit -run '^$' -bench OpenLoop -benchtime 1x -count 3 -v
func BenchmarkOpenLoop(b *testing.B) {
	o, rates := openLoopOptions(b)
	dir := b.TempDir()
	bins := openloop.Build(b, dir, "github.com/ctxkit/ctxkit/cmd/ctxkit",
		"github.com/ctxkit/ctxkit/internal/testkit/openloop/bareproxy",
		"github.com/ctxkit/ctxkit/internal/testkit/openloop/upstream")
	ctxkitBin, bareBin, upBin := bins[0], bins[1], bins[2]
	serving := regexp.MustCompile(`serving on (http://127\.0\.0\.1:[0-9]+)`)
	_, m := openloop.Start(b, "upstream", upBin, nil, nil, serving)
	upURL := m[1]

	data := filepath.Join(dir, "data")
	cfgPath := filepath.Join(dir, "gateway.json")
	cfg := fmt.Sprintf(`{"providers":[
		{"name":"oai","type":"openai","base_url":%q,"api_key_env":"CTXKIT_OPENLOOP_KEY","models":["gpt-bench"]},
		{"name":"ant","type":"anthropic","base_url":%q,"api_key_env":"CTXKIT_OPENLOOP_KEY","models":["claude-bench"]},
		{"name":"resp","type":"openai","api":"responses","base_url":%q,"api_key_env":"CTXKIT_OPENLOOP_KEY","models":["resp-bench"]}]}`,
		upURL+"/v1", upURL, upURL+"/v1")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	// The flags name everything; the variables serve would otherwise read
	// are emptied so that a developer's own settings do not leak in.
	env := []string{"CTXKIT_OPENLOOP_KEY=sk-bench", "CTXKIT_DB=", "CTXKIT_KEY_FILE=", "CTXKIT_CONFIG=", "CTXKIT_DATA="}
	// Each cell gets new hop processes, so that its peak RSS is its own and
	// no cell inherits another's heap or backlog; the upstream stays.
	hops := func(b *testing.B) (bare, ctxkit *openloop.Process, bareURL, ctxkitURL string) {
		bare, m := openloop.Start(b, "bareproxy", bareBin, []string{"-target", upURL}, nil, serving)
		ctxkit, n := openloop.Start(b, "ctxkit", ctxkitBin,
			[]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--config", cfgPath}, env, serving)
		return bare, ctxkit, m[1], n[1]
	}
	// The first start makes the signing key the token is minted with.
	firstBare, first, _, _ := hops(b)
	firstBare.Stop()
	out, err := exec.Command(ctxkitBin, "token", "--data", data, "--owner", "bench", "--agent", "loadgen", "--roles", "subscriber").Output()
	if err != nil {
		b.Fatalf("ctxkit token: %v", err)
	}
	tok := strings.TrimSpace(string(out))
	first.Stop() // it holds the database's lock

	var rows []openLoopRow
	for _, d := range fakeupstream.Clients {
		for _, stream := range []bool{false, true} {
			mode := "plain"
			if stream {
				mode = "stream"
			}
			body := []byte(d.Body(stream))
			viaCtxkit := d.Header.Clone()
			if d.Name == "messages" {
				viaCtxkit.Set("X-Api-Key", tok)
			} else {
				viaCtxkit.Set("Authorization", "Bearer "+tok)
			}
			for _, rate := range rates {
				name := fmt.Sprintf("%s/%s/%drps", d.Name, mode, rate)
				b.Run(name, func(b *testing.B) {
					bare, ctxkit, bareURL, ctxkitURL := hops(b)
					defer ctxkit.Stop()
					targets := []openloop.Target{
						openLoopTarget("direct", upURL+d.Path, d.Header, body),
						openLoopTarget("bare", bareURL+d.Path, d.Header, body),
						openLoopTarget("ctxkit", ctxkitURL+d.Path, viaCtxkit, body),
					}
					o := o
					o.Rate = rate
					var (
						lat  [3][]time.Duration
						shed [3]int
					)
					for b.Loop() {
						for i, r := range openloop.Rounds(b.Context(), targets, o, nil) {
							if r.Errors > 0 {
								b.Errorf("%d of %d requests failed; the first: %v", r.Errors, r.Sent, r.Err)
							}
							lat[i] = append(lat[i], r.Latencies...)
							shed[i] += r.Shed
						}
					}
					row := openLoopRow{name: name, shed: shed}
					for i := range lat {
						if len(lat[i]) == 0 {
							b.Fatalf("no request of %s was answered", targets[i].Name)
						}
						row.p50[i] = openloop.Quantile(lat[i], 0.5)
						row.p99[i] = openloop.Quantile(lat[i], 0.99)
					}
					var errB, errC error
					row.rssBare, errB = bare.PeakRSS()
					row.rssCtxkit, errC = ctxkit.PeakRSS()
					if errB != nil || errC != nil {
						row.rssBare, row.rssCtxkit = 0, 0
						b.Logf("peak RSS not measured (it needs Linux's /proc): %v", errors.Join(errB, errC))
					}
					row.report(b)
					rows = append(rows, row)
				})
			}
		}
	}
	if len(rows) > 0 {
		b.Log("\n" + openLoopTable(rows))
	}
}

// openLoopOptions reads the benchmark's environment; a value it cannot
// use stops the benchmark with the variable's name.
func openLoopOptions(b *testing.B) (openloop.Options, []int) {
	o := openloop.Options{Total: time.Second, Round: 250 * time.Millisecond}
	for name, into := range map[string]*time.Duration{"CTXKIT_OPENLOOP_TIME": &o.Total, "CTXKIT_OPENLOOP_ROUND": &o.Round} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Hour {
			b.Fatalf("%s=%q: want a duration between 0 and 1h, as in 3s", name, v)
		}
		*into = d
	}
	rates := []int{100, 500, 2000}
	if v := os.Getenv("CTXKIT_OPENLOOP_RATES"); v != "" {
		rates = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 || n > 100000 || len(rates) == 16 {
				b.Fatalf("CTXKIT_OPENLOOP_RATES=%q: want up to 16 comma-separated rates, each 1 to 100000 requests/s", v)
			}
			rates = append(rates, n)
		}
	}
	return o, rates
}

// openLoopTarget sends body to url with header, and takes an answer as
// right when it is a 200 that holds the canned text (one of its words is
// enough: a stream splits the text into events).
func openLoopTarget(name, url string, header http.Header, body []byte) openloop.Target {
	client := &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true},
		Timeout:   30 * time.Second,
	}
	return openloop.Target{Name: name, Send: func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header = header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(got, []byte("overloaded")) {
			return fmt.Errorf("%w: %.200s", openloop.ErrShed, got)
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("benchmark")) {
			return fmt.Errorf("%d %.300s", resp.StatusCode, got)
		}
		return nil
	}}
}

// openLoopRow is one cell's figures: p50 and p99 of direct, bare and
// ctxkit, and the peak RSS of the two hops (0: not measured).
type openLoopRow struct {
	name               string
	p50, p99           [3]time.Duration
	rssBare, rssCtxkit int64
	shed               [3]int // requests refused as overloaded
}

func (r openLoopRow) added(p [3]time.Duration, i int) time.Duration { return p[i] - p[0] }

func (r openLoopRow) report(b *testing.B) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(0, "ns/op") // one op is a whole run of rounds: meaningless
	b.ReportMetric(us(r.p50[0]), "direct-p50-µs")
	b.ReportMetric(us(r.added(r.p50, 1)), "bare-added-p50-µs")
	b.ReportMetric(us(r.added(r.p50, 2)), "ctxkit-added-p50-µs")
	b.ReportMetric(ratio(r.added(r.p50, 2), r.added(r.p50, 1)), "x-bare-p50")
	b.ReportMetric(us(r.added(r.p99, 1)), "bare-added-p99-µs")
	b.ReportMetric(us(r.added(r.p99, 2)), "ctxkit-added-p99-µs")
	b.ReportMetric(ratio(r.added(r.p99, 2), r.added(r.p99, 1)), "x-bare-p99")
	// A hop that sheds load (ctxkit answers 503 past its in-flight
	// bound) has its latencies from the requests it served: say so.
	b.ReportMetric(float64(r.shed[1]), "bare-shed")
	b.ReportMetric(float64(r.shed[2]), "ctxkit-shed")
	if r.rssBare > 0 {
		b.ReportMetric(mib(r.rssBare), "bare-rss-MiB")
		b.ReportMetric(mib(r.rssCtxkit), "ctxkit-rss-MiB")
		b.ReportMetric(float64(r.rssCtxkit)/float64(r.rssBare), "x-bare-rss")
	}
}

// ratio is a/b; a hop that adds nothing measurable (b ≤ 0, which the
// noise of a busy machine can make happen) gives no ratio: 0.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// openLoopTable sets the rows out as a Markdown table, with each hop's
// peak over the whole run below it.
func openLoopTable(rows []openLoopRow) string {
	var sb strings.Builder
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	sb.WriteString("| cell | direct p50 µs | bare +p50 µs | ctxkit +p50 µs | x-bare-p50 | bare +p99 µs | ctxkit +p99 µs | x-bare-p99 | bare RSS MiB | ctxkit RSS MiB | x-bare-rss | shed bare/ctxkit |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var peakBare, peakCtxkit int64
	for _, r := range rows {
		peakBare, peakCtxkit = max(peakBare, r.rssBare), max(peakCtxkit, r.rssCtxkit)
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %.2f | %s | %s | %.2f | %.1f | %.1f | %.2f | %d/%d |\n", r.name,
			us(r.p50[0]), us(r.added(r.p50, 1)), us(r.added(r.p50, 2)), ratio(r.added(r.p50, 2), r.added(r.p50, 1)),
			us(r.added(r.p99, 1)), us(r.added(r.p99, 2)), ratio(r.added(r.p99, 2), r.added(r.p99, 1)),
			mib(r.rssBare), mib(r.rssCtxkit), float64(r.rssCtxkit)/float64(max(r.rssBare, 1)), r.shed[1], r.shed[2])
	}
	if peakBare > 0 {
		fmt.Fprintf(&sb, "peak RSS over the run: bare %.1f MiB, ctxkit %.1f MiB (%.2f×)\n", mib(peakBare), mib(peakCtxkit), float64(peakCtxkit)/float64(peakBare))
	}
	return sb.String()
}
