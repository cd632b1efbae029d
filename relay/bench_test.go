package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// jsonCopy deep-copies through a JSON round trip: the baseline the typed
// copy is measured against. relay makes its copies at the same points with
// either copier (one of the prompts and one of the context for each
// transformer) and does the same checks, comparisons and transforms, so
// only the copying differs.
var jsonCopy = copier{
	prompts: func(ps []Prompt) []Prompt {
		b, err := json.Marshal(ps)
		if err != nil {
			panic(err)
		}
		var out []Prompt
		if err := json.Unmarshal(b, &out); err != nil {
			panic(err)
		}
		return out
	},
	context: func(rc *Context) *Context {
		c := *rc
		c.Prompts = nil
		b, err := json.Marshal(&c)
		if err != nil {
			panic(err)
		}
		var out Context
		if err := json.Unmarshal(b, &out); err != nil {
			panic(err)
		}
		return &out
	},
}

// benchContext is 100 prompts of 1 KB each, with metadata.
func benchContext() *Context {
	words := []string{"Security", "review", "of", "the", "Payment", "service:", "check", "auth,", "tokens", "and", "logging."}
	var text strings.Builder
	for i := 0; text.Len() < 1024; i++ {
		text.WriteString(words[i%len(words)])
		text.WriteByte(' ')
	}
	body := text.String()[:1024]
	rc := &Context{SourceAgent: "Orchestrator", TargetAgent: "Analyzer", Task: "Audit the payment service",
		Constraints: []string{"read only", "cite files"},
		Memory:      map[string]any{"repo": "acme/pay", "limits": map[string]any{"files": 20}}}
	for i := range 100 {
		pos := positions[i%len(positions)]
		content := body
		if i%3 == 0 {
			content = strings.ReplaceAll(body, "Security", "Styling")
		}
		rc.Prompts = append(rc.Prompts, Prompt{
			ID: fmt.Sprintf("p%03d", i), Name: "prompt", Position: pos, Content: content, Priority: i % 5,
			Variables: map[string]string{"service": "pay"},
			Metadata: map[string]any{"owner": "team-sec", "version": i, "weight": 0.5, "tags": []any{"a", "b", "c"},
				"source": map[string]any{"file": "prompts.yaml", "line": 10 + i}},
		})
	}
	return rc
}

func benchPipeline() []Transformer {
	return []Transformer{NewContextInjector(), &ScopeNarrower{KeywordFilter: []string{"security"}}}
}

// BenchmarkRelayCopy relays 100 prompts of 1 KB through an injector and a
// narrower, copying by type and, for comparison, by a JSON round trip.
func BenchmarkRelayCopy(b *testing.B) {
	for _, c := range []struct {
		name string
		cp   copier
	}{{"typed", typedCopy}, {"json", jsonCopy}} {
		b.Run(c.name, func(b *testing.B) {
			rc, ts := benchContext(), benchPipeline()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := relay(context.Background(), rc, c.cp, ts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRelayCopyRatio runs both copies in each iteration and reports
// how many times slower the JSON round trip is (json/typed).
func BenchmarkRelayCopyRatio(b *testing.B) {
	rc, ts := benchContext(), benchPipeline()
	const reps = 20
	var typed, viaJSON time.Duration
	for b.Loop() {
		for _, c := range []struct {
			cp  copier
			sum *time.Duration
		}{{typedCopy, &typed}, {jsonCopy, &viaJSON}} {
			start := time.Now()
			for range reps {
				if _, _, err := relay(context.Background(), rc, c.cp, ts); err != nil {
					b.Fatal(err)
				}
			}
			*c.sum += time.Since(start)
		}
	}
	n := float64(b.N * reps)
	b.ReportMetric(float64(typed.Nanoseconds())/n, "typed-ns/relay")
	b.ReportMetric(float64(viaJSON.Nanoseconds())/n, "json-ns/relay")
	b.ReportMetric(float64(viaJSON)/float64(typed), "json/typed")
}

// BenchmarkAssemble orders and renders 100 prompts of 1 KB.
func BenchmarkAssemble(b *testing.B) {
	prompts := benchContext().Prompts
	for b.Loop() {
		Assemble(prompts)
	}
}

// BenchmarkTokenBudget counts 100 prompts of 1 KB and drops to fit.
func BenchmarkTokenBudget(b *testing.B) {
	rc := benchContext()
	ts := []Transformer{&TokenBudget{MaxTokens: 10_000}}
	if _, _, err := Relay(context.Background(), rc, ts...); err != nil { // loads the encoding
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := Relay(context.Background(), rc, ts...); err != nil {
			b.Fatal(err)
		}
	}
}

// The JSON baseline relays the same prompts: the comparison is fair.
func TestJSONCopyBaselineAgrees(t *testing.T) {
	rc, ts := benchContext(), benchPipeline()
	a, ta, err := relay(context.Background(), rc, typedCopy, ts)
	if err != nil {
		t.Fatal(err)
	}
	j, tj, err := relay(context.Background(), rc, jsonCopy, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(j) || len(a) < 50 || len(a) == len(rc.Prompts)+1 {
		t.Fatalf("typed %d prompts, json %d, input %d", len(a), len(j), len(rc.Prompts))
	}
	for i := range a {
		if a[i].ID != j[i].ID || a[i].Content != j[i].Content {
			t.Fatalf("prompt %d differs", i)
		}
	}
	// The round trip turns integers into float64; the typed copy does not.
	if _, ok := j[1].Metadata["version"].(float64); !ok {
		t.Fatalf("json copy kept %T", j[1].Metadata["version"])
	}
	if _, ok := a[1].Metadata["version"].(int); !ok {
		t.Fatalf("typed copy made %T", a[1].Metadata["version"])
	}
	if fmt.Sprint(ta.Steps[1].Removed) != fmt.Sprint(tj.Steps[1].Removed) {
		t.Fatal("traces differ")
	}
}
