package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxKeptStmts bounds the statements a stmtSet keeps: a batch runs a
// handful of distinct statements (its creates' inserts, their savepoints),
// and the set takes no more whatever a future create runs.
const maxKeptStmts = 32

// stmtSet is the statements of CreateBatch prepared on the writing
// database, kept from batch to batch: preparing them again in every
// transaction cost a lone record's write a good part of its CPU. The
// database has one writing connection, which a transaction's
// Tx.StmtContext finds each statement already prepared on. The zero
// value is an empty set.
type stmtSet struct {
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending []string // queries a transaction prepared for itself, to keep
	closed  bool
}

// get is the statement kept for query, or nil. A nil set keeps nothing.
func (s *stmtSet) get(query string) *sql.Stmt {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stmts[query]
}

// want names query, which a transaction had to prepare, to be kept.
func (s *stmtSet) want(query string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.stmts)+len(s.pending) < maxKeptStmts {
		s.pending = append(s.pending, query)
	}
}

// prepareNew prepares on db the queries wanted since the last call and
// keeps them. It runs between transactions, and waits for db's one
// connection without holding the set: a transaction that holds the
// connection may be asking the set for a statement meanwhile. A query
// that fails to prepare is not kept (its transaction prepares it and
// reports the failure).
func (s *stmtSet) prepareNew(ctx context.Context, db *sql.DB) {
	s.mu.Lock()
	todo := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, q := range todo {
		if s.get(q) != nil {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if _, ok := s.stmts[q]; ok || s.closed {
			// Kept meanwhile by another batch, or the database is
			// closing.
			s.mu.Unlock()
			st.Close()
			continue
		}
		if s.stmts == nil {
			s.stmts = map[string]*sql.Stmt{}
		}
		s.stmts[q] = st
		s.mu.Unlock()
	}
}

// close closes the statements kept and keeps none from then on: the
// connection they are prepared on closes after them.
func (s *stmtSet) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts, s.pending = nil, nil
	return errors.Join(errs...)
}
