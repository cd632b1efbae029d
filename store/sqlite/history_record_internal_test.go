package sqlite

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// FuzzHistoryRecord: the history's JSON form of a breadcrumb, its context
// spliced in, reads back as the breadcrumb json.Marshal writes, for any
// text in the fields before the context and any context.
func FuzzHistoryRecord(f *testing.F) {
	for _, s := range [][4]string{
		{"plain", "d", "1.0", `{"a":1}`},
		{`,"context":null,`, `"context":null`, `,"context":null,`, `{"context":null}`},
		{"\xff,\"context\":null,", "\u2028<&>", "\x00", `{"a":"<b>&\u2028","c":[1.50,null]}`},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, title, desc, semver, ctxJSON string) {
		in := store.Breadcrumb{Title: title, Description: desc, SemanticVersion: semver, Context: json.RawMessage(ctxJSON),
			Tags: []string{"x"}, SchemaName: "s"}
		b, err := store.NewRecord(store.Actor{OwnerID: "o", AgentID: "a"}, in, time.Unix(1, 0))
		if err != nil {
			return
		}
		got, err := historyRecord(&b)
		if err != nil {
			t.Fatalf("%+v: %v", b, err)
		}
		want, err := json.Marshal(&b)
		if err != nil {
			t.Fatal(err)
		}
		var g, w store.Breadcrumb
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		gj, _ := json.Marshal(&g)
		wj, _ := json.Marshal(&w)
		if string(gj) != string(wj) || string(g.Context) != string(b.Context) {
			t.Fatalf("history\n%s\nwant\n%s", got, want)
		}
	})
}
