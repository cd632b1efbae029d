package gemini_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON.
var encode = wiretest.Adapt(gemini.EncodeRequest)

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }

// TestRoundTrip checks that the hand-written Part encoding and the struct
// tags agree: decoding the JSON with the tags and encoding it again gives
// the same bytes.
func TestRoundTrip(t *testing.T) {
	out, _, err := encode(wiretest.Conversation(12), nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var back gemini.Request
	if err := json.Unmarshal(first, &back); err != nil {
		t.Fatal(err)
	}
	second, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("round trip differs:\n%s\n%s", first, second)
	}
}

func TestPartText(t *testing.T) {
	for _, c := range []struct {
		part gemini.Part
		want string
	}{
		{gemini.Part{}, `{"text":""}`},
		{gemini.Part{ThoughtSignature: "s"}, `{"text":"","thoughtSignature":"s"}`},
		{gemini.Part{Text: "a\"b", Thought: true}, `{"text":"a\"b","thought":true}`},
		{gemini.Part{FunctionCall: &gemini.FunctionCall{Name: "f"}}, `{"functionCall":{"name":"f","args":{}}}`},
		{gemini.Part{FileData: &gemini.FileData{FileURI: "u"}}, `{"fileData":{"fileUri":"u"}}`},
	} {
		got, err := json.Marshal(c.part)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
	if _, err := json.Marshal(gemini.Part{FunctionCall: &gemini.FunctionCall{Name: "f", Args: json.RawMessage(`{`)}}); err == nil {
		t.Error("invalid args were encoded")
	}
}

func TestPath(t *testing.T) {
	for _, c := range []struct {
		r    gemini.Request
		want string
	}{
		{gemini.Request{Model: "gemini-2.5-pro"}, "models/gemini-2.5-pro:generateContent"},
		{gemini.Request{Model: "gemini-2.5-pro", Stream: true}, "models/gemini-2.5-pro:streamGenerateContent?alt=sse"},
		{gemini.Request{Model: "tunedModels/mine"}, "tunedModels/mine:generateContent"},
	} {
		if got := c.r.Path(); got != c.want {
			t.Errorf("Path() = %q, want %q", got, c.want)
		}
	}
}

// TestNoAliasing checks that changing the output leaves the input alone.
func TestNoAliasing(t *testing.T) {
	req := wiretest.Conversation(8)
	before, _ := json.Marshal(req)
	out, _, err := gemini.EncodeRequest(req, gemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range out.Contents {
		for j := range out.Contents[i].Parts {
			if fc := out.Contents[i].Parts[j].FunctionCall; fc != nil {
				for k := range fc.Args {
					fc.Args[k] = ' '
				}
			}
		}
	}
	for k := range out.Tools[0].FunctionDeclarations[0].ParametersJSONSchema {
		out.Tools[0].FunctionDeclarations[0].ParametersJSONSchema[k] = ' '
	}
	after, _ := json.Marshal(req)
	if !bytes.Equal(before, after) {
		t.Fatal("changing the output changed the input")
	}
}

func TestBadOptions(t *testing.T) {
	req, err := chat.DecodeRequest([]byte(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gemini.EncodeRequest(req, gemini.Options{Schema: "yaml"}); err == nil {
		t.Fatal("an unknown schema option was accepted")
	}
	if _, _, err := encode(req, json.RawMessage(`{"nope":1}`)); err == nil {
		t.Fatal("an unknown option field was accepted")
	}
	out, warns, err := encode(req, json.RawMessage(`null`))
	if err != nil || len(warns) != 0 || !reflect.DeepEqual(out.(*gemini.Request).Contents[0].Parts, []gemini.Part{{Text: "hi"}}) {
		t.Fatalf("null options: %v %v %v", out, warns, err)
	}
}
