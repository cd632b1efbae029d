package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// createRequest is a create body, in the shape RCRT accepts.
type createRequest struct {
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	SemanticVersion string          `json:"semantic_version"`
	Context         json.RawMessage `json:"context"`
	Tags            []string        `json:"tags"`
	SchemaName      string          `json:"schema_name"`
	LLMHints        json.RawMessage `json:"llm_hints"`
	Visibility      string          `json:"visibility"`
	Sensitivity     string          `json:"sensitivity"`
	TTL             string          `json:"ttl"`
	TTLType         string          `json:"ttl_type"`
	TTLConfig       *ttlConfig      `json:"ttl_config"`
}

type ttlConfig struct {
	Duration  string `json:"duration"`
	MaxReads  int64  `json:"max_reads"`
	ExpiresAt string `json:"expires_at"`
}

// expiry turns ttl, ttl_type and ttl_config into an expiry time and a read budget.
func expiry(ttl, typ string, cfg *ttlConfig, now time.Time) (*time.Time, int64, error) {
	if cfg == nil {
		cfg = &ttlConfig{}
	}
	at := func(field, s string) (*time.Time, error) {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return &t, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, errorAt(http.StatusBadRequest, store.CodeInvalid, field, "%q is neither an RFC 3339 time nor a positive duration such as \"2h\"", s)
		}
		t := now.Add(d)
		return &t, nil
	}
	notPast := func(t *time.Time, err error) (*time.Time, error) {
		if err == nil && t != nil && !t.After(now) {
			return nil, errorAt(http.StatusBadRequest, store.CodeInvalid, "ttl", "%s is already past", t.Format(time.RFC3339))
		}
		return t, err
	}
	needReads := func() (int64, error) {
		if cfg.MaxReads <= 0 {
			return 0, errorAt(http.StatusBadRequest, store.CodeInvalid, "ttl_config.max_reads", "a %s TTL needs a positive number of reads", typ)
		}
		return cfg.MaxReads, nil
	}
	when := func() (*time.Time, error) {
		switch {
		case cfg.Duration != "":
			return at("ttl_config.duration", cfg.Duration)
		case cfg.ExpiresAt != "":
			return at("ttl_config.expires_at", cfg.ExpiresAt)
		case ttl != "":
			return at("ttl", ttl)
		}
		return nil, errorAt(http.StatusBadRequest, store.CodeInvalid, "ttl_config", "a %s TTL needs a duration, an expires_at or a ttl", typ)
	}
	switch typ {
	case "":
		if ttl == "" {
			return nil, 0, nil
		}
		t, err := notPast(at("ttl", ttl))
		return t, 0, err
	case "never":
		return nil, 0, nil
	case "datetime", "duration":
		t, err := notPast(when())
		return t, 0, err
	case "usage":
		n, err := needReads()
		return nil, n, err
	case "hybrid":
		t, err := notPast(when())
		if err != nil {
			return nil, 0, err
		}
		n, err := needReads()
		return t, n, err
	}
	return nil, 0, errorAt(http.StatusBadRequest, store.CodeInvalid, "ttl_type", "%q is not one of never, datetime, duration, usage, hybrid", typ)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, p Principal) error {
	body, err := readBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req createRequest
	if err := s.parse(body, &req); err != nil {
		return err
	}
	exp, reads, err := expiry(req.TTL, req.TTLType, req.TTLConfig, s.opts.Now())
	if err != nil {
		return err
	}
	in := store.Breadcrumb{
		Title: req.Title, Description: req.Description, SemanticVersion: req.SemanticVersion,
		Context: req.Context, Tags: req.Tags, SchemaName: req.SchemaName, LLMHints: req.LLMHints,
		Visibility: store.Visibility(req.Visibility), Sensitivity: store.Sensitivity(req.Sensitivity),
		ExpiresAt: exp, MaxReads: reads,
	}
	if err := notExchange(&in); err != nil {
		return err
	}
	in.SearchText = s.searchable().Text(r.Context(), &in, 1)
	idem := store.Idempotency{Key: r.Header.Get("Idempotency-Key")}
	if idem.Key != "" {
		if len(idem.Key) > 256 {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "Idempotency-Key", "longer than 256 bytes")
		}
		if !plainID(idem.Key) {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "Idempotency-Key", "must be UTF-8 without control characters")
		}
		sum := sha256.Sum256(body)
		idem.RequestHash = hex.EncodeToString(sum[:])
	}
	b, replayed, err := s.opts.Store.Create(r.Context(), actor(p), in, idem)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", "/breadcrumbs/"+b.ID)
	writeJSON(w, http.StatusCreated, created{ID: b.ID, Version: b.Version})
	return nil
}

// created answers a create: the new breadcrumb's id and version.
type created struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

// summary is a breadcrumb in a list, without its context unless asked.
type summary struct {
	ID          string            `json:"id"`
	Title       string            `json:"title"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags"`
	SchemaName  string            `json:"schema_name,omitempty"`
	Version     int64             `json:"version"`
	Visibility  store.Visibility  `json:"visibility"`
	Sensitivity store.Sensitivity `json:"sensitivity"`
	UpdatedAt   time.Time         `json:"updated_at"`
	// CreatedBy and UpdatedBy name the agents that created the record and
	// made its current version, as the whole record does.
	CreatedBy string          `json:"created_by"`
	UpdatedBy string          `json:"updated_by"`
	Context   json.RawMessage `json:"context,omitempty"`
}

// listPage is a page of a list; next_cursor reads the next one.
type listPage struct {
	Items      []summary `json:"items"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	query := store.Query{Tags: q["tag"], SchemaName: q.Get("schema_name"), Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxLimit {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "limit", "must be an integer from 1 to %d", store.MaxLimit)
		}
		query.Limit = n
	}
	withContext := q.Get("include_context") == "true"
	page, err := s.opts.Store.List(r.Context(), actor(p), query)
	if err != nil {
		return err
	}
	items := make([]summary, 0, len(page.Items))
	for _, b := range page.Items {
		sm := summary{ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags, SchemaName: b.SchemaName,
			Version: b.Version, Visibility: b.Visibility, Sensitivity: b.Sensitivity, UpdatedAt: b.UpdatedAt,
			CreatedBy: b.CreatedBy, UpdatedBy: b.UpdatedBy}
		if withContext {
			sm.Context = b.Context
		}
		items = append(items, sm)
	}
	writeJSON(w, http.StatusOK, listPage{Items: items, NextCursor: page.NextCursor})
	return nil
}

// viewMeta says whether a view is what its hints asked for, in the
// envelope's vocabulary: status OK or FALLBACK; source STORE for a stored
// breadcrumb's view, VIEW for a preview of hints on a posted context;
// freshness FRESH, as a view is computed from the version it shows.
type viewMeta struct {
	Status         envelope.Status    `json:"status"`
	ErrorCode      string             `json:"error_code,omitempty"` // why a view fell back: a view error code
	Message        string             `json:"message,omitempty"`
	Source         envelope.Source    `json:"source"`
	FreshnessState envelope.Freshness `json:"freshness_state"`
	// Warnings: what the view's rules met that is likely a mistake (a
	// path that exists only under context.), see view.Result.Warnings.
	Warnings []view.Warning `json:"warnings,omitempty"`
}

// viewStatus is a view's status in the envelope's vocabulary: OK when
// every rule ran, FALLBACK when the value is the filtered context.
func viewStatus(st view.Status) envelope.Status {
	if st == view.StatusOK {
		return envelope.StatusOK
	}
	return envelope.StatusFallback
}

// viewReply is GET /breadcrumbs/{id}: the record's fields and its view.
// The fields are in name order, the order the API has always written them.
type viewReply struct {
	Context     json.RawMessage `json:"context"` // the view
	Description string          `json:"description"`
	ID          string          `json:"id"`
	Meta        viewMeta        `json:"meta"`
	SchemaName  string          `json:"schema_name"`
	Tags        []string        `json:"tags"`
	Title       string          `json:"title"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Version     int64           `json:"version"`
}

func (s *Server) getView(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, done, err := s.readConditional(w, r, p)
	if err != nil || done {
		return err
	}
	v, err := s.applyView(r.Context(), &b)
	if err != nil {
		return err
	}
	if v.status != view.StatusOK {
		// A view that fell back may succeed later (a rule out of time
		// under load): its tag matches no If-None-Match, so a client
		// never keeps a fallback through 304s.
		w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(b.Version, 10)+"-fallback"))
	}
	writeJSON(w, http.StatusOK, viewReply{
		ID: b.ID, Title: b.Title, Description: b.Description, Tags: b.Tags, SchemaName: b.SchemaName,
		Version: b.Version, UpdatedAt: b.UpdatedAt, Context: v.value,
		Meta: viewMeta{Status: viewStatus(v.status), ErrorCode: v.code, Message: v.reason, Source: envelope.SourceStore, FreshnessState: envelope.Fresh,
			Warnings: v.warnings},
	})
	return nil
}

// etag is a breadcrumb version's entity tag: the version, quoted, as
// PATCH and the other writes return it.
func etag(version int64) string { return strconv.Quote(strconv.FormatInt(version, 10)) }

// readConditional is read for a GET that may carry If-None-Match (a 304
// when the version is still the one named, delivering nothing, so it
// spends no read budget) or If-Match (a 412 when the version differs).
// done says the answer has been written. The answer carries the ETag.
func (s *Server) readConditional(w http.ResponseWriter, r *http.Request, p Principal) (b store.Breadcrumb, done bool, err error) {
	want, err := expectedVersion(r)
	if err != nil {
		return b, false, err
	}
	// A condition is checked on a lookup that counts no read: an answer
	// that delivers nothing spends no read budget.
	if inm := r.Header.Get("If-None-Match"); inm != "" || want != 0 {
		cur, err := s.opts.Store.Get(r.Context(), actor(p), r.PathValue("id"))
		if err != nil {
			return b, false, err
		}
		if want != 0 && cur.Version != want {
			return b, false, &store.Error{Code: store.CodeVersionMismatch,
				Msg: fmt.Sprintf("If-Match: the breadcrumb is at version %d, not %d", cur.Version, want)}
		}
		if inm != "" && etagMatches(inm, cur.Version) {
			w.Header().Set("ETag", etag(cur.Version))
			w.WriteHeader(http.StatusNotModified)
			return b, true, nil
		}
	}
	if b, err = s.read(r, p); err != nil {
		return b, false, err
	}
	w.Header().Set("ETag", etag(b.Version))
	return b, false, nil
}

// etagMatches reports whether an If-None-Match list names version (or is
// "*"); weak tags compare as strong ones, as RFC 9110 says for it.
func etagMatches(header string, version int64) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.Trim(strings.TrimPrefix(t, "W/"), `"`) == strconv.FormatInt(version, 10) {
			return true
		}
	}
	return false
}

// read loads the breadcrumb a GET of /breadcrumbs/{id} or its /full
// names. ServeMux answers HEAD with the GET handler; a HEAD delivers no
// content, so it spends no read budget (a Get, not a Read).
func (s *Server) read(r *http.Request, p Principal) (store.Breadcrumb, error) {
	if r.Method == http.MethodHead {
		return s.opts.Store.Get(r.Context(), actor(p), r.PathValue("id"))
	}
	return s.opts.Store.Read(r.Context(), actor(p), r.PathValue("id"))
}

// applyView returns the record's view, from the cache when the same version
// was seen through the same hints.
func (s *Server) applyView(ctx context.Context, b *store.Breadcrumb) (cachedView, error) {
	if b.LLMHints == nil {
		return cachedView{value: b.Context, status: view.StatusOK}, nil
	}
	v, err := s.views.Compile(b.LLMHints)
	if err != nil {
		// Hints are validated on every write; this is stored data gone bad.
		return cachedView{}, fmt.Errorf("breadcrumb %s: stored hints do not compile: %w", b.ID, err)
	}
	key := view.ResultKey{RecordID: b.ID, Version: b.Version, HintsHash: v.Hash()}
	if c, ok := s.results.Get(key); ok {
		s.metrics.viewCache.WithLabelValues("hit").Inc()
		return c, nil
	}
	s.metrics.viewCache.WithLabelValues("miss").Inc()
	release, err := s.viewSlot(ctx)
	if err != nil {
		return cachedView{}, err
	}
	defer release()
	out, res, err := v.ApplyJSON(ctx, b.Context, view.Record{ID: b.ID, Title: b.Title, Description: b.Description,
		Tags: b.Tags, SchemaName: b.SchemaName, Version: b.Version})
	if err != nil {
		return cachedView{}, err
	}
	s.metrics.views.WithLabelValues(string(res.Status)).Inc()
	c := cachedView{value: out, status: res.Status, warnings: res.Warnings}
	if res.Err != nil {
		c.code, c.reason = string(res.Err.Code), res.Err.Error()
	}
	// A rule that ran out of time, or a view stopped because the heap was
	// full, may succeed when the server is less busy, so only a view that
	// is final for this version is cached.
	if res.Err == nil || (res.Err.Code != view.CodeRuleTimeout && !errors.Is(res.Err, view.ErrHeapLimit)) {
		s.results.Add(key, c)
	}
	return c, nil
}

func (s *Server) getFull(w http.ResponseWriter, r *http.Request, p Principal) error {
	// The raw record is a read of the content too: it counts against a read budget.
	b, done, err := s.readConditional(w, r, p)
	if err != nil || done {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// patchRequest holds the fields a PATCH may change; absent fields stay.
type patchRequest struct {
	Title           *string         `json:"title"`
	Description     *string         `json:"description"`
	SemanticVersion *string         `json:"semantic_version"`
	Context         json.RawMessage `json:"context"`
	Tags            *[]string       `json:"tags"`
	SchemaName      *string         `json:"schema_name"`
	LLMHints        json.RawMessage `json:"llm_hints"` // null clears
	Visibility      *string         `json:"visibility"`
	Sensitivity     *string         `json:"sensitivity"`
}

// expectedVersion reads If-Match: a version number, optionally quoted.
func expectedVersion(r *http.Request) (int64, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" || h == "*" { // "*": any current version, and the record must exist (it must anyway)
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(h, "W/"), `"`), 10, 64)
	if err != nil || n < 1 {
		return 0, errorAt(http.StatusBadRequest, store.CodeInvalid, "If-Match", "%q is not a version number", h)
	}
	return n, nil
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, p Principal) error {
	want, err := expectedVersion(r)
	if err != nil {
		return err
	}
	var req patchRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	return s.update(w, r, p, want, func(b *store.Breadcrumb) error {
		set := func(dst *string, src *string) {
			if src != nil {
				*dst = *src
			}
		}
		set(&b.Title, req.Title)
		set(&b.Description, req.Description)
		set(&b.SemanticVersion, req.SemanticVersion)
		set(&b.SchemaName, req.SchemaName)
		if req.Context != nil {
			b.Context = req.Context
		}
		if req.Tags != nil {
			b.Tags = *req.Tags
		}
		if req.LLMHints != nil {
			b.LLMHints = req.LLMHints // "null" clears; store.Prepare normalises
		}
		if req.Visibility != nil {
			b.Visibility = store.Visibility(*req.Visibility)
		}
		if req.Sensitivity != nil {
			b.Sensitivity = store.Sensitivity(*req.Sensitivity)
		}
		return nil
	})
}

// notExchange refuses a breadcrumb written through the API that would
// pass for one of the gateway's traffic records (their schema or tag):
// look-alikes could crowd the real ones out of GET /gateway/usage, which
// reads a bounded number of them, newest first.
func notExchange(b *store.Breadcrumb) error {
	if b.SchemaName == ExchangeSchema || slices.Contains(b.Tags, exchangeTag) {
		return errorf(http.StatusForbidden, CodeForbidden, "schema %s and tag %s are the gateway's traffic records: only the server writes them", ExchangeSchema, exchangeTag)
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, p Principal, want int64, m store.Mutation) error {
	a := actor(p)
	guarded := func(b *store.Breadcrumb) error {
		// The gateway's traffic records are evidence of an agent's
		// traffic: the agent may not change them (their figures, tags,
		// schema or visibility) to hide it; the owner's curators may,
		// as they may delete them (DELETE is theirs only).
		if b.SchemaName == ExchangeSchema {
			if !a.Curator {
				return errorf(http.StatusForbidden, CodeForbidden, "breadcrumb %s is a gateway traffic record (%s): only the owner's curators may change or delete it", b.ID, ExchangeSchema)
			}
			return m(b)
		}
		if err := m(b); err != nil {
			return err
		}
		return notExchange(b)
	}
	b, err := s.searchable().Update(r.Context(), s.opts.Store, a, r.PathValue("id"), want, guarded)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", etag(b.Version))
	writeJSON(w, http.StatusOK, b)
	return nil
}

func (s *Server) tags(add bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p Principal) error {
		want, err := expectedVersion(r)
		if err != nil {
			return err
		}
		var req struct {
			Tags []string `json:"tags"`
		}
		if err := s.decode(w, r, &req); err != nil {
			return err
		}
		if len(req.Tags) == 0 {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, "tags", "give at least one tag")
		}
		return s.update(w, r, p, want, func(b *store.Breadcrumb) error {
			if add {
				b.Tags = append(b.Tags, req.Tags...)
			} else {
				b.Tags = slices.DeleteFunc(b.Tags, func(t string) bool { return slices.Contains(req.Tags, t) })
			}
			return nil
		})
	}
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request, p Principal) error {
	want, err := expectedVersion(r)
	if err != nil {
		return err
	}
	var req struct {
		Context json.RawMessage `json:"context"`
	}
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Context == nil {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "context", "required, a JSON object to merge")
	}
	return s.update(w, r, p, want, func(b *store.Breadcrumb) error {
		merged, err := store.MergeContext(b.Context, req.Context)
		if err != nil {
			return err
		}
		b.Context = merged
		return nil
	})
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, p Principal) error {
	if err := s.opts.Store.Delete(r.Context(), actor(p), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// historyPage is every version of a breadcrumb, newest first.
type historyPage struct {
	Items []store.Breadcrumb `json:"items"`
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, p Principal) error {
	h, err := s.opts.Store.History(r.Context(), actor(p), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, historyPage{Items: h})
	return nil
}

// previewRequest is a hints document and a context to try it on.
type previewRequest struct {
	LLMHints    json.RawMessage `json:"llm_hints"`
	Context     json.RawMessage `json:"context"`
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Tags        []string        `json:"tags"`
	SchemaName  string          `json:"schema_name"`
	Version     int64           `json:"version"`
}

// previewReply is a preview's view and whether it is what the hints asked for.
type previewReply struct {
	Context json.RawMessage `json:"context"`
	Meta    viewMeta        `json:"meta"`
}

func (s *Server) preview(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req previewRequest
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.Context == nil {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "context", "required")
	}
	if req.LLMHints == nil {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "llm_hints", "required")
	}
	// A draft's hints are compiled for this request only: previews must not
	// crowd the stored records' views out of the shared cache.
	v, err := s.views.CompileUncached(req.LLMHints)
	if err != nil {
		var ve *view.Error
		if errors.As(err, &ve) && ve.Path != "" {
			return &Error{Status: http.StatusBadRequest, Code: Code(store.CodeInvalid), Path: "llm_hints." + ve.Path, Msg: "llm_hints." + ve.Error(), Err: err}
		}
		ae := errorAt(http.StatusBadRequest, store.CodeInvalid, "llm_hints", "%v", err)
		ae.Err = err
		return ae
	}
	release, err := s.viewSlot(r.Context())
	if err != nil {
		return err
	}
	defer release()
	out, res, err := v.ApplyJSON(r.Context(), req.Context, view.Record{ID: req.ID, Title: req.Title,
		Description: req.Description, Tags: req.Tags, SchemaName: req.SchemaName, Version: req.Version})
	if err != nil {
		ae := errorAt(http.StatusBadRequest, store.CodeInvalid, "context", "%v", err)
		ae.Err = err
		return ae
	}
	if res.Err != nil && res.Err.Code == view.CodeTooCostly {
		// Authoring a view that cannot be afforded is an error to fix, not
		// a view to show.
		return &Error{Status: http.StatusUnprocessableEntity, Code: Code(view.CodeTooCostly), Path: "llm_hints", Msg: "llm_hints." + res.Err.Error(), Err: res.Err}
	}
	meta := viewMeta{Status: viewStatus(res.Status), Source: envelope.SourceView, FreshnessState: envelope.Fresh, Warnings: res.Warnings}
	if res.Err != nil {
		meta.ErrorCode, meta.Message = string(res.Err.Code), res.Err.Error()
	}
	writeJSON(w, http.StatusOK, previewReply{Context: out, Meta: meta})
	return nil
}
