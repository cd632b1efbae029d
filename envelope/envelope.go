// Package envelope wraps every search and tool result ctxkit returns in a
// Result: the items and a Meta that says whether they are authoritative
// (OK), a deterministic fallback (FALLBACK) or an error (ERROR), where they
// came from and how fresh they are.
//
// The constructors apply the defaults, so a Result is consistent by
// construction:
//
//	envelope.OK(items)                      // OK, RAG_GRAPH, FRESH
//	envelope.OK(items, envelope.WithSource(envelope.SourceStore))
//	envelope.Fallback(items)                // FALLBACK, LOCAL_FALLBACK, STALE
//	envelope.Error[T]("not_found", "...")   // ERROR, NONE, no items
//
// IndexStatus is what a result says about the repository index it
// consulted; package workspace keeps that index and decides when it may
// answer.
package envelope

import (
	"encoding/json"
	"fmt"
	"time"
)

// Status says whether a result is authoritative.
type Status string

const (
	StatusOK       Status = "OK"       // the authoritative answer
	StatusFallback Status = "FALLBACK" // a deterministic answer from a fallback path
	StatusError    Status = "ERROR"    // no answer; ErrorCode and Message say why
)

// Source names where the items came from.
type Source string

const (
	SourceRAGGraph      Source = "RAG_GRAPH"      // a retrieval index
	SourceLocalFallback Source = "LOCAL_FALLBACK" // read from local files, not the index
	SourceNone          Source = "NONE"           // nothing answered (errors)
	SourceStore         Source = "STORE"          // ctxkit's breadcrumb store
	SourceView          Source = "VIEW"           // a breadcrumb's LLM view
)

// Freshness says how current the items are.
type Freshness string

const (
	Fresh   Freshness = "FRESH"
	Stale   Freshness = "STALE"
	Unknown Freshness = "UNKNOWN"
)

// Meta describes a result.
type Meta struct {
	Status         Status       `json:"status"`
	ErrorCode      string       `json:"error_code,omitempty"`
	Message        string       `json:"message,omitempty"`
	Source         Source       `json:"source"`
	FreshnessState Freshness    `json:"freshness_state"`
	IndexStatus    *IndexStatus `json:"index_status"` // null when no index was consulted
}

// Result is a list of items and what is known about them. It encodes as
// {"meta": {...}, "items": [...]}; items that implement json.Marshaler
// encode themselves.
type Result[T any] struct {
	Meta  Meta `json:"meta"`
	Items []T  `json:"items"`
}

// MarshalJSON writes items as [] rather than null when there are none.
func (r Result[T]) MarshalJSON() ([]byte, error) {
	items := r.Items
	if items == nil {
		items = []T{}
	}
	if r.Meta.FreshnessState == "" {
		r.Meta.FreshnessState = Unknown
	}
	return json.Marshal(struct {
		Meta  Meta `json:"meta"`
		Items []T  `json:"items"`
	}{r.Meta, items})
}

// Option adjusts a result's Meta in a constructor.
type Option func(*Meta)

// WithSource sets the source (OK results only: the other constructors fix it).
func WithSource(s Source) Option { return func(m *Meta) { m.Source = s } }

// WithFreshness sets the freshness state.
func WithFreshness(f Freshness) Option { return func(m *Meta) { m.FreshnessState = f } }

// WithIndexStatus attaches the status of the index that was consulted.
func WithIndexStatus(st *IndexStatus) Option { return func(m *Meta) { m.IndexStatus = st } }

// WithMessage sets a human-readable note, such as why a result fell back.
func WithMessage(msg string) Option { return func(m *Meta) { m.Message = msg } }

func build(m Meta, opts []Option) Meta {
	for _, o := range opts {
		o(&m)
	}
	return m
}

// OK is an authoritative result: source RAG_GRAPH unless WithSource says
// otherwise, freshness FRESH unless WithFreshness does.
func OK[T any](items []T, opts ...Option) Result[T] {
	m := build(Meta{Source: SourceRAGGraph, FreshnessState: Fresh}, opts)
	m.Status = StatusOK
	return Result[T]{Meta: m, Items: items}
}

// Fallback is a result from a fallback path: the source is always
// LOCAL_FALLBACK, freshness STALE unless WithFreshness says otherwise.
func Fallback[T any](items []T, opts ...Option) Result[T] {
	m := build(Meta{FreshnessState: Stale}, opts)
	m.Status, m.Source = StatusFallback, SourceLocalFallback
	return Result[T]{Meta: m, Items: items}
}

// Error is a result with no items: the source is always NONE. Code and
// message are required; an empty code becomes "internal" and an empty
// message says that none was given, so a client never sees a bare ERROR.
func Error[T any](code, message string, opts ...Option) Result[T] {
	m := build(Meta{FreshnessState: Unknown}, opts)
	if code == "" {
		code = "internal"
	}
	if message == "" {
		message = "error " + code + " (no message given)"
	}
	m.Status, m.Source, m.ErrorCode, m.Message = StatusError, SourceNone, code, message
	return Result[T]{Meta: m, Items: []T{}}
}

// Validate checks the rules the constructors follow, for a Result built or
// decoded some other way.
func (r Result[T]) Validate() error {
	m := r.Meta
	switch m.Status {
	case StatusOK:
	case StatusFallback:
		if m.Source != SourceLocalFallback {
			return fmt.Errorf("envelope: a FALLBACK result has source %s, not LOCAL_FALLBACK", m.Source)
		}
	case StatusError:
		if m.Source != SourceNone || m.ErrorCode == "" || m.Message == "" || len(r.Items) > 0 {
			return fmt.Errorf("envelope: an ERROR result needs source NONE, an error code, a message and no items")
		}
	default:
		return fmt.Errorf("envelope: status %q is not OK, FALLBACK or ERROR", m.Status)
	}
	switch m.FreshnessState {
	case Fresh, Stale, Unknown, "":
	default:
		return fmt.Errorf("envelope: freshness_state %q is not FRESH, STALE or UNKNOWN", m.FreshnessState)
	}
	if m.Source == "" {
		return fmt.Errorf("envelope: source is empty")
	}
	return nil
}

// IndexState is the state of a repository index.
type IndexState string

const (
	IndexFresh      IndexState = "fresh"
	IndexStale      IndexState = "stale"
	IndexRebuilding IndexState = "rebuilding"
	IndexError      IndexState = "error"
)

// IndexStatus is what an indexer last wrote about a repository.
type IndexStatus struct {
	Repo              string     `json:"repo"`
	IndexState        IndexState `json:"index_state"`
	LastIndexedAt     time.Time  `json:"last_indexed_at"` // RFC 3339, UTC
	LastIndexedCommit string     `json:"last_indexed_commit"`
	SchemaVersion     int        `json:"schema_version"`
	LastError         string     `json:"last_error,omitempty"`
}

type indexStatusJSON struct {
	Repo              string     `json:"repo"`
	IndexState        IndexState `json:"index_state"`
	LastIndexedAt     string     `json:"last_indexed_at,omitempty"`
	LastIndexedCommit string     `json:"last_indexed_commit"`
	SchemaVersion     int        `json:"schema_version"`
	LastError         string     `json:"last_error,omitempty"`
}

// MarshalJSON writes LastIndexedAt in RFC 3339 in UTC, and leaves it out
// when it is zero (nothing was ever indexed).
func (s IndexStatus) MarshalJSON() ([]byte, error) {
	j := indexStatusJSON{Repo: s.Repo, IndexState: s.IndexState, LastIndexedCommit: s.LastIndexedCommit,
		SchemaVersion: s.SchemaVersion, LastError: s.LastError}
	if !s.LastIndexedAt.IsZero() {
		j.LastIndexedAt = s.LastIndexedAt.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *IndexStatus) UnmarshalJSON(data []byte) error {
	var j indexStatusJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = IndexStatus{Repo: j.Repo, IndexState: j.IndexState, LastIndexedCommit: j.LastIndexedCommit,
		SchemaVersion: j.SchemaVersion, LastError: j.LastError}
	if j.LastIndexedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, j.LastIndexedAt)
		if err != nil {
			return fmt.Errorf("last_indexed_at: %w", err)
		}
		s.LastIndexedAt = t.UTC()
	}
	return nil
}
