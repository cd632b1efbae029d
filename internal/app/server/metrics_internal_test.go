package server

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	metric "github.com/ctxkit/ctxkit/internal/metrics"
)

// TestOwnerReadable: a curator reads series without an owner and its own
// owner's; never another's, nor "other", which sums owners past the label
// bound — not even a curator whose owner is named "other".
func TestOwnerReadable(t *testing.T) {
	l := func(kv ...string) []metric.Label {
		var out []metric.Label
		for i := 0; i < len(kv); i += 2 {
			out = append(out, metric.Label{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		labels []metric.Label
		owner  string
		want   bool
	}{
		{nil, "acme", true},
		{l("route", "GET /health"), "acme", true},
		{l("agent", "a", "owner", "acme"), "acme", true},
		{l("agent", "a", "owner", "globex"), "acme", false},
		{l("agent", "a", "owner", "other"), "acme", false},
		{l("agent", "a", "owner", "other"), "other", false},
		{l("owner", ""), "acme", false},
	} {
		if got := readable(c.labels, c.owner); got != c.want {
			t.Errorf("readable(%v, %q) = %v, want %v", c.labels, c.owner, got, c.want)
		}
	}
}

// TestMetricsExposition: the server's /metrics is the text format a
// scraper reads — its media type, every sample after its family's TYPE,
// families in name order — and holds the runtime and process series.
func TestMetricsExposition(t *testing.T) {
	_, base, key := boundaryServer(t)
	tok, err := Mint(key, Principal{OwnerID: "acme", AgentID: "a", Roles: []string{RoleCurator}}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	get := func() (*http.Response, string) {
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	get()
	resp, body := get()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d %q", resp.StatusCode, ct)
	}
	var family, typ, last string
	for line := range strings.Lines(body) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, tp, _ := strings.Cut(rest, " ")
			if name <= last {
				t.Errorf("family %s after %s", name, last)
			}
			family, typ, last = name, tp, name
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		base := name
		if typ == "histogram" || typ == "summary" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
		}
		if base != family {
			t.Errorf("sample %q is not of the family %s whose TYPE it follows", line, family)
		}
	}
	want := []string{`ctxkit_http_requests_total{method="GET",route="GET /metrics",status="200"} 1`,
		"\ngo_goroutines ", "\ngo_memstats_heap_alloc_bytes ", `go_gc_duration_seconds{quantile="0.5"}`, "\ngo_info{version="}
	if runtime.GOOS == "linux" {
		want = append(want, "\nprocess_cpu_seconds_total ", "\nprocess_resident_memory_bytes ", "\nprocess_open_fds ", "\nprocess_start_time_seconds ")
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
}
