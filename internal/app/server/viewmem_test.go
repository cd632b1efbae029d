package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/server"
)

// hostilePreviews are views that allocate gigabytes: some in one step
// (refused by their price), some by many small steps (stopped by the heap
// watchdog).
var hostilePreviews = []string{
	`"x" * 2e9`,
	`.a[1e8] = 1 | tojson`,
	`[range(1e9)] | length`,
	`reduce range(30) as $i ([1]; [., .]) | flatten | length`,
	`[limit(1e9; repeat("ab"))] | length`,
	`("x" * 100000) as $s | [range(5000) | $s] | add | length`,
	`[range(1e9) | {a: .}] | length`,
	`reduce range(40) as $i ("xy"; . + .) | length`,
	// Steps that copy a value near the budget, each in one go: the heap
	// grows by up to a budget per running view before the watchdog's stop
	// is seen.
	`("x" * 7000000) as $s | [range(1e9) | $s | ascii_downcase] | length`,
	`("x" * 7000000) as $s | [range(1e9) | $s | ascii_upcase] | length`,
	`([range(100000) | {key: tostring, value: 1}] | from_entries) as $o | [range(1e9) | $o | setpath(["x"]; 1)] | length`,
	`([range(400000)]) as $a | [range(1e9) | $a | reverse] | length`,
	`([range(400000)]) as $a | [range(1e9) | $a | sort] | length`,
	`([range(400000) | tostring]) as $a | [range(1e9) | $a | map(.)] | length`,
	`([range(100000) | {key: tostring, value: 1}] | from_entries) as $o | [range(1e9) | $o | keys] | length`,
}

// heapBytes is the heap as the Budget sees it.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rssBytes is the process's resident set, from /proc (0 where there is none).
func rssBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// postJSON sends a JSON request without failing the test from a goroutine.
func postJSON(url, token string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

func jqHints(query string) map[string]any {
	return map[string]any{"exclude": []string{"secret"}, "transform": map[string]any{"v": map[string]any{"type": "jq", "query": query}}}
}

// TestHostileViewsCannotTakeTheHeap runs 8 hostile previews at once on a
// server whose view memory is 256 MiB: each is answered 422
// view_too_costly, the heap stays under the bound, other requests are
// served meanwhile, a stored breadcrumb with hostile hints reads as its
// FALLBACK with the reason, and the memory is returned afterwards.
func TestHostileViewsCannotTakeTheHeap(t *testing.T) {
	const bound = 256 << 20
	e := newEnv(t, func(o *server.Options) {
		o.ViewMemory = bound
		o.MaxConcurrentViews = 8
		o.RuleTimeout = time.Minute // the budget, not the deadline, must end them
	})
	tok := e.token("acme", "a", server.RoleEmitter, server.RoleSubscriber)
	stored := e.create(tok, map[string]any{"title": "t", "context": map[string]any{"public": 1, "secret": "sk"},
		"llm_hints": jqHints(`"x" * 2e9`)})
	plain := e.create(tok, map[string]any{"title": "plain", "context": map[string]any{"n": 1}})

	runtime.GC()
	heapBefore, rssBefore := heapBytes(), rssBytes()
	var (
		peakHeap, peakRSS uint64
		stop              = make(chan struct{})
		sampled           = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peakHeap = max(peakHeap, heapBytes())
			peakRSS = max(peakRSS, rssBytes())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	var wg sync.WaitGroup
	for _, q := range hostilePreviews {
		wg.Go(func() {
			start := time.Now()
			defer func() { t.Logf("%s: %v", q, time.Since(start)) }()
			status, body, err := postJSON(e.url+"/views/preview", tok, map[string]any{"llm_hints": jqHints(q), "context": map[string]any{"secret": "sk"}})
			// The heap bound stops these views; on a machine slow enough
			// (the race detector on a loaded CI runner: one took 76 s) a
			// view's deadline can come first, which ends it as surely.
			costly := status == http.StatusUnprocessableEntity && strings.Contains(string(body), `"code":"view_too_costly"`)
			late := status == http.StatusOK && strings.Contains(string(body), `"error_code":"rule_timeout"`)
			if err != nil || !(costly || late) {
				t.Errorf("preview %s: %d %s %v; want 422 view_too_costly (or a rule_timeout fallback)", q, status, body, err)
			}
		})
	}
	// Meanwhile other requests are served: a health check, a light view,
	// a record without a view, and the stored hostile record's fallback.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	served := 0
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
		}
		want(t, e.do("GET", "/health", "", nil), 200, `"ok"`)
		want(t, e.do("POST", "/views/preview", tok, map[string]any{"llm_hints": jqHints(".n + 1"), "context": map[string]any{"n": 1}}), 200, `"v":2`)
		want(t, e.do("GET", "/breadcrumbs/"+plain, tok, nil), 200, `"n":1`)
		r := e.do("GET", "/breadcrumbs/"+stored, tok, nil)
		want(t, r, 200, `"status":"FALLBACK"`)
		if !strings.Contains(string(r.body), `"error_code":"view_too_costly"`) || !strings.Contains(string(r.body), `"public":1`) || strings.Contains(string(r.body), "sk") {
			t.Fatalf("the stored hostile view is not its filtered fallback with the reason: %s", r.body)
		}
		served++
		time.Sleep(10 * time.Millisecond)
	}
	// The memory is returned once the views have ended.
	deadline := time.Now().Add(5 * time.Second)
	for rssBytes() > rssBefore+64<<20 && !raceEnabled && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-sampled
	runtime.GC()
	heapAfter, rssAfter := heapBytes(), rssBytes()
	t.Logf("heap: %d MiB before, %d MiB peak, %d MiB after; RSS: %d MiB before, %d MiB peak, %d MiB after; %d rounds of other requests served",
		heapBefore>>20, peakHeap>>20, heapAfter>>20, rssBefore>>20, peakRSS>>20, rssAfter>>20, served)
	// Under the race detector every step runs several times slower, and
	// so does the stop the watchdog sends: the views in progress overshoot
	// the bound by up to a fifth before they see it (peaks of 267–277 MiB
	// were measured); without it the bound holds as it is.
	// Without it, on a loaded machine, the stop still takes a moment to be
	// seen: a peak of 259 MiB was measured with the whole package's tests
	// running beside this one, so a twentieth is allowed.
	limit := uint64(bound) + bound/20
	if raceEnabled {
		limit = bound + bound/5
	}
	if peakHeap > limit {
		t.Errorf("the heap reached %d MiB; the bound is %d MiB (%d MiB allowed)", peakHeap>>20, bound>>20, limit>>20)
	}
	if heapAfter > heapBefore+32<<20 {
		t.Errorf("the heap stayed at %d MiB after the views ended (%d MiB before)", heapAfter>>20, heapBefore>>20)
	}
	if rssAfter > rssBefore+64<<20 && !raceEnabled {
		t.Errorf("RSS stayed at %d MiB after the views ended (%d MiB before)", rssAfter>>20, rssBefore>>20)
	}
	if served == 0 {
		t.Error("no other request was served while the hostile views ran")
	}
}

// TestViewMemoryDefault: a server without ViewMemory bounds views at
// 1 GiB and still refuses a step of gigabytes.
func TestViewMemoryDefault(t *testing.T) {
	if server.DefaultViewMemory != 1<<30 {
		t.Fatalf("default view memory %d", server.DefaultViewMemory)
	}
	e := newEnv(t)
	tok := e.token("acme", "a", server.RoleSubscriber)
	r := e.do("POST", "/views/preview", tok, map[string]any{"llm_hints": jqHints(`"x" * 2e9`), "context": map[string]any{}})
	want(t, r, 422, `"code":"view_too_costly"`)
	want(t, r, 422, "llm_hints.transform.v: * would allocate about 1.9 GiB")
}
