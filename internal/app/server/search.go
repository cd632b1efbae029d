package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// SearchItem is one search result: the breadcrumb's LLM view and its score.
type SearchItem struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Description string          `json:"description,omitempty"`
	Tags        []string        `json:"tags"`
	SchemaName  string          `json:"schema_name,omitempty"`
	Version     int64           `json:"version"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Context     json.RawMessage `json:"context"`     // the view
	ViewStatus  envelope.Status `json:"view_status"` // OK or FALLBACK
	ViewMessage string          `json:"view_message,omitempty"`
	Score       float64         `json:"score"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	sq := store.SearchQuery{Text: q.Get("q"), Tags: q["tag"], SchemaName: q.Get("schema_name")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxSearchLimit {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "limit", "must be an integer from 1 to %d", store.MaxSearchLimit)
		}
		sq.Limit = n
	}
	res, err := s.runSearch(r.Context(), p, sq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// runSearch searches the store and computes each hit's view.
func (s *Server) runSearch(ctx context.Context, p Principal, sq store.SearchQuery) (envelope.Result[SearchItem], error) {
	if len(sq.Text) > store.MaxQueryBytes {
		return envelope.Result[SearchItem]{}, errorAt(http.StatusBadRequest, store.CodeInvalid, "q", "%d bytes; the limit is %d", len(sq.Text), store.MaxQueryBytes)
	}
	sq.MaxRanked = s.opts.SearchMaxRanked
	found, err := s.opts.Store.Search(ctx, actor(p), sq)
	if err != nil {
		return envelope.Result[SearchItem]{}, err
	}
	hits := found.Hits
	items := make([]SearchItem, 0, len(hits))
	var fellBack []string
	for i := range hits {
		b := &hits[i].Breadcrumb
		v, err := s.applyView(ctx, b)
		if err != nil {
			return envelope.Result[SearchItem]{}, err
		}
		items = append(items, SearchItem{ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags,
			SchemaName: b.SchemaName, Version: b.Version, UpdatedAt: b.UpdatedAt, Context: v.value,
			ViewStatus: viewStatus(v.status), ViewMessage: v.reason, Score: hits[i].Score})
		if v.status != view.StatusOK {
			fellBack = append(fellBack, b.ID)
		}
	}
	opts := []envelope.Option{envelope.WithSource(envelope.SourceStore)}
	var notes []string
	if found.Bounded {
		notes = append(notes, rankBoundNote(sq))
	}
	if len(fellBack) > 0 {
		notes = append(notes, "the views of these items fell back to their filtered context (see view_status): "+strings.Join(fellBack, ", "))
	}
	if len(notes) > 0 {
		opts = append(opts, envelope.WithMessage(strings.Join(notes, "; ")))
	}
	return envelope.OK(items, opts...), nil
}

// searchText is the text of b's view, which search matches: computed when
// a breadcrumb is written, so a field the view hides is never searchable.
// Empty when there are no hints or no transform rules (the store then
// derives the same text from the context) and when the view cannot be
// computed now (hints that do not compile, no view slot before ctx ends, a
// rule that fails or runs out of time): the store then searches the
// breadcrumb on its title, description and tags alone, never on the
// filtered context, which is not what the view shows.
// version is the version b will have when written (its view may show it).
func (s *Server) searchText(ctx context.Context, b *store.Breadcrumb, version int64) string {
	if len(b.LLMHints) == 0 || string(b.LLMHints) == "null" || !store.HasTransform(b.LLMHints) {
		return ""
	}
	v, err := s.views.Compile(b.LLMHints)
	if err != nil {
		return ""
	}
	doc, err := view.DecodeJSON(b.Context)
	if err != nil {
		return ""
	}
	release, err := s.viewSlot(ctx)
	if err != nil {
		return ""
	}
	defer release()
	res := v.Apply(ctx, view.Record{ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags,
		SchemaName: b.SchemaName, Version: version, Context: doc})
	if res.Status != view.StatusOK {
		return ""
	}
	return store.ViewText(res.Value)
}

// errViewBasisChanged aborts an update whose record changed after its
// search text was computed, so it can be computed again.
var errViewBasisChanged = errors.New("the breadcrumb changed while its view was computed")

// updateWithSearchText is Store.Update(a, id, want, m) that also stores
// the new version's search text, computed before the store's write
// transaction (running a view's rules waits for a view slot and may take
// the rules' whole deadline, which must not hold the store's write lock):
// it reads the current version, applies m to a copy, computes the text of
// that copy's view, then updates with m and that text, if the record is
// still the version the text was computed from. If it changed meanwhile,
// this happens once more; after that the update goes ahead without a text,
// and search then matches the breadcrumb on its title, description and
// tags alone until its next write (store.FallbackSearchText).
func (s *Server) updateWithSearchText(ctx context.Context, a store.Actor, id string, want int64, m store.Mutation) (store.Breadcrumb, error) {
	for attempt := 0; ; attempt++ {
		text, basis := "", int64(-1)
		if cur, err := s.opts.Store.Get(ctx, a, id); err == nil && cur.OwnerID == a.OwnerID && (want == 0 || cur.Version == want) {
			if next, err := store.Revise(a, cur, want, m, s.opts.Now()); err == nil {
				text, basis = s.searchText(ctx, &next, next.Version), cur.Version
			}
		}
		last := attempt > 0 || basis < 0 || text == ""
		b, err := s.opts.Store.Update(ctx, a, id, want, func(x *store.Breadcrumb) error {
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

// rankBoundNote says that a search ranked only the newest matches.
func rankBoundNote(sq store.SearchQuery) string {
	k, _ := store.RankBound(sq)
	return fmt.Sprintf("more than %d breadcrumbs matched: search ranks at most the %d newest matching breadcrumbs of the caller's owner; narrow the query to reach older ones", k, k)
}
