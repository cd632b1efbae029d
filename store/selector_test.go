package store_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/theory/jsonpath"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

func TestParseSelectorErrors(t *testing.T) {
	long := strings.Repeat("x", store.MaxTagBytes+1)
	for _, c := range []struct{ src, code, msg string }{
		{`[]`, "invalid", "a selector is a JSON object"},
		{`{"colour":"red"}`, "invalid", "colour: unknown member"},
		{`{"any_tags":"a"}`, "invalid", "any_tags: must be an array"},
		{`{"all_tags":["a",1]}`, "invalid", "all_tags[1]: must be a string"},
		{`{"all_tags":["` + long + `"]}`, "invalid", "all_tags[0]: tag of 129 bytes"},
		{`{"any_tags":[""]}`, "invalid", "any_tags[0]: empty tag"},
		{`{"schema_name":"a*b"}`, "invalid", "schema_name: "},
		{`{"schema_name":"*"}`, "invalid", "schema_name: "},
		{`{"schema_name":3}`, "invalid", "schema_name: must be a string"},
		{`{"kinds":["created","renamed"]}`, "invalid", `kinds[1]: "renamed" is not an event kind`},
		{`{"kinds":["created","updated","deleted","expired","created"]}`, "invalid", "kinds: more than 4"},
		{`{"context_match":{}}`, "invalid", "context_match: must be an array"},
		{`{"context_match":[{"path":"$.a","op":"eq","value":1},{"path":"$.a","op":"like","value":1}]}`, "invalid", `context_match[1].op: "like" is not an operator`},
		{`{"context_match":[{"path":"$.a","value":1}]}`, "invalid", "context_match[0].op: missing"},
		{`{"context_match":[{"op":"eq","value":1}]}`, "invalid", "context_match[0].path: missing"},
		{`{"context_match":[{"path":"$[","op":"eq","value":1}]}`, "invalid", "context_match[0].path: "},
		{`{"context_match":[{"path":"$..a..b","op":"exists"}]}`, "invalid", "context_match[0].path: 2 descendant segments"},
		{`{"context_match":[{"path":"$.a","op":"eq"}]}`, "invalid", "context_match[0].value: missing"},
		{`{"context_match":[{"path":"$.a","op":"gt","value":true}]}`, "invalid", "context_match[0].value: gt compares with a number or a string"},
		{`{"context_match":[{"path":"$.a","op":"in","value":1}]}`, "invalid", "context_match[0].value: in takes an array"},
		{`{"context_match":[{"path":"$.a","op":"exists","value":"yes"}]}`, "invalid", "context_match[0].value: exists takes true"},
		{`{"context_match":[{"path":"$.a","op":"eq","value":1,"why":2}]}`, "invalid", "context_match[0].why: unknown member"},
		{`{"context_match":[{"path":"$.a","op":"eq","value":"` + strings.Repeat("v", store.MaxConditionValue) + `"}]}`, "invalid", "context_match[0].value: 1026 bytes"},
		{`{"any_tags":["a"],"any_tags":["b"]}`, "invalid", "any_tags: key \"any_tags\" appears twice"},
		{`{"any_tags":["a"]} {}`, "invalid", ""},
		{`{"context_match":[` + strings.Repeat(`{"path":"$.a","op":"exists"},`, store.MaxConditions) + `{"path":"$.a","op":"exists"}]}`, "invalid", "context_match: more than 16 conditions"},
		// Sizes are of the canonical form; the bytes given are bounded at
		// six times that before anything is decoded.
		{`{"any_tags":["` + strings.Repeat("a", 6*store.MaxSelectorBytes) + `"]}`, "too_large", "selector is"},
		{`{"any_tags":["` + strings.Repeat("a", store.MaxSelectorBytes) + `"]}`, "invalid", "any_tags[0]: tag of 16384 bytes"},
		{`{"context_match":[{"path":"$.a","op":"eq","value":"` + strings.Repeat(`\u0041`, 1000) + strings.Repeat("A", 30) + `"}]}`, "invalid", "context_match[0].value: 1032 bytes"},
	} {
		sel, err := store.ParseSelector([]byte(c.src))
		var se *store.Error
		if err == nil || !errorsAs(err, &se) || string(se.Code) != c.code || !strings.HasPrefix(err.Error(), c.msg) {
			t.Errorf("%.80s: %v %v, want %s %q…", c.src, sel, err, c.code, c.msg)
		}
	}
}

func errorsAs(err error, se **store.Error) bool {
	e, ok := err.(*store.Error)
	*se = e
	return ok
}

func TestSelectorMatch(t *testing.T) {
	doc := `{"status":"open","n":3,"big":1e400,"labels":["a","b"],"owner":{"name":"Ann"},"items":[{"p":1},{"p":5}],"nil":null}`
	ev := store.Event{Kind: store.Updated, Tags: []string{"hot", "x"}, SchemaName: "billing.invoice.v2"}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`{}`, true},
		{`{"any_tags":["cold","hot"]}`, true},
		{`{"any_tags":["cold"]}`, false},
		{`{"all_tags":["hot","x"]}`, true},
		{`{"all_tags":["hot","cold"]}`, false},
		{`{"schema_name":"billing.*"}`, true},
		{`{"schema_name":"billing.invoice.*"}`, true},
		{`{"schema_name":"bill.*"}`, false},
		{`{"schema_name":"billing.invoice.v2"}`, true},
		{`{"schema_name":"billing"}`, false},
		{`{"kinds":["created","updated"]}`, true},
		{`{"kinds":["deleted","expired"]}`, false},
		{`{"context_match":[{"path":"$.status","op":"eq","value":"open"}]}`, true},
		{`{"context_match":[{"path":"$.n","op":"eq","value":3.0}]}`, true},
		{`{"context_match":[{"path":"$.n","op":"eq","value":"3"}]}`, false},
		{`{"context_match":[{"path":"$.n","op":"ne","value":4}]}`, true},
		{`{"context_match":[{"path":"$.missing","op":"ne","value":4}]}`, true},
		{`{"context_match":[{"path":"$.n","op":"gt","value":2.5}]}`, true},
		{`{"context_match":[{"path":"$.n","op":"lt","value":3}]}`, false},
		{`{"context_match":[{"path":"$.big","op":"gt","value":1e300}]}`, true},
		{`{"context_match":[{"path":"$.status","op":"gt","value":"ok"}]}`, true},
		{`{"context_match":[{"path":"$.status","op":"gt","value":5}]}`, false},
		{`{"context_match":[{"path":"$.status","op":"in","value":["closed","open"]}]}`, true},
		{`{"context_match":[{"path":"$.status","op":"in","value":[]}]}`, false},
		{`{"context_match":[{"path":"$.owner.name","op":"exists"}]}`, true},
		{`{"context_match":[{"path":"$.owner.age","op":"exists"}]}`, false},
		{`{"context_match":[{"path":"$.owner.age","op":"exists","value":false}]}`, true},
		{`{"context_match":[{"path":"$.nil","op":"exists"}]}`, true},
		{`{"context_match":[{"path":"$.nil","op":"eq","value":null}]}`, true},
		{`{"context_match":[{"path":"$.labels","op":"contains","value":"b"}]}`, true},
		{`{"context_match":[{"path":"$.owner.name","op":"contains","value":"nn"}]}`, true},
		{`{"context_match":[{"path":"$.owner","op":"eq","value":{"name":"Ann"}}]}`, true},
		{`{"context_match":[{"path":"$.labels","op":"eq","value":["a","b"]}]}`, true},
		// several nodes: one that passes is enough; ne needs none equal
		{`{"context_match":[{"path":"$.items[*].p","op":"gt","value":4}]}`, true},
		{`{"context_match":[{"path":"$.items[*].p","op":"lt","value":1}]}`, false},
		{`{"context_match":[{"path":"$.items[*].p","op":"ne","value":5}]}`, false},
		{`{"context_match":[{"path":"$..p","op":"eq","value":5}]}`, true},
		{`{"context_match":[{"path":"$.items[?@.p > 2].p","op":"eq","value":5}]}`, true},
		// all conditions must hold
		{`{"context_match":[{"path":"$.n","op":"eq","value":3},{"path":"$.status","op":"eq","value":"closed"}]}`, false},
		{`{"all_tags":["hot"],"context_match":[{"path":"$.n","op":"eq","value":3}]}`, true},
	} {
		sel, err := store.ParseSelector([]byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		d, _ := view.DecodeJSON([]byte(doc))
		if got := sel.Match(&ev, d); got != c.want {
			t.Errorf("%s: %v, want %v", c.src, got, c.want)
		}
	}
	// Events without a context fail every condition, ne and exists=false too.
	for _, src := range []string{`{"context_match":[{"path":"$.n","op":"ne","value":1}]}`,
		`{"context_match":[{"path":"$.n","op":"exists","value":false}]}`} {
		sel, _ := store.ParseSelector([]byte(src))
		for _, k := range []store.EventKind{store.Deleted, store.Expired} {
			if sel.Match(&store.Event{Kind: k}, nil) {
				t.Errorf("%s matched a %s event", src, k)
			}
		}
	}
	if !(*store.Selector)(nil).Match(&ev, nil) {
		t.Error("a nil selector refused an event")
	}
}

// TestSelectorRoundTrip: a selector's JSON form parses back to itself, as a
// stored subscription's does.
func TestSelectorRoundTrip(t *testing.T) {
	src := `{"any_tags":["b","a","a"],"schema_name":"s.*","kinds":["expired"],"context_match":[{"path":"$.a","op":"in","value":[1, 2.50]}]}`
	sel, err := store.ParseSelector([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(sel)
	want := `{"any_tags":["a","b"],"schema_name":"s.*","kinds":["expired"],"context_match":[{"path":"$.a","op":"in","value":[1,2.50]}]}`
	if string(out) != want {
		t.Fatalf("%s, want %s", out, want)
	}
	again, err := store.ParseSelector(out)
	if err != nil {
		t.Fatal(err)
	}
	if out2, _ := json.Marshal(again); string(out2) != want {
		t.Fatalf("second round: %s", out2)
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`{}`, `{"any_tags":["a"],"all_tags":["b"],"schema_name":"x.*","kinds":["created"]}`,
		`{"context_match":[{"path":"$.a[0].b","op":"eq","value":{"x":[1,null]}}]}`,
		`{"context_match":[{"path":"$[?@.a == $.b]","op":"exists"}]}`, `{"kinds":["x"]}`, `[`, `{"any_tags":["a"],"any_tags":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sel, err := store.ParseSelector(data)
		if err != nil {
			var se *store.Error
			if !errorsAs(err, &se) || (se.Code != store.CodeInvalid && se.Code != store.CodeTooLarge) {
				t.Fatalf("error of another kind: %T %v", err, err)
			}
			return
		}
		out, err := json.Marshal(sel)
		if err != nil {
			t.Fatal(err)
		}
		again, err := store.ParseSelector(out)
		if err != nil {
			t.Fatalf("%s does not parse back: %v", out, err)
		}
		if out2, _ := json.Marshal(again); string(out2) != string(out) {
			t.Fatalf("round trip: %s then %s", out, out2)
		}
	})
}

// FuzzSelectorMatch compares Match with a reference evaluation that
// decodes numbers as float64 and compares with reflect.DeepEqual.
func FuzzSelectorMatch(f *testing.F) {
	f.Add(`{"context_match":[{"path":"$.a","op":"eq","value":1}]}`, `{"a":1.0}`, "hot,x", "s.v1", uint8(0))
	f.Add(`{"any_tags":["x"],"context_match":[{"path":"$.a[*]","op":"gt","value":"b"}]}`, `{"a":["a","c"]}`, "x", "", uint8(1))
	f.Add(`{"schema_name":"s.*","kinds":["updated"],"context_match":[{"path":"$.b","op":"ne","value":[1]}]}`, `{"b":[1]}`, "", "s.v2", uint8(1))
	f.Add(`{"context_match":[{"path":"$..c","op":"in","value":[2,"2",null]},{"path":"$.d","op":"exists","value":false}]}`, `{"x":{"c":null}}`, "", "", uint8(0))
	f.Add(`{"context_match":[{"path":"$.s","op":"contains","value":"ell"}]}`, `{"s":"hello"}`, "", "", uint8(2))
	f.Add(`{"context_match":[{"path":"$.l","op":"contains","value":{"k":1}}]}`, `{"l":[{"k":1.0}]}`, "", "", uint8(0))
	f.Fuzz(func(t *testing.T, src, doc, tags, schema string, kind uint8) {
		sel, err := store.ParseSelector([]byte(src))
		if err != nil {
			return
		}
		numbers, err := view.DecodeJSON([]byte(doc))
		if err != nil {
			return
		}
		var floats any
		if err := json.Unmarshal([]byte(doc), &floats); err != nil {
			return // numbers past float64's range: the reference cannot hold them
		}
		kinds := []store.EventKind{store.Created, store.Updated, store.Deleted, store.Expired}
		e := store.Event{Kind: kinds[int(kind)%4], SchemaName: schema}
		if tags != "" {
			e.Tags = strings.Split(tags, ",")
		}
		ctxDoc := numbers
		if e.Kind == store.Deleted || e.Kind == store.Expired {
			ctxDoc, floats = nil, nil
		}
		got := sel.Match(&e, ctxDoc)
		if want := reference(t, src, &e, floats); got != want {
			t.Fatalf("Match %v, reference %v", got, want)
		}
	})
}

// reference evaluates a selector's JSON form against an event and its
// context decoded with float64 numbers (nil: none).
func reference(t *testing.T, src string, e *store.Event, doc any) bool {
	var s struct {
		AnyTags      []string `json:"any_tags"`
		AllTags      []string `json:"all_tags"`
		SchemaName   string   `json:"schema_name"`
		Kinds        []string `json:"kinds"`
		ContextMatch []struct {
			Path  string           `json:"path"`
			Op    string           `json:"op"`
			Value *json.RawMessage `json:"value"`
		} `json:"context_match"`
	}
	if err := json.Unmarshal([]byte(src), &s); err != nil {
		t.Fatalf("reference cannot read %s: %v", src, err)
	}
	has := func(tag string) bool { return slices.Contains(e.Tags, tag) }
	if len(s.Kinds) > 0 && !slices.Contains(s.Kinds, string(e.Kind)) {
		return false
	}
	if p, ok := strings.CutSuffix(s.SchemaName, "*"); ok {
		if !strings.HasPrefix(e.SchemaName, p) {
			return false
		}
	} else if s.SchemaName != "" && s.SchemaName != e.SchemaName {
		return false
	}
	for _, tag := range s.AllTags {
		if !has(tag) {
			return false
		}
	}
	if len(s.AnyTags) > 0 && !slices.ContainsFunc(s.AnyTags, has) {
		return false
	}
	if len(s.ContextMatch) > 0 && doc == nil {
		return false
	}
	for _, c := range s.ContextMatch {
		p, err := jsonpath.Parse(c.Path)
		if err != nil {
			t.Fatalf("reference cannot parse %q: %v", c.Path, err)
		}
		nodes := p.Select(doc)
		var v any
		present := c.Value != nil
		if present {
			if err := json.Unmarshal(*c.Value, &v); err != nil {
				return false // past float64's range: never what a test means
			}
		}
		eq := func(n any) bool { return reflect.DeepEqual(n, v) }
		order := func(n any) int {
			switch x := n.(type) {
			case float64:
				if y, ok := v.(float64); ok {
					switch {
					case x < y:
						return -1
					case x > y:
						return 1
					}
					return 0
				}
			case string:
				if y, ok := v.(string); ok {
					return strings.Compare(x, y)
				}
			}
			return 2 // not ordered
		}
		var ok bool
		switch c.Op {
		case "exists":
			ok = len(nodes) > 0 == (!present || v == true)
		case "eq":
			ok = slices.ContainsFunc(nodes, eq)
		case "ne":
			ok = !slices.ContainsFunc(nodes, eq)
		case "gt":
			ok = slices.ContainsFunc(nodes, func(n any) bool { return order(n) == 1 })
		case "lt":
			ok = slices.ContainsFunc(nodes, func(n any) bool { return order(n) == -1 })
		case "in":
			ok = slices.ContainsFunc(nodes, func(n any) bool {
				return slices.ContainsFunc(v.([]any), func(x any) bool { return reflect.DeepEqual(n, x) })
			})
		case "contains":
			ok = slices.ContainsFunc(nodes, func(n any) bool {
				switch x := n.(type) {
				case string:
					y, isStr := v.(string)
					return isStr && strings.Contains(x, y)
				case []any:
					return slices.ContainsFunc(x, eq)
				}
				return false
			})
		}
		if !ok {
			return false
		}
	}
	return true
}

// BenchmarkSelectorFanOut is the feed reader's work for one change with
// 100 open streams: 100 tag matches, against decoding the context once
// and 100 matches with two context conditions.
func BenchmarkSelectorFanOut(b *testing.B) {
	const streams = 100
	raw := []byte(`{"status":"open","n":3,"items":[{"sku":"a","qty":1},{"sku":"b","qty":2}],"note":"a context of a few hundred bytes, as records commonly are"}`)
	ev := store.Event{Kind: store.Created, Tags: []string{"bench", "x"}, SchemaName: "s.v1"}
	for _, c := range []struct{ name, src string }{
		{"tag", `{"all_tags":["bench"]}`},
		{"context", `{"all_tags":["bench"],"context_match":[{"path":"$.status","op":"eq","value":"open"},{"path":"$.n","op":"gt","value":0}]}`},
	} {
		sel, err := store.ParseSelector([]byte(c.src))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var doc any
				if sel.NeedsContext() {
					doc, _ = view.DecodeJSON(raw)
				}
				for range streams {
					if !sel.Match(&ev, doc) {
						b.Fatal("no match")
					}
				}
			}
		})
	}
}

// TestSelectorMatchCostIsShared: a selector's conditions share one budget
// per change (store.MaxMatchWork). A document of a quarter of
// MaxMatchWork's nodes passes three `$..*` conditions, but not four or
// sixteen: the sum of their prices is over the bound, and a path too
// costly for a record does not match it (ne included, which would
// otherwise hold).
func TestSelectorMatchCostIsShared(t *testing.T) {
	n := int(store.MaxMatchWork / 4)
	doc, err := view.DecodeJSON([]byte(`[` + strings.Repeat("0,", n-1) + `0]`))
	if err != nil {
		t.Fatal(err)
	}
	e := &store.Event{Kind: store.Updated, Version: 2}
	for _, c := range []struct {
		conds int
		want  bool
	}{{3, true}, {4, false}, {store.MaxConditions, false}} {
		var conds []string
		for range c.conds {
			conds = append(conds, `{"path":"$..*","op":"ne","value":"never"}`)
		}
		sel, err := store.ParseSelector([]byte(`{"context_match":[` + strings.Join(conds, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Match(e, doc); got != c.want {
			t.Errorf("%d conditions on %d nodes: Match %v, want %v", c.conds, n+1, got, c.want)
		}
	}
	// The budget is per change: the next match starts afresh.
	sel, err := store.ParseSelector([]byte(`{"context_match":[{"path":"$..*","op":"eq","value":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if !sel.Match(e, doc) {
			t.Fatalf("match %d: a condition within the bound does not hold", i)
		}
	}
}

// BenchmarkSelectorMatchDescendants prices the shape of a costly selector:
// sixteen `$..*` conditions with ne (each reads every node) on a context of
// a quarter of MaxContextBytes and of all of it, an array of zeros (on the
// whole, the conditions past MaxMatchWork are refused unread).
func BenchmarkSelectorMatchDescendants(b *testing.B) {
	var conds []string
	for range store.MaxConditions {
		conds = append(conds, `{"path":"$..*","op":"ne","value":"never"}`)
	}
	sel, err := store.ParseSelector([]byte(`{"context_match":[` + strings.Join(conds, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		name  string
		bytes int
	}{{"quarter", store.MaxContextBytes / 4}, {"whole", store.MaxContextBytes}} {
		n := size.bytes / 2
		doc, err := view.DecodeJSON([]byte(`{"a":[` + strings.Repeat("0,", n-1) + `0]}`))
		if err != nil {
			b.Fatal(err)
		}
		e := &store.Event{Kind: store.Created, Version: 1}
		b.Run(size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sel.Match(e, doc)
			}
		})
	}
}

// TestSelectorReadsBack: a selector accepted once reads back, however the
// bytes it is stored in escape its strings (encoding/json writes "<" as
// \u003c), and its sizes are those of its canonical form.
func TestSelectorReadsBack(t *testing.T) {
	value := strings.Repeat("<>&\u2028", store.MaxConditionValue/16)
	in := `{"context_match":[{"path":"$.a","op":"eq","value":"` + value + `"}]}`
	sel, err := store.ParseSelector([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := json.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) <= len(in) {
		t.Fatalf("the stored form (%d bytes) is not the escaped one this test is about", len(stored))
	}
	back, err := store.ParseSelector(stored)
	if err != nil {
		t.Fatalf("a stored selector does not read back: %v", err)
	}
	if !reflect.DeepEqual(back.ContextMatch[0].Value, sel.ContextMatch[0].Value) {
		t.Fatalf("value %s read back as %s", sel.ContextMatch[0].Value, back.ContextMatch[0].Value)
	}
}
