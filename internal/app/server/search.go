package server

import (
	"context"
	"encoding/json"
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

// searchable computes the view text search matches (see store.Searchable)
// with the server's view cache and view slots.
func (s *Server) searchable() store.Searchable {
	return store.Searchable{Views: s.views, Slot: s.viewSlot, Now: s.opts.Now}
}

// rankBoundNote says that a search ranked only the newest matches.
func rankBoundNote(sq store.SearchQuery) string {
	k, _ := store.RankBound(sq)
	return fmt.Sprintf("more than %d breadcrumbs matched: search ranks at most the %d newest matching breadcrumbs of the caller's owner; narrow the query to reach older ones", k, k)
}
