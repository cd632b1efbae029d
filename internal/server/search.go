package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// searchRoutes adds search, workspace search and MCP.
func (s *Server) searchRoutes(m *http.ServeMux) {
	m.Handle("GET /breadcrumbs/search", s.authed("", s.search))
	m.Handle("GET /workspace/search", s.authed("", s.workspaceSearch))
	s.mcpRoutes(m)
}

// SearchItem is one search result: the breadcrumb's LLM view and its score.
type SearchItem struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Description string          `json:"description,omitempty"`
	Tags        []string        `json:"tags"`
	SchemaName  string          `json:"schema_name,omitempty"`
	Version     int64           `json:"version"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Context     json.RawMessage `json:"context"` // the view
	ViewStatus  view.Status     `json:"view_status"`
	ViewMessage string          `json:"view_message,omitempty"`
	Score       float64         `json:"score"`
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	sq := store.SearchQuery{Text: q.Get("q"), Tags: q["tag"], SchemaName: q.Get("schema_name")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxSearchLimit {
			return errorf(http.StatusBadRequest, store.CodeInvalid, "limit: must be an integer from 1 to %d", store.MaxSearchLimit)
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
		return envelope.Result[SearchItem]{}, errorf(http.StatusBadRequest, store.CodeInvalid, "q: %d bytes; the limit is %d", len(sq.Text), store.MaxQueryBytes)
	}
	hits, err := s.opts.Store.Search(ctx, actor(p), sq)
	if err != nil {
		return envelope.Result[SearchItem]{}, err
	}
	items := make([]SearchItem, 0, len(hits))
	for i := range hits {
		b := &hits[i].Breadcrumb
		v, err := s.applyView(ctx, b)
		if err != nil {
			return envelope.Result[SearchItem]{}, err
		}
		items = append(items, SearchItem{ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags,
			SchemaName: b.SchemaName, Version: b.Version, UpdatedAt: b.UpdatedAt, Context: v.value,
			ViewStatus: v.status, ViewMessage: v.reason, Score: hits[i].Score})
	}
	return envelope.OK(items, envelope.WithSource(envelope.SourceStore)), nil
}

// searchText is the text of b's view, which search matches: computed when
// a breadcrumb is written, so a field the view hides is never searchable.
// Empty when there are no hints (the store then uses the whole context) or
// the view cannot be computed (the store then uses the context filtered by
// the hints' include and exclude, which is also what a view falls back to).
func (s *Server) searchText(ctx context.Context, b *store.Breadcrumb) string {
	if len(b.LLMHints) == 0 || string(b.LLMHints) == "null" {
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
		SchemaName: b.SchemaName, Version: b.Version + 1, Context: doc})
	return store.ViewText(res.Value)
}

// withSearchText is m followed by computing the new version's search text.
func (s *Server) withSearchText(ctx context.Context, m store.Mutation) store.Mutation {
	return func(b *store.Breadcrumb) error {
		if err := m(b); err != nil {
			return err
		}
		b.SearchText = s.searchText(ctx, b)
		return nil
	}
}
