package relay

import (
	"context"
	"fmt"
	"slices"

	"github.com/ctxkit/ctxkit/internal/tokencount"
	"github.com/tiktoken-go/tokenizer"
)

// DefaultEncoding is the token encoding TokenBudget counts with when none
// is named (o200k_base); view.Measure counts with the same one. TokenBudget also
// accepts cl100k_base, p50k_base and r50k_base, all offline.
const DefaultEncoding = tokencount.Default

// CountTokens counts the tokens of a prompt as TokenBudget does: the text
// Assemble makes of it (Render: its content and examples with the
// {{variables}} expanded) in the named encoding ("" for DefaultEncoding);
// 0 when its conditions fail, as Assemble leaves it out.
func CountTokens(encoding string, p *Prompt) (int, error) {
	c, err := tokencount.Codec(encoding)
	if err != nil {
		return 0, err
	}
	return countTokens(c, p)
}

func countTokens(c tokenizer.Codec, p *Prompt) (int, error) {
	if !p.Holds() {
		return 0, nil
	}
	return c.Count(p.Render())
}

// TokenBudget drops prompts until the rest fit MaxTokens, counted with a
// real tokenizer on the text Assemble makes of them (see CountTokens). The
// prompts' text with their variables expanded may come to at most the
// default Limits.MaxRenderedBytes; past it the relay fails (CodeTooLarge)
// rather than render it. It drops the lowest priority first and,
// among equal priorities, the later prompt first; it never drops a prompt
// the relay injected or one in the system position. When those alone are
// over the budget the relay fails. What it drops, and the totals, are
// notes in the trace.
type TokenBudget struct {
	MaxTokens int
	Encoding  string // "" is DefaultEncoding
}

// Name is "token_budget".
func (t *TokenBudget) Name() string { return TypeTokenBudget }

// Transform fits the prompts to the budget. The prompts it keeps pass
// through untouched and in order (the relay's trace counts on it).
func (t *TokenBudget) Transform(ctx context.Context, rc *Context, prompts []Prompt) ([]Prompt, error) {
	if t.MaxTokens <= 0 {
		return nil, fmt.Errorf("max_tokens must be positive, not %d", t.MaxTokens)
	}
	c, err := tokencount.Codec(t.Encoding)
	if err != nil {
		return nil, err
	}
	limit, size := Limits{}.withDefaults().MaxRenderedBytes, 0
	for i := range prompts {
		if p := &prompts[i]; p.Holds() {
			if size += p.renderedSize(); size > limit {
				return nil, tooLargeRender(i, p, size, limit)
			}
		}
	}
	counts := make([]int, len(prompts))
	total := 0
	var candidates []int
	for i := range prompts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if counts[i], err = countTokens(c, &prompts[i]); err != nil {
			return nil, fmt.Errorf("prompts[%d]: counting tokens: %v", i, err)
		}
		total += counts[i]
		if !prompts[i].Injected() && prompts[i].Position != System {
			candidates = append(candidates, i)
		}
	}
	before := total
	if total <= t.MaxTokens {
		Note(ctx, "%d tokens fit the budget of %d", total, t.MaxTokens)
		return prompts, nil
	}
	slices.SortStableFunc(candidates, func(a, b int) int {
		if pa, pb := prompts[a].Priority, prompts[b].Priority; pa != pb {
			return cmpInt(pa, pb)
		}
		return cmpInt(b, a) // later first
	})
	drop := make([]bool, len(prompts))
	for _, i := range candidates {
		if total <= t.MaxTokens {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		drop[i] = true
		total -= counts[i]
		Note(ctx, "dropped %s (priority %d, %d tokens)", prompts[i].ID, prompts[i].Priority, counts[i])
	}
	if total > t.MaxTokens {
		return nil, fmt.Errorf("the budget of %d tokens cannot be met: %d tokens remain in prompts it never drops (system position or injected by the relay)", t.MaxTokens, total)
	}
	out := prompts[:0]
	for i, p := range prompts {
		if !drop[i] {
			out = append(out, p)
		}
	}
	Note(ctx, "%d tokens before, %d after, budget %d", before, total, t.MaxTokens)
	return out, nil
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
