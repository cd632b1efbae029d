package responses_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// forwardOut is what the forwarded streams of these tests are written
// for.
func forwardOut() wire.Outgoing {
	return wire.Outgoing{Request: &chat.Request{Model: "route-model"}, Model: "route-model", ID: "resp_ours", Created: 1700000000}
}

// bothPaths writes the upstream stream up to a client twice: decoded and
// encoded (the dialect's Stream), and through the dialect's Forwarder.
// Between the forwarder's Decode and Stream is what the gateway puts
// there at its simplest: every chunk passed on.
func bothPaths(upstream []byte, chunks bool) (encoded, forwarded []byte, yielded []chat.Chunk) {
	row := responses.Dialect()
	out := forwardOut()
	var a bytes.Buffer
	_ = row.Stream(&a, out, responses.DecodeStream(bytes.NewReader(upstream)))
	var b bytes.Buffer
	fw := row.Forward(out, wire.ForwardOptions{Chunks: chunks})
	_ = fw.Stream(&b, func(yield func(chat.Chunk, error) bool) {
		for c, err := range fw.Decode(iotest.HalfReader(bytes.NewReader(upstream))) {
			if err == nil {
				yielded = append(yielded, c)
			}
			if !yield(c, err) {
				return
			}
		}
	})
	return a.Bytes(), b.Bytes(), yielded
}

// compare holds the forwarded stream of upstream to the encoded one,
// byte for byte, and the chunks a recording forwarder yields to those
// the decoder makes; it returns how many chunks the forwarder did not
// yield when not asked to (the forwarded events' chunks).
func compare(t testing.TB, upstream []byte) int {
	t.Helper()
	var want []chat.Chunk
	for c, err := range responses.DecodeStream(bytes.NewReader(upstream)) {
		if err == nil {
			want = append(want, c)
		}
	}
	skipped := 0
	for _, chunks := range []bool{false, true} {
		enc, fwd, yielded := bothPaths(upstream, chunks)
		if !bytes.Equal(enc, fwd) {
			t.Fatalf("chunks %v: the client reads\n%s\nforwarded, and\n%s\nencoded; upstream:\n%s", chunks, fwd, enc, upstream)
		}
		if err := sequenced(fwd); err != nil {
			t.Fatalf("chunks %v: %v\n%s", chunks, err, fwd)
		}
		if chunks {
			if !slices.EqualFunc(yielded, want, sameChunk) {
				t.Fatalf("the forwarder yielded\n%s\nthe decoder makes\n%s", chunksJSON(yielded), chunksJSON(want))
			}
		} else {
			skipped = len(want) - len(yielded)
		}
	}
	return skipped
}

// sequenced checks that the events of a client's stream are numbered
// from 0 without a gap.
func sequenced(body []byte) error {
	n := 0
	for line := range strings.SplitSeq(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Seq *int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("event %s: %v", data, err)
		}
		if ev.Seq == nil || *ev.Seq != n {
			return fmt.Errorf("event %s: sequence_number is not %d", data, n)
		}
		n++
	}
	return nil
}

func sameChunk(a, b chat.Chunk) bool {
	return bytes.Equal(chunksJSON([]chat.Chunk{a}), chunksJSON([]chat.Chunk{b}))
}

func chunksJSON(cs []chat.Chunk) []byte {
	b, _ := json.Marshal(cs)
	return b
}

// sse writes events (their JSON) as a stream, each with its event line.
func sse(events ...string) string {
	var b strings.Builder
	for _, ev := range events {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(ev), &t)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", t.Type, ev)
	}
	return b.String()
}

const (
	evCreated   = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","status":"in_progress","model":"up-model","output":[],"usage":null}}`
	evMsgAdded  = `{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_up","type":"message","status":"in_progress","content":[],"role":"assistant"}}`
	evPartAdded = `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_up","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`
	evCompleted = `{"type":"response.completed","sequence_number":99,"response":{"id":"resp_up","object":"response","status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":4,"output_tokens_details":{"reasoning_tokens":1}}}}`
)

// textDelta is an output_text.delta of the message evMsgAdded opens.
func textDelta(delta string) string {
	return `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_up","output_index":0,"content_index":0,"delta":` + delta + `,"logprobs":[],"obfuscation":"Ab"}`
}

// forwardStreams are upstream streams of the shapes a forwarder meets,
// beside the fixtures.
var forwardStreams = []string{
	// Text in every escape: as the encoder writes it, and not.
	sse(evCreated, evMsgAdded, evPartAdded, textDelta(`"Hello"`), textDelta(`" \"there\"\n\t\\ ü"`),
		textDelta(`"\u00e9 \ud83d\ude00 \/ \b\f \u2028"`), textDelta("\"raw \u2028 \u2029 sep\""), textDelta(`"<&>"`),
		textDelta(`"a\/b"`), textDelta(`"a\bc"`), textDelta(`"\f"`), textDelta(`"\u0041\u001f"`), textDelta(`"\r\n"`),
		textDelta(`""`), evCompleted),
	// A refusal, and deltas named by their item id alone, or by an
	// index the decoder does not know.
	sse(evCreated, evMsgAdded, evPartAdded,
		`{"type":"response.refusal.delta","item_id":"msg_up","output_index":0,"content_index":0,"delta":"I can't"}`,
		`{"type":"response.output_text.delta","item_id":"msg_up","delta":" help"}`,
		`{"type":"response.output_text.delta","output_index":7,"delta":" elsewhere"}`,
		`{"type":"response.output_text.done","item_id":"msg_up","output_index":0,"content_index":0,"text":"I can't help elsewhere"}`,
		evCompleted),
	// Shapes a forwarder leaves to the decoder: a key twice, a key in
	// another case, an unknown key, a null, a number where an integer is
	// read, a delta before its item.
	sse(evCreated,
		textDelta(`"before its item"`),
		evMsgAdded, evPartAdded,
		`{"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"delta":"a","delta":"b"}`,
		`{"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"Delta":"c"}`,
		`{"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"delta":"d","extra":1}`,
		`{"type":"response.output_text.delta","item_id":null,"output_index":0,"delta":"e"}`,
		`{"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"summary_index":1.5,"delta":"f"}`,
		`{"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"delta":"g","sequence_number":{"x":[1,2]}}`,
		`{"type":"response.output_text.delta","item_id":"msg_up","output_index":0,"delta":"h"} `,
		evCompleted),
	// Reasoning: summary parts, raw reasoning, then text and calls.
	sse(evCreated,
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[]}}`,
		`{"type":"response.reasoning_summary_part.added","item_id":"rs_up","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`,
		`{"type":"response.reasoning_summary_text.delta","item_id":"rs_up","output_index":0,"summary_index":0,"delta":"**Plan**"}`,
		`{"type":"response.reasoning_summary_text.delta","item_id":"rs_up","output_index":0,"summary_index":0,"delta":" step\none"}`,
		`{"type":"response.reasoning_summary_part.added","item_id":"rs_up","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}`,
		`{"type":"response.reasoning_summary_text.delta","item_id":"rs_up","output_index":0,"summary_index":1,"delta":"two"}`,
		`{"type":"response.reasoning_text.delta","item_id":"rs_up","output_index":0,"content_index":0,"delta":" raw"}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[],"encrypted_content":"sig"}}`,
		`{"type":"response.reasoning_text.delta","item_id":"rs_up","output_index":0,"content_index":0,"delta":" after"}`,
		evMsgAdded, evPartAdded, textDelta(`"text"`),
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_up","type":"function_call","status":"in_progress","arguments":"","call_id":"call_up","name":"get"}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"{\"city\":"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"\"Par\u00e9is\"}"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"  "}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_up2","type":"function_call","status":"in_progress","arguments":"{","call_id":"call_up2","name":"put"}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"x"}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_up2","output_index":2,"delta":"}"}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_up","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_up","name":"get"}}`,
		`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"late"}`,
		evCompleted),
	// An error in the middle, text after it, a stream cut before its end.
	sse(evCreated, evMsgAdded, evPartAdded, textDelta(`"one"`),
		`{"type":"error","code":"server_error","message":"boom"}`,
		textDelta(`"two"`)),
	// Not JSON after forwarded deltas.
	sse(evCreated, evMsgAdded, evPartAdded, textDelta(`"one"`), textDelta(`"two"`)) + "data: {nope}\n\ndata: " + textDelta(`"three"`) + "\n\n",
	// Deltas like the one before but for their sequence number, delta
	// or obfuscation, and near misses: numbers of other lengths and
	// leading zeros, obfuscation gone, not a string, back; white space;
	// an empty delta; another item's deltas in turn; an escape the
	// decoder refuses, last.
	sse(evCreated, evMsgAdded, evPartAdded,
		`{"type":"response.output_text.delta","sequence_number":9,"item_id":"msg_up","output_index":0,"content_index":0,"delta":"nine","logprobs":[],"obfuscation":"Ab"}`,
		`{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" ten","logprobs":[],"obfuscation":"AbCd"}`,
		`{"type":"response.output_text.delta","sequence_number":0,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" \"q\"\n","logprobs":[],"obfuscation":""}`,
		`{"type":"response.output_text.delta","sequence_number":-1,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" neg","logprobs":[],"obfuscation":"x"}`,
		`{"type":"response.output_text.delta","sequence_number":11,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" \u00e9","logprobs":[],"obfuscation":"x"}`,
		`{"type":"response.output_text.delta","sequence_number":12,"item_id":"msg_up","output_index":0,"content_index":0,"delta":"","logprobs":[],"obfuscation":"x"}`,
		`{"type":"response.output_text.delta","sequence_number":13,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" pad","logprobs":[],"obfuscation":7}`,
		`{"type":"response.output_text.delta","sequence_number":14,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" none","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":15,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" still","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":16,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" back","logprobs":[],"obfuscation":"Zz"}`,
		`{"type":"response.output_text.delta", "sequence_number": 17, "item_id":"msg_up","output_index":0,"content_index":0,"delta": " spaced" ,"logprobs":[],"obfuscation":"Zz"}`,
		`{"type":"response.output_text.delta", "sequence_number": 18, "item_id":"msg_up","output_index":0,"content_index":0,"delta": " again" ,"logprobs":[],"obfuscation":"Zz"}`,
		`{"type":"response.output_text.delta","sequence_number":19,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" trailing","logprobs":[],"obfuscation":"Zz"} `,
		`{"type":"response.output_text.delta","sequence_number":20,"item_id":"msg_up","output_index":0,"content_index":0,"delta":" id","logprobs":[],"obfuscation":"Zz","item_id":"msg_up"}`,
		`{"type":"response.output_text.done","item_id":"msg_up","output_index":0,"content_index":0,"text":"x"}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_a","type":"function_call","status":"in_progress","arguments":"","call_id":"call_a","name":"get"}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_b","type":"function_call","status":"in_progress","arguments":"","call_id":"call_b","name":"put"}}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":30,"item_id":"fc_a","output_index":1,"delta":"{\"a\":"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":31,"item_id":"fc_b","output_index":2,"delta":"{\"b\":"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":32,"item_id":"fc_a","output_index":1,"delta":"1}"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":33,"item_id":"fc_a","output_index":1,"delta":" "}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":34,"item_id":"fc_b","output_index":2,"delta":"2}"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":35,"item_id":"fc_b","output_index":2,"delta":"\u0020"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":36,"item_id":"fc_b","output_index":2,"delta":"\x"}`,
		evCompleted),
}

// TestForwardMatchesEncode holds the forwarder to the dialect's Stream
// over every stream fixture and the hand-written shapes: the client
// reads the same bytes, sequence numbers from 0 without a gap, and a
// recording forwarder yields every chunk the decoder makes.
func TestForwardMatchesEncode(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "stream", "*.sse"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stream fixtures: %v", err)
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(p), func(t *testing.T) { compare(t, body) })
	}
	for i, s := range forwardStreams {
		t.Run(fmt.Sprintf("shape%d", i), func(t *testing.T) { compare(t, []byte(s)) })
	}
}

// TestForwardPassesDeltas checks that the forwarder does forward: of a
// stream of text, reasoning and argument deltas, only the chunks of the
// first delta of each item go through the pipeline.
func TestForwardPassesDeltas(t *testing.T) {
	skipped := compare(t, []byte(forwardStreams[3]))
	// Forwarded: " step\none", "two", " raw" (the first reasoning delta
	// begins the encoder's part), the five argument deltas of calls under
	// way; not the first text delta, nor a delta after its item's end.
	if skipped != 8 {
		t.Errorf("%d chunks forwarded, want 8", skipped)
	}
	text, _ := os.ReadFile(filepath.Join("testdata", "stream", "text.sse"))
	if skipped := compare(t, text); skipped != 1 {
		t.Errorf("text.sse: %d chunks forwarded, want 1", skipped)
	}
}

// failingWriter fails every write after its first n bytes.
type failingWriter struct{ n int }

var errClientGone = errors.New("the client went away")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		w.n = 0
		return 0, errClientGone
	}
	w.n -= len(p)
	return len(p), nil
}

// TestForwardWriteError: a write that fails while a delta is forwarded
// ends the stream with the write's error.
func TestForwardWriteError(t *testing.T) {
	var events []string
	events = append(events, evCreated, evMsgAdded, evPartAdded)
	for range 50 {
		events = append(events, textDelta(`"word "`))
	}
	upstream := sse(append(events, evCompleted)...)
	var whole bytes.Buffer
	fw := responses.Dialect().Forward(forwardOut(), wire.ForwardOptions{})
	if err := fw.Stream(&whole, fw.Decode(strings.NewReader(upstream))); err != nil {
		t.Fatal(err)
	}
	// Cut the client off in the middle of the deltas.
	w := &failingWriter{n: whole.Len() / 2}
	fw = responses.Dialect().Forward(forwardOut(), wire.ForwardOptions{})
	yielded := 0
	err := fw.Stream(w, func(yield func(chat.Chunk, error) bool) {
		for c, err := range fw.Decode(strings.NewReader(upstream)) {
			yielded++
			if !yield(c, err) {
				return
			}
		}
	})
	if !errors.Is(err, errClientGone) {
		t.Fatalf("Stream returned %v, want the write's error", err)
	}
	if yielded > 3 {
		t.Errorf("%d chunks yielded after the client went away, want the stream stopped", yielded)
	}
}

// FuzzForward holds the forwarder to the dialect's Stream for any
// upstream bytes: the same client stream, the same chunks.
func FuzzForward(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.sse"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range forwardStreams {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, upstream []byte) {
		if len(upstream) > 1<<16 {
			return
		}
		compare(t, upstream)
	})
}

// TestDecodeFindsItems: an event names its item by output index or by
// id, among a few items or many, and one registered again under a known
// id or index is the one found after.
func TestDecodeFindsItems(t *testing.T) {
	for _, n := range []int{3, 8, 9, 20} {
		var evs []string
		for i := range n {
			evs = append(evs, fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"id":"fc_%d","type":"function_call","arguments":"","call_id":"c%d","name":"f"}}`, i, i, i))
		}
		// A message that reuses call 1's id under a new index, and one
		// that reuses call 0's index under a new id.
		evs = append(evs,
			fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"id":"fc_1","type":"message","content":[]}}`, n),
			fmt.Sprintf(`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_%d","type":"message","content":[]}}`, n+1))
		for i := range n {
			evs = append(evs,
				fmt.Sprintf(`{"type":"response.function_call_arguments.delta","output_index":%d,"delta":"i%d"}`, i, i),
				fmt.Sprintf(`{"type":"response.function_call_arguments.delta","item_id":"fc_%d","delta":"d%d"}`, i, i))
		}
		evs = append(evs,
			fmt.Sprintf(`{"type":"response.output_text.delta","output_index":%d,"delta":"m"}`, n),
			fmt.Sprintf(`{"type":"response.output_text.delta","item_id":"msg_%d","delta":"q"}`, n+1),
			`{"type":"response.function_call_arguments.delta","output_index":99,"delta":"none"}`,
			`{"type":"response.function_call_arguments.delta","item_id":"fc_99","delta":"none"}`)
		var got []string
		for c, err := range responses.DecodeStream(strings.NewReader(sse(evs...))) {
			if err != nil {
				t.Fatalf("%d items: %v", n, err)
			}
			switch c.Type {
			case chat.ChunkToolCallDelta:
				got = append(got, fmt.Sprintf("%d:%s", c.Index, c.Arguments))
			case chat.ChunkText:
				got = append(got, c.Text)
			}
		}
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("%d:i%d", i, i), fmt.Sprintf("%d:d%d", i, i))
		}
		want = append(want, "m", "q")
		if !slices.Equal(got, want) {
			t.Errorf("%d items: got\n%q\nwant\n%q", n, got, want)
		}
	}
}
