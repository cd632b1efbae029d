package envelope_test

import (
	"encoding/json"
	"fmt"

	"github.com/ctxkit/ctxkit/envelope"
)

// A search answers with an OK result when its source is authoritative, a
// FALLBACK when it had to read around a stale index, and an ERROR with a
// code when it could not answer at all. The constructors fill in source and
// freshness, so each result is valid as built.
func Example() {
	type hit struct {
		Path string `json:"path"`
	}
	results := []any{
		envelope.OK([]hit{{"main.go"}}, envelope.WithSource(envelope.SourceStore)),
		envelope.Fallback([]hit{{"main.go"}}, envelope.WithMessage("the index is stale: read from disk")),
		envelope.Error[hit]("not_found", "no breadcrumb 42"),
	}
	for _, r := range results {
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
	// Output:
	// {"meta":{"status":"OK","source":"STORE","freshness_state":"FRESH","index_status":null},"items":[{"path":"main.go"}]}
	// {"meta":{"status":"FALLBACK","message":"the index is stale: read from disk","source":"LOCAL_FALLBACK","freshness_state":"STALE","index_status":null},"items":[{"path":"main.go"}]}
	// {"meta":{"status":"ERROR","error_code":"not_found","message":"no breadcrumb 42","source":"NONE","freshness_state":"UNKNOWN","index_status":null},"items":[]}
}

// Validate checks a Result that was decoded rather than constructed, such
// as a reply of a remote ctxkit server.
func ExampleResult_Validate() {
	var r envelope.Result[json.RawMessage]
	reply := `{"meta":{"status":"FALLBACK","source":"STORE","freshness_state":"STALE","index_status":null},"items":[]}`
	if err := json.Unmarshal([]byte(reply), &r); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Validate())
	// Output:
	// envelope: a FALLBACK result has source STORE, not LOCAL_FALLBACK
}
