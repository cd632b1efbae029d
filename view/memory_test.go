package view_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/view"
)

// testBudget is the per-evaluation budget of these tests: small, so that
// what a hostile view would allocate without it is hundreds of times more.
const testBudget = 8 << 20

// allocFactor is how many budgets an evaluation may allocate in all, at
// most: 8 for its costly steps, 1 held and its buffers' growth, and room
// for the steps no price sees before the deadline or the watchdog.
const allocFactor = 16

// hostile lists views that allocate hundreds of megabytes to gigabytes in a
// few steps; each must be refused by the price of its costly step, long
// before its deadline (a minute here), having allocated little.
var hostile = []struct {
	name, rule string // rule is a JSON transform rule
	context    string
}{
	{"string repetition", `{"type":"jq","query":"\"x\" * 2e9"}`, `{}`},
	{"repetition of the input", `{"type":"jq","query":".s * 1e7"}`, `{"s":"abcdefghij"}`},
	{"index assignment", `{"type":"jq","query":".[1e8] = 1 | tojson"}`, `[]`},
	{"index update", `{"type":"jq","query":".a[2e7] |= 1"}`, `{"a":[]}`},
	{"index add-update", `{"type":"jq","query":".a[2e7] += 1"}`, `{"a":[]}`},
	{"computed index", `{"type":"jq","query":"(1e4 * 1e4) as $n | .[$n] = 1"}`, `[]`},
	{"setpath", `{"type":"jq","query":"setpath([\"a\", 1e8]; 1)"}`, `{}`},
	{"pick", `{"type":"jq","query":"pick(.[1e8])"}`, `[]`},
	{"fromstream", `{"type":"jq","query":"fromstream([[1e8], 1], [[1e8]])"}`, `null`},
	{"doubling concatenation", `{"type":"jq","query":"reduce range(40) as $i (\"xx\"; . + .) | length"}`, `{}`},
	{"doubling arrays", `{"type":"jq","query":"reduce range(40) as $i ([1]; . + .) | length"}`, `{}`},
	{"repetition chain", `{"type":"jq","query":"(\"x\" * 1e6) as $s | [range(400) | $s * 3] | length"}`, `{}`},
	{"big integers squared", `{"type":"jq","query":"reduce range(40) as $i (100000000000000000000; . * .) | tostring | length"}`, `{}`},
	{"tojson growth", `{"type":"jq","query":"reduce range(60) as $i (\"\\\"\"; tojson) | length"}`, `{}`},
	{"tostring of a shared array", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(1000) | $s] | tostring | length"}`, `{}`},
	{"interpolation of a shared array", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(1000) | $s] | \"\\(.)\" | length"}`, `{}`},
	{"base64 of a shared array", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(1000) | $s] | @base64 | length"}`, `{}`},
	{"html of quotes", `{"type":"jq","query":"(\"<\" * 4000000) | @html | length"}`, `{}`},
	{"join with a long separator", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(2000) | \"\"] | join($s) | length"}`, `{}`},
	{"add of shared strings", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(2000) | $s] | add | length"}`, `{}`},
	{"add(f) of shared strings", `{"type":"jq","query":"(\"x\" * 100000) as $s | add(range(2000) | $s) | length"}`, `{}`},
	{"flatten of a shared tree", `{"type":"jq","query":"reduce range(30) as $i ([1]; [., .]) | flatten | length"}`, `{}`},
	{"transpose of a ragged matrix", `{"type":"jq","query":"[[range(100000)]] + [range(10000) | []] | transpose | length"}`, `{}`},
	{"explode", `{"type":"jq","query":"\"x\" * 1000000 | explode | length"}`, `{}`},
	{"split into characters", `{"type":"jq","query":"\"x\" * 1000000 | split(\"\") | length"}`, `{}`},
	{"string division", `{"type":"jq","query":"(\"x\" * 1000000) / \"\" | length"}`, `{}`},
	{"global match", `{"type":"jq","query":"\"x\" * 1000000 | [match(\"\"; \"g\")] | length"}`, `{}`},
	{"gsub", `{"type":"jq","query":"\"x\" * 1000000 | gsub(\"\"; \"y\") | length"}`, `{}`},
	{"fromjson", `{"type":"jq","query":"(\"[\" + (\"{},\" * 2000000) + \"{}]\") | fromjson | length"}`, `{}`},
	{"caught refusal", `{"type":"jq","query":"[range(100) | try (\"x\" * 1e9) catch 0] | length"}`, `{}`},
	{"repetition inside a closure", `{"type":"jq","query":"[1,2] | sort_by(\"x\" * 1e9) | length"}`, `{}`},
	{"user function around it", `{"type":"jq","query":"def f($n): \"y\" * $n; f(1e9) | length"}`, `{}`},
	// gojq recurses on the goroutine stack along paths and through nested
	// values: one update with a path of millions of steps overflowed the
	// stack and ended the process; repeated updates nested values deeper
	// than any step's path.
	{"update along a long path", `{"type":"jq","query":"(\"\\u0000\" * 100000 | explode) as $p | null | setpath($p; 1) | 1"}`, `{}`},
	{"nesting by repeated setpath", `{"type":"jq","query":"[range(5000) | 0] as $p | reduce range(40) as $i (null; setpath($p; .)) | 1"}`, `{}`},
	{"nesting by repeated assignment", `{"type":"jq","query":"[range(5000) | 0] as $p | reduce range(40) as $i (null; . as $r | getpath($p) = $r) | 1"}`, `{}`},
	{"nesting by repeated update", `{"type":"jq","query":"[range(5000) | 0] as $p | reduce range(40) as $i (null; . as $r | getpath($p) |= $r) | 1"}`, `{}`},
	{"fromstream along a long path", `{"type":"jq","query":"fromstream(([range(20000) | 0] | [., 1]), ([0] | [.])) | 1"}`, `{}`},
	// A sub-array search compares at every offset in one step, which no
	// deadline interrupts: 100,000 × 2,000 comparisons.
	{"sub-array search", `{"type":"jq","query":"indices(.[:2000] + [2]) | length"}`, `[` + strings.Repeat(`1,`, 99999) + `1]`},
	{"array subtraction", `{"type":"jq","query":". - [range(2000) | 2] | length"}`, `[` + strings.Repeat(`1,`, 99999) + `1]`},
	{"contains", `{"type":"jq","query":"(. + [2]) | contains([range(2000) | 2])"}`, `[` + strings.Repeat(`1,`, 99999) + `1]`},
	{"inside", `{"type":"jq","query":"(. + [2]) as $a | [range(2000) | 2] | inside($a)"}`, `[` + strings.Repeat(`1,`, 99999) + `1]`},
	// Builtins that gojq defines in jq use the unpriced originals inside:
	// INDEX encodes each key with tostring, sub concatenates with +.
	{"INDEX by a shared array", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(2000) | $s] as $a | INDEX(range(1); $a) | length"}`, `{}`},
	{"INDEX/1 by a shared array", `{"type":"jq","query":"(\"x\" * 100000) as $s | [range(2000) | $s] as $a | [1] | INDEX($a) | length"}`, `{}`},
	{"gsub with a long replacement", `{"type":"jq","query":"(\"x\" * 2000000) as $s | \"y\" * 2000 | gsub(\"\"; $s) | length"}`, `{}`},
	{"sub with many replacements", `{"type":"jq","query":"(\"x\" * 2000000) as $s | \"y\" | [sub(\"\"; $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s, $s)] | length"}`, `{}`},
	// Builtins that copy their input in one step, in a loop.
	{"case conversion in a loop", `{"type":"jq","query":"(\"x\" * 1000000) as $s | [range(300) | $s | ascii_downcase] | length"}`, `{}`},
	{"sort in a loop", `{"type":"jq","query":"[range(100000)] as $a | [range(300) | $a | sort] | length"}`, `{}`},
	{"to_entries in a loop", `{"type":"jq","query":"([range(20000) | {key: tostring, value: 1}] | from_entries) as $o | [range(300) | $o | to_entries] | length"}`, `{}`},
	{"many rules' outputs", `jq`, `{}`},
	{"many JSONPath rules' outputs", `extract`, ``},
	{"many format rules' outputs", `format`, ``},
	{"template json of a big array", `{"type":"template","template":"{{#each context.a}}{{json ../context.a}}{{/each}}"}`, ``},
}

// hostileHints returns the hints of a hostile case.
func hostileHints(i int) string {
	c := hostile[i]
	// 64 rules of about 900 KiB each: each under the output cap, together
	// far over the budget.
	body := map[string]string{
		"jq":      `"type":"jq","query":"\"x\" * 900000"`,
		"extract": `"type":"extract","value":"$.a[*]"`,
		"format":  `"type":"format","format":"{context.a}"`,
	}[c.rule]
	if body != "" {
		var rules []string
		for r := range 64 {
			rules = append(rules, fmt.Sprintf(`"r%02d":{%s}`, r, body))
		}
		return `{"transform":{` + strings.Join(rules, ",") + `}}`
	}
	return `{"exclude":["secret"],"transform":{"v":` + c.rule + `}}`
}

func hostileContext(i int) string {
	if c := hostile[i].context; c != "" {
		return c
	}
	a := make([]string, 3000)
	for j := range a {
		a[j] = fmt.Sprintf("%q", strings.Repeat("y", 300))
	}
	return `{"a":[` + strings.Join(a, ",") + `]}`
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestHostileViewsAreTooCostly(t *testing.T) {
	opts := view.Options{MaxMemory: testBudget, RuleTimeout: time.Minute, MaxTemplateIterations: 1 << 30, MaxOutputBytes: 1 << 30}
	for i, c := range hostile {
		t.Run(c.name, func(t *testing.T) {
			v := mustCompile(t, hostileHints(i), opts)
			doc := mustDecode(t, hostileContext(i))
			var res view.Result
			start := time.Now()
			alloc := allocated(func() {
				_, res, _ = v.ApplyJSON(context.Background(), []byte(hostileContext(i)), view.Record{})
			})
			_ = doc
			if res.Status != view.StatusFallback || res.Err == nil || res.Err.Code != view.CodeTooCostly {
				t.Fatalf("got %s %v; want FALLBACK %s", res.Status, res.Err, view.CodeTooCostly)
			}
			// The costly steps may spend 8 budgets in all and the output
			// hold one (a growing buffer allocates twice that); the refused
			// step itself allocates nothing. The stated factor is 16.
			if limit := uint64(allocFactor * testBudget); alloc > limit {
				t.Errorf("allocated %d MiB; want at most %d MiB", alloc>>20, limit>>20)
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("took %v: the deadline, not the budget, ended it", time.Since(start))
			}
			t.Logf("%s: %v (%d MiB allocated)", res.Err.Code, res.Err, alloc>>20)
		})
	}
}

// TestPricedViewsKeepTheirResults checks that pricing changes no result:
// the same queries as plain gojq would give, within the budget.
func TestPricedViewsKeepTheirResults(t *testing.T) {
	cases := []struct{ query, context, want string }{
		{`[(1,2) + (10,20)]`, `null`, `[11,12,21,22]`},
		{`[(1,2) * (10,20)]`, `null`, `[10,20,20,40]`},
		{`"ab" * 3`, `null`, `"ababab"`},
		{`"ab" * 0`, `null`, `""`},
		{`{a:{b:1}} * {a:{c:2}}`, `null`, `{"a":{"b":1,"c":2}}`},
		{`"a,b" / ","`, `null`, `["a","b"]`},
		{`[.a = (1,2)]`, `{}`, `[{"a":1},{"a":2}]`},
		{`.[2] = 1`, `[]`, `[null,null,1]`},
		{`.a[1:] = ["x"]`, `{"a":[1,2,3]}`, `{"a":[1,"x"]}`},
		{`.a += 1 | .b -= 1 | .c *= 2 | .d /= 2 | .e //= 5 | .f |= . + "!"`, `{"a":1,"b":1,"c":2,"d":4,"f":"hi"}`, `{"a":2,"b":0,"c":4,"d":2,"e":5,"f":"hi!"}`},
		{`[.[] |= empty]`, `[1,2,3]`, `[[]]`},
		{`to_entries | map(.value += 1) | from_entries`, `{"a":1}`, `{"a":2}`},
		{`[paths]`, `{"a":[1]}`, `[["a"],["a",0]]`},
		{`pick(.a.b)`, `{"a":{"b":1,"c":2}}`, `{"a":{"b":1}}`},
		{`[tostream] | fromstream(.[])`, `{"a":[1,{"b":2}]}`, `{"a":[1,{"b":2}]}`},
		{`setpath(["a",1]; 5)`, `null`, `{"a":[null,5]}`},
		{`tojson, tostring, @json, @text, @html, @uri, @csv, @tsv, @sh, @base64, (@base64 | @base64d)`, `["<a b>","x"]`,
			`["[\"<a b>\",\"x\"]","[\"<a b>\",\"x\"]","[\"<a b>\",\"x\"]","[\"<a b>\",\"x\"]","[&quot;&lt;a b&gt;&quot;,&quot;x&quot;]","%5B%22%3Ca%20b%3E%22%2C%22x%22%5D","\"<a b>\",\"x\"","<a b>\tx","'<a b>' 'x'","WyI8YSBiPiIsIngiXQ==","[\"<a b>\",\"x\"]"]`},
		{`"\(.[0]) and @base64 \(1)"`, `["x"]`, `"x and @base64 1"`},
		{`@base64 "v=\(.[0])"`, `["x"]`, `"v=eA=="`},
		{`explode | implode`, `"héllo"`, `"héllo"`},
		{`fromjson`, `"{\"a\":[1]}"`, `{"a":[1]}`},
		{`add, add(.[]), ([] | add)`, `["a","b"]`, `["ab","ab",null]`},
		{`flatten, flatten(1)`, `[1,[2,[3]]]`, `[[1,2,3],[1,2,[3]]]`},
		{`transpose`, `[[1,2],[3]]`, `[[1,3],[2,null]]`},
		{`join("-"), (join("-") | split("-")), indices(1), index(2), rindex(1)`, `[1,2,1]`, `["1-2-1",["1","2","1"],[0,2],1,2]`},
		{`[match("a";"g").offset], [scan("a")], [splits("b")], sub("a";"x"), gsub("a";"x"), test("b"), capture("(?<n>b)")`, `"abab"`,
			`[[0,2],["a","a"],["a","a",""],"xbab","xbxb",true,{"n":"b"}]`},
		{`1 as $x | 2 as $y | [$x,$y]`, `null`, `[1,2]`},
		{`def _add(a; b): 42; 1 + 2`, `null`, `42`},
		{`def f: reduce .[] as $x (0; . + $x); f`, `[1,2,3]`, `6`},
		{`reduce range(1000) as $i (""; . + "ab") | length`, `null`, `2000`},
		{`[limit(3; repeat(1))], [range(5)], first(range(10;0;-1))`, `null`, `[[1,1,1],[0,1,2,3,4],10]`},
		{`100000000000000000000 * 3`, `null`, `300000000000000000000`},
		{`.a.b.c = 1 | .x[0].y = 2`, `{}`, `{"a":{"b":{"c":1}},"x":[{"y":2}]}`},
		{`strftime("%Y")`, `0`, `"1970"`},
		{`[. - [2], (.[0] - 1), contains([1]), inside([1,2,3,4]), ("foobar" | contains("bar"), inside("xfoobarx"))]`, `[1,2,3]`, `[[1,3],0,true,true,true,true]`},
		{`.a -= 1 | .b |= . - [1] | {a, b, c: ({x: [1, 2]} | contains({x: [2]}))}`, `{"a":5,"b":[1,2]}`, `{"a":4,"b":[2],"c":true}`},
		{`sort, sort_by(-.), group_by(. % 2), unique, unique_by(. % 2), reverse, (map(tostring) | implode? // "x"), keys`, `[3,1,2]`,
			`[[1,2,3],[3,2,1],[[2],[3,1]],[1,2,3],[2,3],[2,1,3],"x",[0,1,2]]`},
		{`to_entries, (to_entries | from_entries), with_entries(.key |= ascii_upcase), [tostream], del(.a), delpaths([["b"]]), (.a | ascii_downcase, ascii_upcase)`, `{"a":"Xy","b":1}`,
			`[[{"key":"a","value":"Xy"},{"key":"b","value":1}],{"a":"Xy","b":1},{"A":"Xy","B":1},[[["a"],"Xy"],[["b"],1],[["b"]]],{"b":1},{"a":"Xy"},"xy","XY"]`},
		{`INDEX(.id), INDEX(.[]; .id | . + 1)`, `[{"id":1},{"id":2}]`, `[{"1":{"id":1},"2":{"id":2}},{"2":{"id":1},"3":{"id":2}}]`},
		{`[sub("(?<x>a)"; "<\(.x)>", "[\(.x)]")], gsub("a"; "b"; "i"), sub("A"; "c"; "gi")`, `"aAa"`, `[["<a>Aa","[a]Aa"],"bbb","ccc"]`},
		{`[range(9000) | 0] as $p | setpath($p; [1]) | getpath($p), (getpath($p[:-1]) | length)`, `null`, `[[1],1]`},
		{`.a |= [.] | .b = [[.a]] | [paths] | length`, `{"a":1}`, `6`},
		{`indices([1,2]), index([1,2]), rindex([1,2]), indices([])`, `[1,2,1,2]`, `[[0,2],0,2,[]]`},
		{`fromstream(([range(50) | 0] | [., 1]), ([0] | [.])) | [paths] | length`, `null`, `50`},
	}
	opts := view.Options{MaxMemory: testBudget, RuleTimeout: time.Minute}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"v": map[string]any{"type": "jq", "query": c.query}}})
			v := mustCompile(t, string(hints), opts)
			out, res, err := v.ApplyJSON(context.Background(), []byte(c.context), view.Record{})
			if err != nil || res.Status != view.StatusOK {
				t.Fatalf("%v %s %v", err, res.Status, res.Err)
			}
			var got struct{ V json.RawMessage }
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got.V, []byte(c.want)) {
				t.Fatalf("got %s; want %s", got.V, c.want)
			}
		})
	}
}

// TestLargeErrorValuesAreNotQuoted: a jq error whose value is large fails
// the rule without encoding the value into the message.
func TestLargeErrorValuesAreNotQuoted(t *testing.T) {
	for q, want := range map[string]string{
		`("x" * 4000000) as $s | error([$s, $s])`: "transform.v: jq: error: an array of more than 1024 bytes",
		`error("y" * 4000000)`:                    "transform.v: jq: error: " + strings.Repeat("y", 1024) + "…",
		`error({a: 1})`:                           `transform.v: jq: error: {"a":1}`,
	} {
		hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"v": map[string]any{"type": "jq", "query": q}}})
		v := mustCompile(t, string(hints), view.Options{MaxMemory: testBudget, RuleTimeout: time.Minute})
		var res view.Result
		alloc := allocated(func() { res = v.Apply(context.Background(), view.Record{Context: map[string]any{}}) })
		if res.Err == nil || res.Err.Code != view.CodeRuleFailed || res.Err.Error() != want {
			t.Errorf("%s: got %v", q, res.Err)
		}
		if alloc > 3*testBudget/2 {
			t.Errorf("%s: allocated %d MiB", q, alloc>>20)
		}
	}
}

func TestReservedNamesRefused(t *testing.T) {
	for _, q := range []string{`$__ctxkit_m`, `__ctxkit_multiply("x"; 1e9)`, `def __ctxkit_x: 1; 2`} {
		hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"v": map[string]any{"type": "jq", "query": q}}})
		_, err := view.Compile(hints)
		var ve *view.Error
		if !errors.As(err, &ve) || ve.Code != view.CodeInvalidJQ || ve.Path != "transform.v.query" {
			t.Errorf("%s: got %v; want %s at transform.v.query", q, err, view.CodeInvalidJQ)
		}
	}
}

// heapObjects samples the heap the way the Budget does.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap samples the heap every millisecond until stop is closed.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if h := heapObjects(); h > peak {
				peak = h
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// TestBudgetStopsGrowthBySmallSteps runs views that grow by many small steps,
// which no price sees, concurrently under a Budget: the watchdog stops them
// with CodeTooCostly, the heap stays near the limit, and a light view run
// meanwhile is not stopped.
func TestBudgetStopsGrowthBySmallSteps(t *testing.T) {
	runtime.GC()
	limit := int64(heapObjects()) + 96<<20
	budget := view.NewBudget(limit)
	opts := view.Options{RuleTimeout: time.Minute, Budget: budget, MaxOutputBytes: 1 << 30}
	queries := []string{
		`[range(1e9)] | length`,
		`[limit(1e9; repeat("ab"))] | length`,
		`[range(1e9) | {a: .}] | length`,
		// Not `reduce … (. + [$i])`: its `+` is priced, and the spending
		// limit may stop it before the watchdog does.
		`[range(1e9) | [., .]] | length`,
	}
	stop := make(chan struct{})
	peak := peakHeap(stop)
	var wg sync.WaitGroup
	var failures atomic.Int32
	for i := range 8 {
		q := queries[i%len(queries)]
		wg.Go(func() {
			hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"v": map[string]any{"type": "jq", "query": q}}})
			res := mustCompile(t, string(hints), opts).Apply(context.Background(), view.Record{Context: map[string]any{}})
			if res.Status != view.StatusFallback || res.Err.Code != view.CodeTooCostly || !errors.Is(res.Err, view.ErrHeapLimit) {
				t.Errorf("%s: got %s %v; want FALLBACK %s", q, res.Status, res.Err, view.CodeTooCostly)
				failures.Add(1)
			}
		})
	}
	light := mustCompile(t, `{"transform":{"n":{"type":"jq","query":".a | length"}}}`, opts)
	for range 20 {
		if res := light.Apply(context.Background(), view.Record{Context: mustDecode(t, `{"a":[1,2,3]}`)}); res.Status != view.StatusOK {
			t.Errorf("a light view: %s %v", res.Status, res.Err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	close(stop)
	p := <-peak
	if budget.Stopped() < 8 {
		t.Errorf("the watchdog stopped %d evaluations; want 8", budget.Stopped())
	}
	if slack := uint64(limit) + 64<<20; p > slack {
		t.Errorf("peak heap %d MiB; want under %d MiB (limit %d MiB + 64 MiB)", p>>20, slack>>20, limit>>20)
	}
	t.Logf("limit %d MiB, peak heap %d MiB", limit>>20, p>>20)
}

// jqGen builds random jq programs from pieces that allocate: constants,
// repetition, concatenation, collection, encodings and path updates.
type jqGen struct{ r *rand.Rand }

func (g jqGen) num() string {
	return []string{"0", "1", "3", "10", "1000", "1e5", "1e6", "1e7", "1e8", "1e9", "2e9", "-1", "0.5"}[g.r.IntN(13)]
}

func (g jqGen) expr(depth int) string {
	if depth <= 0 {
		return []string{`"ab"`, `.`, `[1,2]`, `{a:1}`, g.num(), `.s`, `.a`, `null`}[g.r.IntN(8)]
	}
	a, b := g.expr(depth-1), g.expr(depth-1)
	switch g.r.IntN(20) {
	case 0:
		return "(" + a + ") * " + g.num()
	case 1:
		return "(" + a + ") + (" + b + ")"
	case 2:
		return "[limit(" + g.num() + "; repeat(" + a + "))]"
	case 3:
		return "(" + a + ") | tojson"
	case 4:
		return "(" + a + ") | tostring"
	case 5:
		return "(" + a + ") as $x | [range(" + g.num() + ") | $x]"
	case 6:
		return ".[" + g.num() + "] = (" + a + ")"
	case 7:
		return "setpath([" + g.num() + "]; " + a + ")"
	case 8:
		return "(" + a + ") | @base64"
	case 9:
		return "[(" + a + "), (" + b + ")] | add"
	case 10:
		return "(" + a + ") | try join(" + b + ") catch 0"
	case 11:
		return "reduce range(" + g.num() + ") as $i (" + a + "; . + .)"
	case 12:
		return "(" + a + ") | [.[]?] | flatten"
	case 13:
		return "(" + a + ") | try explode catch 0"
	case 14:
		return `"\(` + a + `)\(` + b + `)"`
	case 15:
		return "(" + a + ") | @html"
	case 16:
		return "[" + a + ", " + b + "] | transpose? // 0"
	case 17:
		return ".a[" + g.num() + "] |= (" + a + ")"
	case 18:
		return "(" + a + ") | try (tostring | split(\"\")) catch 0"
	default:
		return "[(" + a + "), (" + b + ")]"
	}
}

// TestRandomProgramsStayWithinBudget: random jq programs built from
// allocating pieces never allocate more than a stated factor of the
// budget, whatever they compute. The factor is 8 (the costly steps' sum)
// plus room for collection steps and the 50 ms deadline.
func TestRandomProgramsStayWithinBudget(t *testing.T) {
	const factor = allocFactor
	n := 300
	if testing.Short() {
		n = 60
	}
	g := jqGen{rand.New(rand.NewPCG(15, 4))}
	opts := view.Options{MaxMemory: testBudget, RuleTimeout: 50 * time.Millisecond, MaxOutputBytes: 1 << 30}
	for i := range n {
		q := g.expr(1 + g.r.IntN(4))
		hints, _ := json.Marshal(map[string]any{"transform": map[string]any{"v": map[string]any{"type": "jq", "query": q}}})
		v, err := view.CompileWith(hints, opts)
		if err != nil {
			continue
		}
		var res view.Result
		alloc := allocated(func() {
			_, res, _ = v.ApplyJSON(context.Background(), []byte(`{"s":"xyz","a":[1,2,3]}`), view.Record{})
		})
		if alloc > factor*testBudget {
			t.Errorf("program %d allocated %d MiB (budget %d MiB, %s): %s", i, alloc>>20, testBudget>>20, res.Status, q)
		}
	}
}
