package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/relay"
)

// fn is a transformer from a function.
type fn struct {
	name string
	f    func(ctx context.Context, rc *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error)
}

func (t fn) Name() string { return t.name }
func (t fn) Transform(ctx context.Context, rc *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
	return t.f(ctx, rc, ps)
}

func str(s string) *string { return &s }
func yes() *bool           { b := true; return &b }

// rich is a context whose prompts use every field, with nested metadata.
func rich() *relay.Context {
	return &relay.Context{
		SourceAgent: "Orchestrator", TargetAgent: "Analyzer", Task: "Audit the payment service",
		Constraints: []string{"read only", "cite files"},
		Memory:      map[string]any{"repo": "acme/pay", "limits": map[string]any{"files": 20, "tags": []any{"a", "b"}}},
		Prompts: []relay.Prompt{
			{ID: "sys", Position: relay.System, Content: "You audit code for security issues.", Priority: 2,
				Metadata: map[string]any{"owner": "sec", "n": 3, "nested": map[string]any{"list": []any{1, "x", map[string]any{"k": true}}}}},
			{ID: "style", Position: relay.ContextPos, Content: "Style guide: tabs.", Variables: map[string]string{"lang": "Go"},
				Conditions: []relay.Condition{{Variable: "lang", Equals: str("Go")}, {Variable: "x", Exists: yes()}},
				Examples:   []relay.Example{{Input: "in", Output: "out"}}},
			{ID: "q", Position: relay.User, Content: "Check {{service}} for security holes.", Variables: map[string]string{"service": "pay"}},
		},
	}
}

func snapshot(t *testing.T, rc *relay.Context) string {
	t.Helper()
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mutateAll changes every part of every prompt it gets, in place, and the
// context too.
var mutateAll = fn{"mutate", func(_ context.Context, rc *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
	for i := range ps {
		p := &ps[i]
		p.Content += " (changed)"
		p.Priority += 10
		p.Name = "renamed"
		for k := range p.Variables {
			p.Variables[k] = "changed"
		}
		if p.Variables != nil {
			p.Variables["added"] = "1"
		}
		for j := range p.Conditions {
			if p.Conditions[j].Equals != nil {
				*p.Conditions[j].Equals = "changed"
			}
			if p.Conditions[j].Exists != nil {
				*p.Conditions[j].Exists = false
			}
		}
		for j := range p.Examples {
			p.Examples[j].Output = "changed"
		}
		if p.Metadata != nil {
			p.Metadata["owner"] = "changed"
			if n, ok := p.Metadata["nested"].(map[string]any); ok {
				l := n["list"].([]any)
				l[0] = 99
				l[2].(map[string]any)["k"] = false
				n["new"] = 1
			}
		}
	}
	rc.Task = "changed"
	rc.Constraints[0] = "changed"
	rc.Memory["repo"] = "changed"
	rc.Memory["limits"].(map[string]any)["files"] = 0
	rc.Memory["limits"].(map[string]any)["tags"].([]any)[0] = "changed"
	return append(ps, relay.Prompt{ID: "new", Content: "new"}), nil
}}

func TestNoTransformersIsPassthrough(t *testing.T) {
	rc := rich()
	before := snapshot(t, rc)
	out, trace, err := relay.Relay(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	if len(trace.Steps) != 0 {
		t.Fatalf("trace %+v", trace)
	}
	if len(out) != len(rc.Prompts) {
		t.Fatalf("%d prompts, want %d", len(out), len(rc.Prompts))
	}
	for i := range out {
		if !relay.EqualPrompts(&out[i], &rc.Prompts[i]) {
			t.Fatalf("prompt %d changed: %+v", i, out[i])
		}
	}
	// The result is a copy: changing it leaves the input alone.
	mutateAll.f(context.Background(), &relay.Context{Memory: map[string]any{"limits": map[string]any{"tags": []any{0}}}, Constraints: []string{""}}, out)
	if got := snapshot(t, rc); got != before {
		t.Fatalf("input changed through the result:\n%s\n%s", before, got)
	}
}

func TestOriginalsNeverChange(t *testing.T) {
	rc := rich()
	before := snapshot(t, rc)
	redactor, err := relay.NewRedactor(relay.RedactorOptions{Patterns: []relay.Pattern{{Kind: "svc", Regex: "pay"}}})
	if err != nil {
		t.Fatal(err)
	}
	out, trace, err := relay.Relay(context.Background(), rc, relay.NewContextInjector(), mutateAll, redactor,
		&relay.ScopeNarrower{KeywordFilter: []string{"security"}}, &relay.TokenBudget{MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, rc); got != before {
		t.Fatalf("the relay changed its input:\n%s\n%s", before, got)
	}
	if len(trace.Steps) != 5 {
		t.Fatalf("%d steps", len(trace.Steps))
	}
	if !strings.Contains(out[0].Content, "(changed)") || out[1].Metadata["owner"] != "changed" {
		t.Fatalf("the changes did not carry through: %+v", out[:2])
	}
}

func TestEachTransformerGetsItsOwnContext(t *testing.T) {
	rc := rich()
	var seen []string
	look := fn{"look", func(_ context.Context, rc *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
		b, _ := json.Marshal(rc)
		seen = append(seen, string(b))
		if rc.Prompts != nil {
			return nil, errors.New("the step context holds prompts")
		}
		return ps, nil
	}}
	if _, _, err := relay.Relay(context.Background(), rc, look, mutateAll, look); err != nil {
		t.Fatal(err)
	}
	if seen[0] != seen[1] {
		t.Fatalf("a transformer's change to the context reached the next:\n%s\n%s", seen[0], seen[1])
	}
	if !strings.Contains(seen[0], `"task":"Audit the payment service"`) || !strings.Contains(seen[0], `"files":20`) {
		t.Fatalf("context %s", seen[0])
	}
}

func TestTypedCopyKeepsTypes(t *testing.T) {
	rc := &relay.Context{Prompts: []relay.Prompt{{ID: "a", Content: "x", Metadata: map[string]any{
		"int": 3, "i64": int64(1) << 60, "f": 1.5, "list": []any{uint8(7)}, "strs": []string{"a"}}}}}
	out, _, err := relay.Relay(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	m := out[0].Metadata
	if _, ok := m["int"].(int); !ok {
		t.Errorf("int became %T", m["int"])
	}
	if v, ok := m["i64"].(int64); !ok || v != 1<<60 {
		t.Errorf("int64 became %T %v", m["i64"], m["i64"])
	}
	if _, ok := m["list"].([]any)[0].(uint8); !ok {
		t.Errorf("uint8 became %T", m["list"].([]any)[0])
	}
	m["strs"].([]string)[0] = "changed"
	if rc.Prompts[0].Metadata["strs"].([]string)[0] != "a" {
		t.Error("[]string shared")
	}
}

func TestChainedTransformersSeeEachOther(t *testing.T) {
	add := func(id string) relay.Transformer {
		return fn{"add-" + id, func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
			return append(ps, relay.Prompt{ID: id, Content: id}), nil
		}}
	}
	var saw []string
	look := fn{"look", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
		for _, p := range ps {
			saw = append(saw, p.ID)
		}
		return ps[1:], nil
	}}
	out, trace, err := relay.Relay(context.Background(), &relay.Context{Prompts: []relay.Prompt{{ID: "p", Content: "p"}}}, add("x"), add("y"), look)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(saw, ",") != "p,x,y" {
		t.Fatalf("the last transformer saw %v", saw)
	}
	if len(out) != 2 || out[0].ID != "x" || out[1].ID != "y" {
		t.Fatalf("out %+v", out)
	}
	want := []relay.Step{
		{Transformer: "add-x", Added: []string{"x"}, Removed: []string{}, Changed: []string{}},
		{Transformer: "add-y", Added: []string{"y"}, Removed: []string{}, Changed: []string{}},
		{Transformer: "look", Added: []string{}, Removed: []string{"p"}, Changed: []string{}},
	}
	gb, _ := json.Marshal(trace.Steps)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Fatalf("trace %s\nwant  %s", gb, wb)
	}
}

func TestTraceRecordsChanges(t *testing.T) {
	rc := rich()
	var touch []relay.Transformer
	for _, change := range []func(p *relay.Prompt){
		func(p *relay.Prompt) { p.Content = "other" },
		func(p *relay.Prompt) { p.Priority = 9 },
		func(p *relay.Prompt) { p.Variables["lang"] = "Rust" },
		func(p *relay.Prompt) { *p.Conditions[0].Equals = "Rust" },
		func(p *relay.Prompt) { p.Examples[0].Input = "other" },
		func(p *relay.Prompt) { p.Metadata = map[string]any{"k": 1} },
		func(p *relay.Prompt) {},
	} {
		touch = append(touch, fn{"touch", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
			change(&ps[1])
			return ps, nil
		}})
	}
	_, trace, err := relay.Relay(context.Background(), rc, touch...)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range trace.Steps {
		want := "[style]"
		if i == len(trace.Steps)-1 {
			want = "[]"
		}
		if got := fmt.Sprint(s.Changed); got != want || len(s.Added)+len(s.Removed) != 0 {
			t.Errorf("step %d: %+v, want changed %s", i, s, want)
		}
	}
	// Nested metadata changes count too.
	deep := fn{"deep", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
		ps[0].Metadata["nested"].(map[string]any)["list"].([]any)[2].(map[string]any)["k"] = false
		return ps, nil
	}}
	_, trace, _ = relay.Relay(context.Background(), rich(), deep)
	if fmt.Sprint(trace.Steps[0].Changed) != "[sys]" {
		t.Errorf("deep change: %+v", trace.Steps[0])
	}
}

var errBoom = errors.New("boom")

func TestTransformErrors(t *testing.T) {
	ok := fn{"ok", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) { return ps, nil }}
	cases := []struct {
		name   string
		t      relay.Transformer
		msg    string
		target error
	}{
		{"error", fn{"failing", func(context.Context, *relay.Context, []relay.Prompt) ([]relay.Prompt, error) {
			return nil, fmt.Errorf("wrapped: %w", errBoom)
		}}, "transformers[1] (failing): wrapped: boom", errBoom},
		{"panic", fn{"panicky", func(context.Context, *relay.Context, []relay.Prompt) ([]relay.Prompt, error) {
			panic("oops")
		}}, "transformers[1] (panicky): panic: oops", nil},
		{"duplicate IDs", fn{"dups", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
			return append(ps, ps[0]), nil
		}}, `transformers[1] (dups): prompts[3].id: "sys" is used twice (first at prompts[0])`, nil},
		{"bad position", fn{"pos", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
			ps[2].Position = "sytem"
			return ps, nil
		}}, `transformers[1] (pos): prompts[2].position: unknown position "sytem"`, nil},
		{"empty content", fn{"empty", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
			ps[0].Content = ""
			return ps, nil
		}}, `transformers[1] (empty): prompts[0].content: required`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := rich()
			before := snapshot(t, rc)
			out, _, err := relay.Relay(context.Background(), rc, ok, c.t, ok)
			if err == nil || out != nil {
				t.Fatalf("out %v err %v", out, err)
			}
			if !strings.HasPrefix(err.Error(), c.msg) {
				t.Fatalf("error %q, want %q", err, c.msg)
			}
			if !errors.Is(err, relay.ErrTransformFailed) {
				t.Fatal("not errors.Is ErrTransformFailed")
			}
			if !errors.Is(err, &relay.Error{Code: relay.CodeTransformFailed, Transformer: c.t.Name()}) {
				t.Fatal("does not match its transformer's name")
			}
			if errors.Is(err, &relay.Error{Code: relay.CodeTransformFailed, Transformer: "ok"}) {
				t.Fatal("matches another transformer's name")
			}
			if c.target != nil && !errors.Is(err, c.target) {
				t.Fatal("the cause is not in the chain")
			}
			var re *relay.Error
			if !errors.As(err, &re) || re.Code != relay.CodeTransformFailed || re.Transformer != c.t.Name() || re.Step != 1 {
				t.Fatalf("errors.As: %+v", re)
			}
			if snapshot(t, rc) != before {
				t.Fatal("a failed relay changed its input")
			}
		})
	}
	t.Run("invalid input", func(t *testing.T) {
		_, _, err := relay.Relay(context.Background(), &relay.Context{Prompts: []relay.Prompt{{ID: "a"}}}, ok)
		if !errors.Is(err, &relay.Error{Code: relay.CodeInvalidPrompt}) || errors.Is(err, relay.ErrTransformFailed) {
			t.Fatalf("err %v", err)
		}
		if _, _, err := relay.Relay(context.Background(), nil); !errors.Is(err, &relay.Error{Code: relay.CodeInvalidContext}) {
			t.Fatalf("nil context: %v", err)
		}
		cyclic := map[string]any{}
		cyclic["self"] = cyclic
		_, _, err = relay.Relay(context.Background(), &relay.Context{Memory: cyclic})
		if err == nil || !strings.Contains(err.Error(), "nested deeper than 64") {
			t.Fatalf("cyclic memory: %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := relay.Relay(ctx, rich(), ok); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestInjectorDefaultTextIsExact(t *testing.T) {
	rc := &relay.Context{SourceAgent: "Orchestrator", TargetAgent: "Analyzer", Task: "Find the leak",
		Constraints: []string{"no writes", "one hour"}, Memory: map[string]any{"a": 1, "b": 2, "c": 3}}
	const want = "Delegated by: Orchestrator\nTask: Find the leak\nConstraints:\n  - no writes\n  - one hour\n\nShared Context: 3 items available"
	out, _, err := relay.Relay(context.Background(), rc, relay.NewContextInjector())
	if err != nil {
		t.Fatal(err)
	}
	p := out[0]
	if p.Content != want {
		t.Fatalf("text\n%q\nwant\n%q", p.Content, want)
	}
	if p.ID != "relay:Orchestrator>Analyzer" || p.Position != relay.SystemPrefix || p.Priority != 1 || !p.Injected() ||
		p.Metadata["source"] != "Orchestrator" || p.Metadata["target"] != "Analyzer" || p.Metadata["hop"] != int64(1) {
		t.Fatalf("injected prompt %+v", p)
	}
	// The zero value includes neither constraints nor memory.
	got, _ := (&relay.ContextInjector{}).Text(rc)
	if got != "Delegated by: Orchestrator\nTask: Find the leak" {
		t.Fatalf("zero value text %q", got)
	}
}

// hop relays prompts from one agent to the next.
func hop(t *testing.T, prompts []relay.Prompt, from, to, task string, ts ...relay.Transformer) []relay.Prompt {
	t.Helper()
	out, _, err := relay.Relay(context.Background(), &relay.Context{SourceAgent: from, TargetAgent: to, Task: task, Prompts: prompts}, ts...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSequentialChain(t *testing.T) {
	parent := []relay.Prompt{
		{ID: "role", Position: relay.System, Content: "You are part of a code review team."},
		{ID: "sec", Content: "Security checklist: injection, auth, secrets."},
		{ID: "perf", Content: "Performance checklist: allocations, N+1 queries."},
		{ID: "ask", Position: relay.User, Content: "Review PR 42 for security."},
	}
	orig := relay.ClonePrompts(parent)
	inject := relay.NewContextInjector()
	narrow := &relay.ScopeNarrower{KeywordFilter: []string{"security", "review"}}
	analyzer := hop(t, parent, "Orchestrator", "Analyzer", "Analyse PR 42", inject, narrow)
	reporter := hop(t, analyzer, "Analyzer", "Reporter", "Write the report", inject, narrow)

	var ids []string
	for _, p := range reporter {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, " ") != "relay:Analyzer>Reporter relay:Orchestrator>Analyzer role sec ask" {
		t.Fatalf("ids %v", ids)
	}
	if reporter[0].Metadata["hop"] != int64(2) || reporter[1].Metadata["hop"] != int64(1) {
		t.Fatalf("hops %v %v", reporter[0].Metadata, reporter[1].Metadata)
	}
	// The newest delegation (the agent's own delegator) comes first.
	sys := relay.Assemble(reporter).System.PlainText("")
	if !strings.HasPrefix(sys, "Delegated by: Analyzer\nTask: Write the report\n\nDelegated by: Orchestrator\nTask: Analyse PR 42\n\nYou are part") {
		t.Fatalf("system prompt %q", sys)
	}
	for i := range parent {
		if !relay.EqualPrompts(&parent[i], &orig[i]) {
			t.Fatal("the parent's prompts changed")
		}
	}

	// A chain back to the first agent keeps both contexts.
	back := hop(t, hop(t, parent, "A", "B", "t1", inject), "B", "A", "t2", inject)
	again := hop(t, back, "A", "B", "t3", inject)
	ids = nil
	for _, p := range again {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids[:3], " ") != "relay:A>B#2 relay:B>A relay:A>B" {
		t.Fatalf("ids %v", ids)
	}
}

func TestParallelFanOut(t *testing.T) {
	parent := []relay.Prompt{
		{ID: "role", Position: relay.System, Content: "Code review team."},
		{ID: "sec", Content: "Security: check auth and secrets."},
		{ID: "perf", Content: "Performance: check allocations and latency."},
		{ID: "both", Content: "Security and performance both matter."},
	}
	pipeline := relay.NewPipeline(
		relay.NewContextInjector(),
		relay.ForTargets(&relay.ScopeNarrower{AllowedPositions: []relay.Position{relay.SystemPrefix, relay.ContextPos}, KeywordFilter: []string{"security"}}, "SecuritySpecialist"),
		relay.ForTargets(&relay.ScopeNarrower{KeywordFilter: []string{"performance"}, ExcludeIDs: []string{"both"}}, "PerfSpecialist"),
	)
	var contexts []*relay.Context
	for i := range 20 {
		target := "SecuritySpecialist"
		if i%2 == 1 {
			target = "PerfSpecialist"
		}
		contexts = append(contexts, &relay.Context{SourceAgent: "Lead", TargetAgent: target, Task: fmt.Sprintf("task %d", i), Prompts: parent})
	}
	results := pipeline.RunAll(context.Background(), contexts)
	for i, r := range results {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		var ids []string
		for _, p := range r.Prompts {
			ids = append(ids, p.ID)
		}
		want := "relay:Lead>SecuritySpecialist sec both"
		if i%2 == 1 {
			want = "relay:Lead>PerfSpecialist perf"
		}
		if strings.Join(ids, " ") != want {
			t.Errorf("result %d: %v, want %s", i, ids, want)
		}
		if !strings.Contains(r.Prompts[0].Content, fmt.Sprintf("Task: task %d", i)) {
			t.Errorf("result %d is out of order: %q", i, r.Prompts[0].Content)
		}
		if s := r.Trace.Steps[1+i%2]; s.Transformer != "scope_narrower" || len(s.Targets) != 1 || !strings.HasSuffix(s.Targets[0], "Specialist") {
			t.Errorf("step %q targets %q", s.Transformer, s.Targets)
		}
	}
	if len(parent) != 4 || parent[1].Content != "Security: check auth and secrets." {
		t.Fatal("parent changed")
	}
}

func TestAssembleIsStable(t *testing.T) {
	var prompts []relay.Prompt
	for i := range 60 {
		pos := []relay.Position{relay.System, relay.ContextPos, relay.User}[i%3]
		prompts = append(prompts, relay.Prompt{ID: fmt.Sprint(i), Position: pos, Priority: i % 2, Content: fmt.Sprintf("p%02d", i)})
	}
	first := relay.Assemble(prompts)
	sys := first.System.PlainText("")
	// Higher priority first, then list order; never shuffled.
	if !strings.HasPrefix(sys, "p03\n\np09\n\np15") || !strings.Contains(sys, "p57\n\np00\n\np06") {
		t.Fatalf("system %q", sys)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				r := relay.Assemble(prompts)
				if r.System.PlainText("") != sys || r.Messages[0].Content.Text != first.Messages[0].Content.Text {
					t.Error("assembly changed between runs")
					return
				}
			}
		})
	}
	wg.Wait()
	// Order sorts the same however the input was reached: shuffle the
	// prompts, then assemble in the order the list now has. Equal
	// priorities keep the shuffled list's order, so the texts differ
	// between shuffles only within a run of equal position and priority:
	// sorted within each run, every shuffle gives the first's result.
	rnd := rand.New(rand.NewPCG(1, 2))
	canonical := func(ps []relay.Prompt) string {
		order := relay.Order(ps)
		var runs []string
		var run []string
		for k, i := range order {
			if k > 0 {
				a, b := ps[order[k-1]], ps[i]
				if a.Position != b.Position || a.Priority != b.Priority {
					slices.Sort(run)
					runs = append(runs, strings.Join(run, ","))
					run = nil
				}
			}
			run = append(run, ps[i].Content)
		}
		slices.Sort(run)
		return strings.Join(append(runs, strings.Join(run, ",")), " | ")
	}
	want := canonical(prompts)
	for range 100 {
		shuffled := slices.Clone(prompts)
		rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		order := relay.Order(shuffled)
		for k := 1; k < len(order); k++ {
			a, b := shuffled[order[k-1]], shuffled[order[k]]
			if a.Position == b.Position && a.Priority == b.Priority && order[k-1] > order[k] {
				t.Fatalf("equal priorities shuffled: %s before %s", a.ID, b.ID)
			}
		}
		if got := canonical(shuffled); got != want {
			t.Fatalf("a shuffle assembles otherwise:\n%s\nwant\n%s", got, want)
		}
		// The assembled text is the prompts in Order, joined.
		var sys, user []string
		for _, i := range order {
			if shuffled[i].Position == relay.User {
				user = append(user, shuffled[i].Content)
			} else {
				sys = append(sys, shuffled[i].Content)
			}
		}
		r := relay.Assemble(shuffled)
		if r.System.PlainText("") != strings.Join(sys, "\n\n") || r.Messages[0].Content.Text != strings.Join(user, "\n\n") {
			t.Fatal("Assemble does not follow Order")
		}
		// Assembling the ordered list again changes nothing.
		again := make([]relay.Prompt, len(order))
		for k, i := range order {
			again[k] = shuffled[i]
		}
		if a := relay.Assemble(again); a.System.PlainText("") != r.System.PlainText("") || a.Messages[0].Content.Text != r.Messages[0].Content.Text {
			t.Fatal("assembling the ordered prompts moved them")
		}
	}
}

func TestAssembleLeavesPromptsAlone(t *testing.T) {
	rc := rich()
	before := snapshot(t, rc)
	req := relay.Assemble(rc.Prompts)
	if snapshot(t, rc) != before {
		t.Fatal("Assemble changed its input")
	}
	// style's condition on x fails; q renders its variable.
	if req.System.PlainText("") != "You audit code for security issues." || req.Messages[0].Content.Text != "Check pay for security holes." {
		t.Fatalf("request %+v", req)
	}
}

func TestRedactorCoversEveryField(t *testing.T) {
	r, err := relay.NewRedactor(relay.RedactorOptions{Emails: true})
	if err != nil {
		t.Fatal(err)
	}
	secret := "sk-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
	rc := &relay.Context{Prompts: []relay.Prompt{{ID: "a", Content: "c " + secret, Description: "d " + secret,
		Variables: map[string]string{"k": secret}, Examples: []relay.Example{{Input: secret, Output: "ann@example.com"}},
		Metadata: map[string]any{"m": []any{map[string]any{"deep": "token " + secret}}, "n": 5}}}}
	out, trace, err := relay.Relay(context.Background(), rc, r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "ann@") {
		t.Fatalf("a secret survived: %s", b)
	}
	if strings.Count(string(b), "[REDACTED:api_key]") != 5 || !strings.Contains(string(b), "[REDACTED:email]") {
		t.Fatalf("redacted %s", b)
	}
	if fmt.Sprint(trace.Steps[0].Notes) != "[redacted api_key×5, email×1]" {
		t.Fatalf("notes %v", trace.Steps[0].Notes)
	}
	if !strings.Contains(snapshot(t, rc), secret) {
		t.Fatal("the input was redacted in place")
	}
	// Text without secrets is untouched, e-mails stay unless enabled.
	plain, _ := relay.NewRedactor(relay.RedactorOptions{})
	for _, s := range []string{"nothing here", "ann@example.com", "sk-short", "a skeleton key", "bearer of news", "the bearer instrument", "ghp_short"} {
		if got, found := plain.Redact(s); got != s || found != nil {
			t.Errorf("%q became %q (%v)", s, got, found)
		}
	}
}

func TestNarrowerRejectsUnknownPositions(t *testing.T) {
	_, _, err := relay.Relay(context.Background(), rich(), &relay.ScopeNarrower{AllowedPositions: []relay.Position{"sytem"}})
	if !errors.Is(err, relay.ErrTransformFailed) || !strings.Contains(err.Error(), `allowed_positions[0]: unknown position "sytem"`) {
		t.Fatalf("err %v", err)
	}
}

func TestNoteOutsideARelay(t *testing.T) {
	relay.Note(context.Background(), "nothing happens %d", 1)
}

func TestValidateLimits(t *testing.T) {
	rc := &relay.Context{Prompts: []relay.Prompt{{ID: "a", Content: strings.Repeat("x", 11)}, {ID: "b", Content: "x"}}}
	for _, c := range []struct {
		lim  relay.Limits
		want string
	}{
		{relay.Limits{MaxPrompts: 1}, "prompts: 2 prompts; the limit is 1"},
		{relay.Limits{MaxContentBytes: 10}, "prompts[0].content: 11 bytes; the limit is 10"},
	} {
		err := rc.Validate(c.lim)
		if !errors.Is(err, &relay.Error{Code: relay.CodeTooLarge}) || err.Error() != c.want {
			t.Errorf("%+v: %v, want %s", c.lim, err, c.want)
		}
	}
	if err := rc.Validate(relay.Limits{}); err != nil {
		t.Fatal(err)
	}
	bad := &relay.Context{Memory: map[string]any{"f": func() {}}}
	if err := bad.Validate(relay.Limits{}); err == nil || !strings.Contains(err.Error(), "memory.f: a func() is not a JSON-compatible value") {
		t.Fatalf("err %v", err)
	}
	if _, err := relay.DecodeContext([]byte(`{"prompts":[]}`), relay.Limits{MaxBytes: 5}); !errors.Is(err, &relay.Error{Code: relay.CodeTooLarge}) {
		t.Fatalf("err %v", err)
	}
}

func TestDecodeContextNormalises(t *testing.T) {
	rc, err := relay.DecodeContext([]byte(`{"source_agent":"A","prompts":[{"id":"a","content":"x","metadata":{"n":3,"f":1.5,"big":1e30,"l":[1,{"k":2}]}}],"memory":{"m":7}}`), relay.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	m := rc.Prompts[0].Metadata
	if m["n"] != int64(3) || m["f"] != 1.5 || m["big"] != 1e30 || m["l"].([]any)[1].(map[string]any)["k"] != int64(2) || rc.Memory["m"] != int64(7) {
		t.Fatalf("metadata %#v memory %#v", m, rc.Memory)
	}
	if rc.Prompts[0].Position != relay.DefaultPosition {
		t.Fatalf("position %q", rc.Prompts[0].Position)
	}
}

func TestTraceInAnyOrder(t *testing.T) {
	in := &relay.Context{}
	for i := range 5 {
		in.Prompts = append(in.Prompts, relay.Prompt{ID: fmt.Sprint("p", i), Content: "x"})
	}
	cases := []struct {
		name string
		f    func(ps []relay.Prompt) []relay.Prompt
		want string
	}{
		{"reversed, one changed", func(ps []relay.Prompt) []relay.Prompt {
			slices.Reverse(ps)
			ps[0].Content = "y"
			return ps
		}, "added [] removed [] changed [p4]"},
		{"moved and dropped", func(ps []relay.Prompt) []relay.Prompt {
			return []relay.Prompt{ps[3], ps[0], {ID: "n", Content: "n"}}
		}, "added [n] removed [p1 p2 p4] changed []"},
		{"many added between", func(ps []relay.Prompt) []relay.Prompt {
			var out []relay.Prompt
			for i, p := range ps {
				out = append(out, p, relay.Prompt{ID: fmt.Sprint("a", i), Content: "a"}, relay.Prompt{ID: fmt.Sprint("b", i), Content: "b"})
			}
			return out[2:]
		}, "added [b0 a1 b1 a2 b2 a3 b3 a4 b4] removed [p0] changed []"},
		{"added at the end, last dropped", func(ps []relay.Prompt) []relay.Prompt {
			return append(ps[:4], relay.Prompt{ID: "z", Content: "z"})
		}, "added [z] removed [p4] changed []"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := fn{"t", func(_ context.Context, _ *relay.Context, ps []relay.Prompt) ([]relay.Prompt, error) {
				return c.f(ps), nil
			}}
			_, trace, err := relay.Relay(context.Background(), in, tr)
			if err != nil {
				t.Fatal(err)
			}
			s := trace.Steps[0]
			slices.Sort(s.Added)
			slices.Sort(s.Removed)
			want := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(c.want))
			got := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(fmt.Sprintf("added %v removed %v changed %v", s.Added, s.Removed, s.Changed)))
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("got %+v, want %s", s, c.want)
			}
		})
	}
}

func TestNarrowerFoldsUnicode(t *testing.T) {
	ps := []relay.Prompt{
		{ID: "kelvin", Content: "a \u212Aey point"}, // KELVIN SIGN lower-cases to k
		{ID: "accent", Content: "ÉTÉ chaud"},
		{ID: "ascii", Content: "The KEY is here"},
		{ID: "none", Content: "nothing \u00e9 to see"},
		{ID: "short", Content: "ke"},
	}
	n := &relay.ScopeNarrower{KeywordFilter: []string{"key", "été"}}
	out, err := n.Transform(context.Background(), &relay.Context{}, relay.ClonePrompts(ps))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range out {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, " ") != "kelvin accent ascii" {
		t.Fatalf("kept %v", ids)
	}
}
