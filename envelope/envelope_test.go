package envelope_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/envelope"
)

type item struct{ N int }

// marshaled encodes itself, which the envelope must respect.
type marshaled struct{ v string }

func (m marshaled) MarshalJSON() ([]byte, error) { return json.Marshal("custom:" + m.v) }

func TestConstructors(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	st := &envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexFresh, LastIndexedAt: at, LastIndexedCommit: "abc", SchemaVersion: 1}
	cases := []struct {
		name string
		got  any
		want string
	}{
		{"ok defaults", envelope.OK([]item{{1}}),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":null},"items":[{"N":1}]}`},
		{"ok with source", envelope.OK([]item{}, envelope.WithSource(envelope.SourceStore)),
			`{"meta":{"status":"OK","source":"STORE","freshness_state":"FRESH","index_status":null},"items":[]}`},
		{"ok nil items", envelope.OK[item](nil),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":null},"items":[]}`},
		{"fallback forces source", envelope.Fallback([]item{{2}}, envelope.WithSource(envelope.SourceStore), envelope.WithMessage("disk")),
			`{"meta":{"status":"FALLBACK","message":"disk","source":"LOCAL_FALLBACK","freshness_state":"STALE","index_status":null},"items":[{"N":2}]}`},
		{"fallback unknown", envelope.Fallback([]item{}, envelope.WithFreshness(envelope.Unknown)),
			`{"meta":{"status":"FALLBACK","source":"LOCAL_FALLBACK","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
		{"error", envelope.Error[item]("not_found", "no such thing", envelope.WithSource(envelope.SourceStore)),
			`{"meta":{"status":"ERROR","error_code":"not_found","message":"no such thing","source":"NONE","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
		{"error without code", envelope.Error[item]("", ""),
			`{"meta":{"status":"ERROR","error_code":"internal","message":"error internal (no message given)","source":"NONE","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
		{"index status", envelope.OK([]item{}, envelope.WithIndexStatus(st)),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":{"repo":"r","index_state":"fresh","last_indexed_at":"2025-03-04T04:06:07Z","last_indexed_commit":"abc","schema_version":1}},"items":[]}`},
		{"marshaler items", envelope.OK([]marshaled{{"a"}}),
			`{"meta":{"status":"OK","source":"RAG_GRAPH","freshness_state":"FRESH","index_status":null},"items":["custom:a"]}`},
		{"zero result", envelope.Result[item]{Meta: envelope.Meta{Status: envelope.StatusOK, Source: envelope.SourceStore}},
			`{"meta":{"status":"OK","source":"STORE","freshness_state":"UNKNOWN","index_status":null},"items":[]}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.got)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if err := envelope.Error[item]("x", "y").Validate(); err != nil {
		t.Error(err)
	}
	bad := envelope.Result[item]{Meta: envelope.Meta{Status: envelope.StatusFallback, Source: envelope.SourceStore}}
	if bad.Validate() == nil {
		t.Error("a FALLBACK from the store validated")
	}
	bad = envelope.Result[item]{Meta: envelope.Meta{Status: envelope.StatusError, Source: envelope.SourceNone, ErrorCode: "x", Message: "y"}, Items: []item{{1}}}
	if bad.Validate() == nil {
		t.Error("an ERROR with items validated")
	}
	if (envelope.Result[item]{Meta: envelope.Meta{Status: "MAYBE", Source: "X"}}).Validate() == nil {
		t.Error("an unknown status validated")
	}
}

func TestIndexStatusRoundTrip(t *testing.T) {
	st := envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexError, LastIndexedAt: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC),
		LastIndexedCommit: "c", SchemaVersion: 1, LastError: "boom"}
	data, _ := json.Marshal(st)
	if !strings.Contains(string(data), `"last_error":"boom"`) || !strings.Contains(string(data), `"2025-01-02T03:04:05.000006Z"`) {
		t.Fatalf("%s", data)
	}
	var back envelope.IndexStatus
	if err := json.Unmarshal(data, &back); err != nil || back != st {
		t.Fatalf("%v %+v", err, back)
	}
	st.LastError = ""
	data, _ = json.Marshal(st)
	if strings.Contains(string(data), "last_error") {
		t.Fatalf("empty last_error not omitted: %s", data)
	}
	if json.Unmarshal([]byte(`{"last_indexed_at":"yesterday"}`), &back) == nil {
		t.Fatal("a bad time parsed")
	}
	// Never indexed: last_indexed_at is left out, never "".
	data, _ = json.Marshal(envelope.IndexStatus{Repo: "r", IndexState: envelope.IndexRebuilding, SchemaVersion: 1})
	if strings.Contains(string(data), "last_indexed_at") {
		t.Fatalf("zero last_indexed_at written: %s", data)
	}
	if err := json.Unmarshal(data, &back); err != nil || !back.LastIndexedAt.IsZero() {
		t.Fatalf("%v %+v", err, back)
	}
}
