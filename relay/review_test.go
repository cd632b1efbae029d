package relay

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func sample(n int) []Prompt {
	ps := make([]Prompt, n)
	for i := range ps {
		eq, yes := "Go", true
		ps[i] = Prompt{ID: fmt.Sprintf("p%d", i), Content: fmt.Sprintf("content %d", i), Position: positions[i%len(positions)],
			Variables:  map[string]string{"lang": "Go"},
			Conditions: []Condition{{Variable: "lang", Equals: &eq}, {Variable: "x", Exists: &yes}},
			Examples:   []Example{{Input: "in", Output: "out"}},
			Metadata: map[string]any{"n": i, "f": 0.5, "tags": []any{"a", int64(2), map[string]any{"k": true}},
				"strs": []string{"x"}, "vars": map[string]string{"a": "b"}, "none": nil}}
	}
	return ps
}

// pick is a random prompt of ps as sample made it (with every field), or
// nil.
func pick(r *rand.Rand, ps []Prompt) *Prompt {
	p := &ps[r.IntN(len(ps))]
	if len(p.Conditions) < 2 || p.Conditions[0].Equals == nil || len(p.Examples) == 0 || p.Metadata["tags"] == nil || p.Variables == nil {
		return nil
	}
	return p
}

// mutations change a copy of the prompts the ways transformers do, and
// the ways they break the rules.
var mutations = []func(r *rand.Rand, ps []Prompt) []Prompt{
	func(r *rand.Rand, ps []Prompt) []Prompt { ps[r.IntN(len(ps))].Content += "!"; return ps },
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Metadata["n"] = -1
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Metadata["tags"].([]any)[2].(map[string]any)["k"] = false
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			*p.Conditions[0].Equals = "Rust"
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Examples[0].Output = "x"
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Variables["lang"] = "C"
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt { i := r.IntN(len(ps)); return slices.Delete(ps, i, i+1) },
	func(r *rand.Rand, ps []Prompt) []Prompt {
		return slices.Insert(ps, r.IntN(len(ps)+1), Prompt{ID: fmt.Sprintf("new%d", r.IntN(12)), Content: "new"})
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		i, j := r.IntN(len(ps)), r.IntN(len(ps))
		ps[i], ps[j] = ps[j], ps[i]
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt { return append(ps, ps[r.IntN(len(ps))]) },
	func(r *rand.Rand, ps []Prompt) []Prompt { ps[r.IntN(len(ps))].ID = ""; return ps },
	func(r *rand.Rand, ps []Prompt) []Prompt { ps[r.IntN(len(ps))].Position = "sytem"; return ps },
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Metadata["bad"] = math.NaN()
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Metadata["bad"] = struct{}{}
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Conditions[1].Equals = new(string)
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt {
		if p := pick(r, ps); p != nil {
			p.Variables["9"] = ""
		}
		return ps
	},
	func(r *rand.Rand, ps []Prompt) []Prompt { ps[r.IntN(len(ps))].Metadata = map[string]any{}; return ps },
	func(r *rand.Rand, ps []Prompt) []Prompt { ps[r.IntN(len(ps))].Metadata = nil; return ps },
}

// review's walk in order must give what checking every prompt and
// diffing by ID gives: the same step, or the same error.
func TestReviewMatchesFullCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	paths := map[bool]int{}
	for round := range 4000 {
		before := sample(1 + r.IntN(20))
		after := ClonePrompts(before)
		for range 1 + r.IntN(4) {
			if len(after) == 0 {
				break
			}
			after = mutations[r.IntN(len(mutations))](r, after)
		}
		got, gotErr := review(before, after, false)
		var want Step
		wantErr := checkShape(after)
		if wantErr == nil {
			want = diffByID(before, after)
			wantErr = checkChanged(after, want)
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("round %d: error %v, want %v", round, gotErr, wantErr)
		}
		if wantErr == nil && fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("round %d: step %+v, want %+v", round, got, want)
		}
		_, fast := diffInOrder(before, after, true, false)
		paths[fast]++
	}
	if paths[true] < 200 || paths[false] < 200 {
		t.Fatalf("the fast path ran %d times, the full one %d", paths[true], paths[false])
	}
}

// A copy shares nothing that can change with its original, and no two of
// its slices share storage an append could reach.
func TestCloneSharesNothing(t *testing.T) {
	orig := sample(3)
	ref := sample(3)
	c := ClonePrompts(orig)
	for i := range c {
		if !EqualPrompts(&c[i], &orig[i]) {
			t.Fatalf("copy %d differs", i)
		}
	}
	for i := range c {
		p := &c[i]
		p.Variables["lang"] = "C"
		*p.Conditions[0].Equals = "C"
		*p.Conditions[1].Exists = false
		p.Examples[0].Input = "x"
		p.Examples = append(p.Examples, Example{Input: "more"})
		tags := p.Metadata["tags"].([]any)
		tags[0] = "z"
		tags[2].(map[string]any)["k"] = 1
		p.Metadata["tags"] = append(tags, "more")
		p.Metadata["strs"].([]string)[0] = "y"
		p.Metadata["vars"].(map[string]string)["a"] = "c"
		p.Metadata["n"] = 99
	}
	for i := range orig {
		if !EqualPrompts(&orig[i], &ref[i]) {
			t.Fatalf("original %d changed: %+v", i, orig[i])
		}
	}
	// Appending to the first copy's slices left the next copy's alone.
	if c[1].Examples[0].Input != "x" || len(c[1].Examples) != 2 || c[1].Metadata["tags"].([]any)[0] != "z" {
		t.Fatalf("copy 1: %+v", c[1])
	}
	// An empty list with room to grow is not shared either.
	room := []Prompt{{ID: "r", Content: "r", Metadata: map[string]any{"l": make([]any, 0, 4)}}}
	a, b := ClonePrompts(room)[0], ClonePrompts(room)[0]
	la := append(a.Metadata["l"].([]any), "a")
	lb := append(b.Metadata["l"].([]any), "b")
	if la[0] != "a" || lb[0] != "b" {
		t.Fatalf("two copies share a list: %v %v", la, lb)
	}
	// Empty and nil lists stay as they were.
	e := ClonePrompts([]Prompt{{ID: "e", Content: "e", Conditions: []Condition{}, Examples: []Example{},
		Metadata: map[string]any{"l": []any{}, "n": []any(nil), "s": []string{}}}})[0]
	if e.Conditions == nil || e.Examples == nil || e.Metadata["l"].([]any) == nil || e.Metadata["n"].([]any) != nil ||
		e.Metadata["s"].([]string) == nil {
		t.Fatalf("empty lists: %#v", e)
	}
}

// The typed relay of the benchmark's 100 prompts allocates a bounded
// number of times, far below what the same relay with JSON round trips
// needs: a guard that does not depend on timing. Each of the two
// transformers gets a copy of the prompts, about 7 allocations a prompt
// (the maps of its variables and metadata, the slice in its metadata);
// the rest of the relay allocates a few dozen times. A JSON round trip
// allocates about 60 times a prompt.
func TestRelayAllocations(t *testing.T) {
	rc, ts := benchContext(), benchPipeline()
	run := func(cp copier) float64 {
		return testing.AllocsPerRun(10, func() {
			if _, _, err := relay(context.Background(), rc, cp, ts); err != nil {
				t.Fatal(err)
			}
		})
	}
	typed, viaJSON := run(typedCopy), run(jsonCopy)
	t.Logf("allocations per relay: typed %.0f, json %.0f", typed, viaJSON)
	copies := len(rc.Prompts) + len(rc.Prompts) + 1 // the injector's and the narrower's
	if bound := float64(8*copies + 100); typed > bound {
		t.Errorf("a typed relay allocates %.0f times; the bound is %.0f", typed, bound)
	}
	if viaJSON < 6*typed {
		t.Errorf("the JSON relay allocates %.0f times, under 6 times the typed relay's %.0f", viaJSON, typed)
	}
}
