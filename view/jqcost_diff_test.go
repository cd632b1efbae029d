package view

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/itchyny/gojq"
)

// TestPricedJQMatchesGojq runs common view queries both plainly and
// priced, under a budget they stay well within, and requires the same
// outputs in the same order, up to the same first error.
func TestPricedJQMatchesGojq(t *testing.T) {
	inputs := []string{
		`{"title":"T","n":3,"items":[{"id":1,"name":"a","tags":["x","y"],"n":2.5},{"id":2,"name":"b","tags":[],"n":-1}],"s":"Hello, World","o":{"b":2,"a":1,"c":{"d":[1,2,{"e":null}]}}}`,
		`[3,1,2,"a",null,true,{"k":"v"},[1,[2]]]`,
		`"a,b,,c"`,
		`null`,
	}
	queries := []string{
		`.`, `.items[].name`, `[.items[] | select(.n > 0)]`, `.items | map(.id)`, `.items | length`,
		`keys`, `to_entries`, `with_entries(.value |= tostring)`, `from_entries?`, `paths`, `[paths(type == "number")]`,
		`[leaf_paths]`, `[..]`, `tostream`, `[tostream] | fromstream(.[])`, `walk(if type == "number" then . + 1 else . end)`,
		`.items | sort_by(.n)`, `.items | group_by(.tags | length)`, `.items | unique_by(.name)`, `.items | min_by(.n), max_by(.n)`,
		`[.[]?] | add`, `add?`, `.n + 1, .n - 1, .n * 2, .n / 2, .n % 2`, `.s + "!"`, `.s * 2`, `.s / ", "`, `.o * {"c":{"x":1}}`,
		`.o + {"z":0}`, `[.items[].tags] | add`, `.items[0].tags += ["z"]`, `.items[].n |= . * 10`, `.o.c.d[5] = 1`, `del(.items[0])`,
		`delpaths([["o","a"]])`, `getpath(["o","c","d",2])`, `setpath(["x","y"]; 1)`, `pick(.o.c.d[1])`, `.. |= (if type == "string" then ascii_upcase else . end)`,
		`tojson`, `tostring`, `[.[]?|tostring]`, `@json, @text, @html, @uri, @base64, @sh?`, `@csv?, @tsv?`, `"n=\(.n?) t=\(.title?)"`, `@base64 "x\(.)"`,
		`.s | test("world"; "i"), [match("o"; "g").offset], sub("o"; "0"), gsub("(?<l>[A-Z])"; "<\(.l)>"), ascii_downcase, explode[0:3], ltrimstr("Hello"), split(", "), [splits(", *")]`,
		`split(",")?`, `join("-")?`, `flatten?`, `[limit(3; .[]?)]`, `first(.[]?), last(.[]?)?`, `[range(0; 10; 3)]`, `reduce .items[]? as $i (0; . + $i.n)`,
		`[foreach range(5) as $i (0; . + $i; [$i, .])]`, `[.[]? | numbers]`, `indices(1)?`, `index("a")?, rindex("a")?`, `inside({"n":3,"x":1})?`, `contains({"n":3})?`,
		`any(.[]?; . == 1), all(.[]?; . != 7)`, `[combinations(2)] | length?`, `INDEX(.items[]?; .id)`, `IN(.n?; 3, 4)`, `label $f | .[]? | if . == 2 then break $f else . end`,
		`try error("x") catch ., (.a?.b?.c?), (.n? // "d")`, `[.[]? | strings]`, `$__loc__`, `input_line_number?`, `splits("a")?`, `implode?`, `ascii?`,
		`getpath(["a","b"])`, `[paths] | length`, `to_entries? | map(.key) | join(",")`, `transpose?`, `tojson | fromjson`, `. as [$a, $b] | [$b, $a]`, `. as {title: $t} ?// [$t] | $t`,
		`def f(x): x * 2; f(.n?)`, `def fac: if . <= 1 then 1 else . * (. - 1 | fac) end; 10 | fac`, `[recurse(if . < 3 then . + 1 else empty end)] | length? // 0`,
		`{(.title?//"t"): 1, b: [.n?]}`, `[.[]?] | sort`, `(.n? // 0) as $n | [range($n)] | map(. * $n)`, `ltrimstr("a")`, `@text "\(1 + 2)"`, `"\([1,2])"`,
		`.[1e3]? = 1 | length`, `[.[]?] | .[2:4] = ["x"]`, `(.items? // []) | .[-1:] |= map(.id)`, `limit(2; repeat(1))`, `[splits(", ")?]`, `significand?, (3 | pow(.; 2)), (10 | log10)`,
	}
	for _, in := range inputs {
		doc, err := DecodeJSON([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range queries {
			run := func(priced bool) (out []any, compileErr error) {
				q, err := gojq.Parse(src)
				if err != nil {
					t.Fatalf("%s: %v", src, err)
				}
				var code *gojq.Code
				if priced {
					code, err = compilePriced(q)
				} else {
					code, err = gojq.Compile(q)
				}
				if err != nil {
					return nil, err
				}
				m := newMeter(context.Background(), defaultMaxMemory)
				defer m.done()
				var it gojq.Iter
				if priced {
					it = code.RunWithContext(m.ctx, doc, m)
				} else {
					it = code.RunWithContext(m.ctx, doc)
				}
				for range 1000 {
					v, ok := it.Next()
					if !ok {
						break
					}
					if err, isErr := v.(error); isErr {
						// A rule ends at its first error.
						return append(out, fmt.Sprintf("error: %v", err)), nil
					}
					out = append(out, v)
				}
				return out, nil
			}
			plain, perr := run(false)
			priced, qerr := run(true)
			if (perr == nil) != (qerr == nil) {
				t.Errorf("%s: compiles plainly: %v; priced: %v", src, perr, qerr)
				continue
			}
			if !reflect.DeepEqual(plain, priced) {
				// An assignment to a path the input cannot have fails in
				// both, but the priced one fails while listing the paths,
				// before gojq's setpath can name the path in its message.
				if n := len(plain); n > 0 && n == len(priced) && isErrorText(plain[n-1]) && isErrorText(priced[n-1]) &&
					reflect.DeepEqual(plain[:n-1], priced[:n-1]) {
					t.Logf("%s on %s: same outputs, different error text:\nplain  %v\npriced %v", src, in, plain[n-1], priced[n-1])
					continue
				}
				t.Errorf("%s on %s:\nplain  %v\npriced %v", src, in, plain, priced)
			}
		}
	}
}

func isErrorText(v any) bool {
	s, ok := v.(string)
	return ok && len(s) > 7 && s[:7] == "error: "
}

// TestBudgetLeavesRoomForStepsInProgress: the watchdog acts below the
// limit by what the running evaluations' steps in progress may still
// allocate, so that the heap stays under the limit while they finish them.
func TestBudgetLeavesRoomForStepsInProgress(t *testing.T) {
	const limit = 1 << 30
	for _, c := range []struct {
		views int
		each  int64
		want  uint64
	}{
		{1, 1 << 20, limit - limit/8},    // at least an eighth for the rest
		{8, 32 << 20, limit - 256<<20},   // eight steps of a budget each
		{100, 64 << 20, limit - limit/2}, // at most half
	} {
		b := NewBudget(limit)
		for range c.views {
			b.running[newMeter(context.Background(), c.each)] = struct{}{}
		}
		if got := b.threshold(); got != c.want {
			t.Errorf("%d views of %d MiB: the watchdog acts above %d MiB; want %d MiB", c.views, c.each>>20, got>>20, c.want>>20)
		}
	}
}

// TestCheapOperationsAreNotPriced: arithmetic with a number literal runs
// as plain gojq, while every operation that could grow with its operands
// is still rewritten into a priced call.
func TestCheapOperationsAreNotPriced(t *testing.T) {
	for src, priced := range map[string]bool{
		`.n + 1`: false, `1 + .n`: false, `length - 1`: false, `. / 100`: false, `2 * 3`: false,
		`. + .`: true, `. + "x"`: true, `"x" * 2`: true, `. * 2`: true, `. - .`: true, `"a,b" / ","`: true, `(1 + 2) * .`: true,
	} {
		q, err := gojq.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		rewriteOperators(reflect.ValueOf(q), true)
		if got := q.Term != nil && q.Term.Type == gojq.TermTypeFunc; got != priced {
			t.Errorf("%s: rewritten into a priced call: %v; want %v", src, got, priced)
		}
	}
}
