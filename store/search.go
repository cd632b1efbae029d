package store

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Full-text search over breadcrumbs.
//
// A breadcrumb is searched on four fields, weighted in this order: title,
// tags, description, and the text of its LLM view (SearchText), so a field
// the view hides is never searchable (see Searchable). Text is split into words the same way
// for every backend and for queries: runs of letters and digits, lowercased;
// everything else separates words.
//
// Search ranks at most the MaxRanked (default DefaultMaxRanked, 1,000)
// newest matching breadcrumbs of the caller's owner that the caller may
// list, so its cost does not grow with how many breadcrumbs a common word
// matches: a query that matches more ranks the newest of them
// (SearchResult.Bounded is then true), and a narrower query finds the
// older ones. The ranking, the same in every backend, takes its statistics
// from those ranked matches alone: what a search reports is a function of
// what the caller may list.

// Search limits.
const (
	MaxQueryBytes      = 1024 // a search query's text
	MaxQueryTerms      = 32   // words and phrases in one query
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
	// MaxWordBytes: longer words are cut to this length, in documents and
	// queries alike.
	MaxWordBytes = 100
	// MaxSearchWords bounds the words a breadcrumb is searchable on (its
	// view text is cut after them); MaxSearchBytes bounds their bytes.
	MaxSearchWords = 12_000
	MaxSearchBytes = 512 << 10
)

// SearchQuery is a search.
type SearchQuery struct {
	// Text is the query: words (all must match), "quoted phrases", OR
	// between two terms (either may match), -word (must not match) and
	// prefix* (a word starting so).
	Text       string
	Tags       []string // all must match
	SchemaName string
	Limit      int // 1..MaxSearchLimit; 0 means DefaultSearchLimit
	// MaxRanked bounds how many of the newest matching breadcrumbs of the
	// owner are ranked: 0 means DefaultMaxRanked, at most MaxMaxRanked.
	MaxRanked int
}

// Ranking bounds.
const (
	DefaultMaxRanked = 1_000
	MaxMaxRanked     = 100_000
)

// SearchResult is the hits of a search, best first.
type SearchResult struct {
	Hits []SearchHit
	// Bounded: more breadcrumbs matched than were ranked (MaxRanked), so
	// the hits are the best of the newest matches only.
	Bounded bool
}

// RankBound is q.MaxRanked checked: DefaultMaxRanked for 0.
func RankBound(q SearchQuery) (int, error) {
	switch {
	case q.MaxRanked == 0:
		return DefaultMaxRanked, nil
	case q.MaxRanked < 0 || q.MaxRanked > MaxMaxRanked:
		return 0, invalid("max_ranked", "must be between 1 and %d", MaxMaxRanked)
	}
	return q.MaxRanked, nil
}

// SearchHit is a breadcrumb that matched, with its relevance: higher is
// better; scores compare within one result only. A breadcrumb whose title
// holds every term the query requires ranks above every one that does not
// (its score is 1 or more; the others' are below 1). Every backend ranks
// its matches the same way: BM25F over the fields of the search document
// (Document), with statistics taken over the ranked matches alone.
type SearchHit struct {
	Breadcrumb
	Score float64
}

// SearchTerm is one word or phrase of a query, in normalized words.
type SearchTerm struct {
	Words  []string // one word, or a phrase: these words adjacent and in order
	Prefix bool     // the last word matches any word it starts
}

// SearchExpr is a parsed query: every group in All must match (a group
// matches when any of its terms does) and no term in None may.
type SearchExpr struct {
	All  [][]SearchTerm
	None []SearchTerm
}

// ParseSearch parses a query. Errors are *Error with field "q".
func ParseSearch(q string) (*SearchExpr, error) {
	if strings.TrimSpace(q) == "" {
		return nil, invalid("q", "required: the words to search for")
	}
	if len(q) > MaxQueryBytes {
		return nil, invalid("q", "%d bytes; the limit is %d", len(q), MaxQueryBytes)
	}
	if !utf8.ValidString(q) {
		return nil, invalid("q", "not valid UTF-8")
	}
	type item struct {
		term SearchTerm
		neg  bool
		or   bool // the OR operator
	}
	var items []item
	i := 0
	for i < len(q) {
		r, size := utf8.DecodeRuneInString(q[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		neg := false
		if q[i] == '-' && i+1 < len(q) && q[i+1] != ' ' {
			neg = true
			i++
		}
		var raw string
		phrase := false
		if i < len(q) && q[i] == '"' {
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				raw, i = q[i+1:], len(q) // an unclosed quote runs to the end
			} else {
				raw, i = q[i+1:i+1+end], i+2+end
			}
			phrase = true
		} else {
			start := i
			for i < len(q) {
				r, size := utf8.DecodeRuneInString(q[i:])
				if unicode.IsSpace(r) || r == '"' {
					break
				}
				i += size
			}
			raw = q[start:i]
		}
		if !phrase && !neg && raw == "OR" {
			items = append(items, item{or: true})
			continue
		}
		prefix := false
		if phrase && i < len(q) && q[i] == '*' {
			prefix = true
			i++
		} else if trimmed, ok := strings.CutSuffix(raw, "*"); ok && !phrase {
			prefix = true
			raw = trimmed
		}
		words := Words(raw)
		if len(words) == 0 {
			continue
		}
		items = append(items, item{term: SearchTerm{Words: words, Prefix: prefix}, neg: neg})
	}
	e := &SearchExpr{}
	terms := 0
	joinNext := false
	for k, it := range items {
		switch {
		case it.or:
			// OR joins the positive terms on either side; anywhere else it
			// is ignored.
			joinNext = len(e.All) > 0 && k > 0 && !items[k-1].or && !items[k-1].neg
		case it.neg:
			e.None = append(e.None, it.term)
			joinNext = false
		case joinNext:
			last := len(e.All) - 1
			e.All[last] = append(e.All[last], it.term)
			joinNext = false
		default:
			e.All = append(e.All, []SearchTerm{it.term})
		}
		if !it.or {
			terms++
		}
	}
	if terms > MaxQueryTerms {
		return nil, invalid("q", "%d words and phrases; the limit is %d", terms, MaxQueryTerms)
	}
	if len(e.All) == 0 {
		if len(e.None) > 0 {
			return nil, invalid("q", "only excluded words: add a word to find")
		}
		return nil, invalid("q", "no word to search for (words are letters and digits)")
	}
	return e, nil
}

// Words splits text into search words: runs of letters and digits,
// lowercased, each cut to MaxWordBytes.
func Words(s string) []string {
	// Room for a word of every four bytes (short words and numbers and
	// their separators) at once: growing the slice word by word took a
	// record's search text more allocations than the rest of its
	// document.
	out := make([]string, 0, min(len(s)/4+1, 1024))
	start := -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, word(s[start:end]))
			start = -1
		}
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	if len(out) == 0 {
		return nil // as before: no words, no slice
	}
	return out
}

func word(w string) string {
	w = strings.ToLower(w)
	if len(w) <= MaxWordBytes {
		return w
	}
	cut := MaxWordBytes
	for cut > 0 && !utf8.RuneStart(w[cut]) {
		cut--
	}
	return w[:cut]
}

// String renders the expression in the query syntax, normalized.
func (e *SearchExpr) String() string {
	var parts []string
	term := func(t SearchTerm) string {
		s := strings.Join(t.Words, " ")
		if len(t.Words) > 1 {
			s = `"` + s + `"`
		}
		if t.Prefix {
			s += "*"
		}
		return s
	}
	for _, g := range e.All {
		alts := make([]string, len(g))
		for i, t := range g {
			alts[i] = term(t)
		}
		parts = append(parts, strings.Join(alts, " OR "))
	}
	for _, t := range e.None {
		parts = append(parts, "-"+term(t))
	}
	return strings.Join(parts, " ")
}

// Match reports whether words (a document's words in order) satisfy e,
// and how many of its terms occur: the ranking of a search without an index.
func (e *SearchExpr) Match(words []string) (bool, int) {
	has := func(t SearchTerm) int {
		n := 0
		for i := 0; i+len(t.Words) <= len(words); i++ {
			ok := true
			for j, w := range t.Words {
				d := words[i+j]
				if j == len(t.Words)-1 && t.Prefix {
					ok = strings.HasPrefix(d, w)
				} else {
					ok = d == w
				}
				if !ok {
					break
				}
			}
			if ok {
				n++
			}
		}
		return n
	}
	for _, t := range e.None {
		if has(t) > 0 {
			return false, 0
		}
	}
	score := 0
	for _, g := range e.All {
		found := 0
		for _, t := range g {
			found += has(t)
		}
		if found == 0 {
			return false, 0
		}
		score += found
	}
	return true, score
}

// SearchDocument is what a breadcrumb is searchable on: each field's words.
type SearchDocument struct {
	Title, Tags, Description, Body []string
}

// Field word budgets: together they stay under PostgreSQL's 16,383
// positions in a tsvector.
const (
	maxTitleWords       = 256
	maxTagWords         = 1024
	maxDescriptionWords = 3000
)

// Document is the search document of b: its title, tags and description,
// and the text of its view (see Searchable): SearchText, or when that is
// empty the view's text when it can be known without running rules, else
// nothing, so a field the view hides is never searchable either way.
func Document(b *Breadcrumb) SearchDocument {
	body := b.SearchText
	if body == "" {
		body = fallbackSearchText(b)
	}
	limit := func(ws []string, n int) []string {
		if len(ws) > n {
			ws = ws[:n]
		}
		return ws
	}
	d := SearchDocument{
		Title:       limit(Words(b.Title), maxTitleWords),
		Tags:        limit(Words(strings.Join(b.Tags, " ")), maxTagWords),
		Description: limit(Words(b.Description), maxDescriptionWords),
	}
	ws := Words(body)
	size := 0
	for i, w := range ws {
		size += len(w) + 1
		if i >= MaxSearchWords || size > MaxSearchBytes {
			ws = ws[:i]
			break
		}
	}
	d.Body = ws
	return d
}
