package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/view"
)

// What text of a breadcrumb search matches: the text of its LLM view, so
// a field the view hides is never searchable. Where the view can be known
// without running rules (no hints, or hints with include and exclude
// alone) the store derives it from the context whenever it indexes the
// breadcrumb. Where it takes transform rules, which wait for capacity and
// may run up to their deadline, the writer computes it before the write
// (Searchable.Text) and hands it over in Breadcrumb.SearchText; when it
// cannot, the breadcrumb is searched on its title, description and tags
// alone, never on the filtered context, which is not what the view shows.

// Searchable computes the view text of breadcrumbs whose hints have
// transform rules, for a writer that stores them (an HTTP server). Its
// zero value compiles hints on each call, runs views at once, and dates
// revisions with time.Now.
type Searchable struct {
	Views *view.Cache // compiles hints; nil compiles them on each call
	// Slot waits for room to run a view's rules and returns its release;
	// nil runs at once. When it fails (ctx ended), there is no text.
	Slot func(ctx context.Context) (release func(), err error)
	Now  func() time.Time // the time of a revision; nil is time.Now
}

// Text is the text of b's view that search matches, computed before b is
// written as version. It is empty when b's hints have no transform rules
// (the store derives the text then) and when the view cannot be computed
// now: hints that do not compile, no slot before ctx ends, a rule that
// fails or runs out of time.
func (s Searchable) Text(ctx context.Context, b *Breadcrumb, version int64) string {
	if len(b.LLMHints) == 0 || string(b.LLMHints) == "null" || !hasTransform(b.LLMHints) {
		return ""
	}
	compile := view.Compile
	if s.Views != nil {
		compile = s.Views.Compile
	}
	v, err := compile(b.LLMHints)
	if err != nil {
		return ""
	}
	doc, err := view.DecodeJSON(b.Context)
	if err != nil {
		return ""
	}
	if s.Slot != nil {
		release, err := s.Slot(ctx)
		if err != nil {
			return ""
		}
		defer release()
	}
	res := v.Apply(ctx, view.Record{ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags,
		SchemaName: b.SchemaName, Version: version, Context: doc})
	if res.Status != view.StatusOK {
		return ""
	}
	return viewText(res.Value)
}

// errViewBasisChanged aborts an update whose record changed after its
// search text was computed, so it can be computed again.
var errViewBasisChanged = errors.New("the breadcrumb changed while its view was computed")

// Update is st.Update(ctx, a, id, want, m) that also stores the new
// version's search text (Text), computed before the store's write
// transaction: running a view's rules waits for a slot and may take the
// rules' whole deadline, which must not hold the store's write lock. It
// reads the current version, applies m to a copy, computes the text of
// that copy's view, then updates with m and that text if the record is
// still the version the text was computed from. If it changed meanwhile,
// this happens once more; after that the update goes ahead without a
// text, and search then matches the breadcrumb on its title, description
// and tags alone until its next write.
func (s Searchable) Update(ctx context.Context, st Store, a Actor, id string, want int64, m Mutation) (Breadcrumb, error) {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	for attempt := 0; ; attempt++ {
		text, basis := "", int64(-1)
		if cur, err := st.Get(ctx, a, id); err == nil && cur.OwnerID == a.OwnerID && (want == 0 || cur.Version == want) {
			if next, err := Revise(a, cur, want, m, now()); err == nil {
				text, basis = s.Text(ctx, &next, next.Version), cur.Version
			}
		}
		last := attempt > 0 || basis < 0 || text == ""
		b, err := st.Update(ctx, a, id, want, func(x *Breadcrumb) error {
			v := x.Version
			if err := m(x); err != nil {
				return err
			}
			switch {
			case v == basis: // m is a function of the record: the same input, the same new version
				x.SearchText = text
			case !last:
				return errViewBasisChanged
			}
			return nil
		})
		if errors.Is(err, errViewBasisChanged) {
			continue
		}
		return b, err
	}
}

// fallbackSearchText is the text of b's view when it can be known without
// running rules: the whole context without hints, the context filtered by
// include and exclude when the hints have no transform rules (the view is
// then exactly that). With transform rules it is empty: the filtered
// context is not the view, and a field the rules drop (a template that
// leaves out "card") must not become searchable. Title, description and
// tags stay searchable.
func fallbackSearchText(b *Breadcrumb) string {
	doc, err := view.DecodeJSON(b.Context)
	if err != nil {
		return ""
	}
	if len(b.LLMHints) > 0 && string(b.LLMHints) != "null" {
		if hasTransform(b.LLMHints) {
			return ""
		}
		v, err := view.Compile(b.LLMHints)
		if err != nil {
			return ""
		}
		doc = v.Filter(doc)
	}
	return viewText(doc)
}

// hasTransform reports whether hints have transform rules (or cannot be
// read, which counts as having them): a view that only a rule engine can
// compute.
func hasTransform(hints []byte) bool {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(hints, &top); err != nil {
		return true
	}
	t, ok := top["transform"]
	if !ok || string(t) == "null" {
		return false
	}
	var rules map[string]json.RawMessage
	if err := json.Unmarshal(t, &rules); err != nil {
		return true
	}
	return len(rules) > 0
}

// viewText is the searchable text of a decoded JSON value (a view): object
// keys and scalar values, in key order, one per line.
func viewText(v any) string {
	var sb strings.Builder
	var walk func(v any)
	walk = func(v any) {
		if sb.Len() > 2*MaxSearchBytes {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				sb.WriteString(k)
				sb.WriteByte('\n')
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			sb.WriteString(x)
			sb.WriteByte('\n')
		case nil:
		case json.Number, bool, float64:
			fmt.Fprintf(&sb, "%v\n", x)
		default:
			fmt.Fprintf(&sb, "%v\n", x)
		}
	}
	walk(v)
	return sb.String()
}
