// Package rank ranks the matches of a store search. A backend's full-text
// index only decides which breadcrumbs match; every backend ranks its
// matches here, the same way, from their search documents.
package rank

import (
	"math"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/store"
)

// The ranking is BM25F: a term's occurrences in each
// field, weighted (title 10, tags 5, description 2, view text 1) and
// normalised by the field's length against its average, saturate, and
// count for more when fewer of the matches hold the term. Every statistic
// (how many matches hold a term, the fields' average lengths) is taken
// over the matches the caller may list and the search ranks, and nothing
// else: another owner's breadcrumbs, another agent's private ones, expired,
// deleted or read-out ones and words a view hides cannot move a score or
// an order, as corpus-wide statistics would (a tenant could read another
// owner's words from its own scores).

// numFields is the fields of a store.SearchDocument: title, tags, description,
// body (the view's text).
const numFields = 4

// fieldWeights weigh the fields, in store.SearchDocument order.
var fieldWeights = [numFields]float64{10, 5, 2, 1}

// BM25's parameters: how fast repeated occurrences stop adding (k1) and
// how much a field's length discounts them (b).
const (
	rankK1 = 1.2
	rankB  = 0.75
)

// Encode is d as backends store it for ranking: each field's words
// separated by spaces, the fields (title, tags, description, body) by
// newlines. Words hold only letters and digits, so the form is
// unambiguous, and a term is found in it with one substring search.
func Encode(d store.SearchDocument) string {
	var sb strings.Builder
	n := 3
	for _, f := range [...][]string{d.Title, d.Tags, d.Description, d.Body} {
		for _, w := range f {
			n += len(w) + 1
		}
	}
	sb.Grow(n)
	for i, f := range [...][]string{d.Title, d.Tags, d.Description, d.Body} {
		if i > 0 {
			sb.WriteByte('\n')
		}
		for j, w := range f {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(w)
		}
	}
	return sb.String()
}

// Candidate is a match of a search that the caller may list: its
// breadcrumb's id and search document (Encode).
type Candidate struct {
	ID  string
	Doc string
}

// Ranked is a candidate's place in a search's result: its index among the
// candidates and its store.SearchHit.Score.
type Ranked struct {
	Index int
	Score float64
}

// Rank scores cands, which must be every match of e the caller may list
// up to the rank bound (the statistics are theirs), and returns the best
// limit of them, best first (see Ranker.Best).
func Rank(e *store.SearchExpr, cands []Candidate, limit int) []Ranked {
	r := New(e)
	for _, c := range cands {
		r.Add(c.ID, c.Doc)
	}
	return r.Best(limit)
}

// A Ranker scores a search's candidates as they are read, one document at
// a time: it keeps only each candidate's term counts and field lengths, so
// a search holds one document at once, not every candidate's.
type Ranker struct {
	terms    []rankTerm
	ids      []string
	tf       []uint16 // tf[(c*len(terms)+t)*numFields+f]: occurrences of term t in field f of candidate c (at most store.MaxSearchWords: they fit)
	lens     [][numFields]int
	sumLen   [numFields]int
	df       []int
	inTitle  []bool
	groupHit []bool
}

type rankTerm struct {
	pat    string // its words, space-separated, as in a document
	prefix bool
	group  int
}

// New returns an empty Ranker for e.
func New(e *store.SearchExpr) *Ranker {
	r := &Ranker{groupHit: make([]bool, len(e.All))}
	for g, alts := range e.All {
		for _, t := range alts {
			r.terms = append(r.terms, rankTerm{strings.Join(t.Words, " "), t.Prefix, g})
		}
	}
	r.df = make([]int, len(r.terms))
	return r
}

// Add counts the next candidate: its breadcrumb's id and search document
// (Encode). Its index in Best's result is the number added before.
// It reads the document once per term with a substring search, so a
// search's cost is bounded by the rank bound, store.MaxQueryTerms and
// store.MaxSearchBytes.
func (r *Ranker) Add(id, doc string) {
	c := len(r.ids)
	r.ids = append(r.ids, id)
	nt := len(r.terms)
	r.tf = append(r.tf, make([]uint16, nt*numFields)...)
	r.lens = append(r.lens, [numFields]int{})
	fields := splitFields(doc)
	for f, text := range fields {
		if text != "" {
			r.lens[c][f] = strings.Count(text, " ") + 1
		}
		r.sumLen[f] += r.lens[c][f]
	}
	clear(r.groupHit)
	for t, tm := range r.terms {
		base := (c*nt + t) * numFields
		held := false
		for f, text := range fields {
			n := countTerm(text, tm.pat, tm.prefix)
			r.tf[base+f] = uint16(min(n, math.MaxUint16))
			held = held || n > 0
		}
		if held {
			r.df[t]++
		}
		if r.tf[base] > 0 {
			r.groupHit[tm.group] = true
		}
	}
	r.inTitle = append(r.inTitle, !slices.Contains(r.groupHit, false))
}

// Best returns the best limit of the candidates added, best first: the
// ones whose title holds every group of the query first, then by
// relevance, ties broken by the newer id. The statistics (document
// frequencies, average field lengths) are those of the candidates added.
func (r *Ranker) Best(limit int) []Ranked {
	nt := len(r.terms)
	n := float64(len(r.ids))
	idf := make([]float64, nt)
	for t := range r.terms {
		// At least 1, so a term every match holds still counts; more for
		// a term fewer of the matches hold (one side of an OR, a prefix).
		idf[t] = 1 + math.Log((n+1)/(float64(r.df[t])+1))
	}
	var avg [numFields]float64
	for f := range avg {
		avg[f] = float64(r.sumLen[f]) / n
	}
	out := make([]Ranked, len(r.ids))
	for c := range r.ids {
		rank := 0.0
		for t := range r.terms {
			base := (c*nt + t) * numFields
			w := 0.0
			for f := range numFields {
				if k := r.tf[base+f]; k > 0 {
					w += fieldWeights[f] * float64(k) / (1 - rankB + rankB*float64(r.lens[c][f])/avg[f])
				}
			}
			rank += idf[t] * w * (rankK1 + 1) / (w + rankK1)
		}
		out[c] = Ranked{Index: c, Score: score(rank, r.inTitle[c])}
	}
	slices.SortFunc(out, func(x, y Ranked) int {
		if x.Score != y.Score {
			if x.Score > y.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(r.ids[y.Index], r.ids[x.Index])
	})
	return out[:min(limit, len(out))]
}

// splitFields is the fields of an encoded document; missing ones are
// empty.
func splitFields(doc string) [numFields]string {
	var fs [numFields]string
	for f := range numFields - 1 {
		var ok bool
		fs[f], doc, ok = strings.Cut(doc, "\n")
		if !ok {
			return fs
		}
	}
	fs[numFields-1] = doc
	return fs
}

// countTerm is how often pat (words separated by single spaces) occurs in
// text (a field's words, likewise) as whole words, or with a prefix term
// with its last word as the start of a word: the way the backends match a
// word, a phrase and a prefix.
func countTerm(text, pat string, prefix bool) int {
	n := 0
	for off := 0; off < len(text); {
		i := strings.Index(text[off:], pat)
		if i < 0 {
			break
		}
		i += off
		end := i + len(pat)
		if (i == 0 || text[i-1] == ' ') && (prefix || end == len(text) || text[end] == ' ') {
			n++
		}
		off = i + 1
	}
	return n
}

// score is a hit's store.SearchHit.Score from its rank (0 or more, higher better) and
// whether its title holds every required term: title matches first.
func score(rank float64, inTitle bool) float64 {
	rank = max(rank, 0)
	s := rank / (1 + rank)
	if inTitle {
		s++
	}
	return s
}
