// Package query holds the checks every store backend makes of a list or
// search query the same way, so that each refuses the same input with the
// same error: its page size and its tag filters.
package query

import (
	"fmt"

	"github.com/ctxkit/ctxkit/store"
)

// PageSize is q.Limit checked: store.DefaultLimit for 0, an error outside
// 1..store.MaxLimit. It also refuses more tag filters than a breadcrumb
// can have tags (store.MaxTags).
func PageSize(q store.Query) (int, error) {
	return limit(q.Tags, q.Limit, store.DefaultLimit, store.MaxLimit)
}

// SearchLimit is q.Limit checked: store.DefaultSearchLimit for 0, an
// error outside 1..store.MaxSearchLimit. It also refuses more than
// store.MaxTags tag filters.
func SearchLimit(q store.SearchQuery) (int, error) {
	return limit(q.Tags, q.Limit, store.DefaultSearchLimit, store.MaxSearchLimit)
}

// limit checks a query's tag filters, then its limit n against 1..most
// (0 is def): a list and a search differ only in their bounds.
func limit(tags []string, n, def, most int) (int, error) {
	if err := checkTagFilters(tags); err != nil {
		return 0, err
	}
	switch {
	case n == 0:
		return def, nil
	case n < 0 || n > most:
		return 0, &store.Error{Code: store.CodeInvalid, Path: "limit", Msg: fmt.Sprintf("must be between 1 and %d", most)}
	}
	return n, nil
}

// Tags is a filter's tags without repeats, in first-seen order.
func Tags(tags []string) []string {
	seen := make(map[string]bool, len(tags))
	var out []string
	for _, s := range tags {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// checkTagFilters refuses more distinct tag filters than store.MaxTags,
// as an event stream's filter does: no breadcrumb could match them all,
// and each costs the query work.
func checkTagFilters(tags []string) error {
	distinct := make(map[string]bool, len(tags))
	for _, t := range tags {
		distinct[t] = true
	}
	if n := len(distinct); n > store.MaxTags {
		return &store.Error{Code: store.CodeInvalid, Path: "tag", Msg: fmt.Sprintf("%d tag filters; the limit is %d", n, store.MaxTags)}
	}
	return nil
}
