package query_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/query"
)

func TestLimits(t *testing.T) {
	for _, c := range []struct {
		limit, page, search int
		err                 string
	}{
		{0, store.DefaultLimit, store.DefaultSearchLimit, ""},
		{7, 7, 7, ""},
		{-1, 0, 0, "limit: must be between 1 and "},
	} {
		n, err := query.PageSize(store.Query{Limit: c.limit})
		if n != c.page || (err == nil) != (c.err == "") || err != nil && !store.IsCode(err, store.CodeInvalid) {
			t.Errorf("PageSize(%d) = %d, %v", c.limit, n, err)
		}
		m, err := query.SearchLimit(store.SearchQuery{Limit: c.limit})
		if m != c.search || (err == nil) != (c.err == "") {
			t.Errorf("SearchLimit(%d) = %d, %v", c.limit, m, err)
		}
	}
	var many []string
	for i := range store.MaxTags + 1 {
		many = append(many, fmt.Sprint("t", i), fmt.Sprint("t", i))
	}
	if _, err := query.PageSize(store.Query{Tags: many}); err == nil || err.Error() != fmt.Sprintf("tag: %d tag filters; the limit is %d", store.MaxTags+1, store.MaxTags) {
		t.Errorf("too many tag filters: %v", err)
	}
	if got := query.Tags([]string{"b", "a", "b"}); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("Tags: %v", got)
	}
}
