package gemini_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/gemini"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// strictGemini3 refuses a request the way Gemini 3 is documented to: in
// the current turn (after the last user content holding more than
// function responses) each model content's first functionCall part must
// carry a thoughtSignature. It reads the request as JSON, as the API
// does.
func strictGemini3(body []byte) error {
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             *string                `json:"text"`
				InlineData       json.RawMessage        `json:"inlineData"`
				FileData         json.RawMessage        `json:"fileData"`
				FunctionCall     *struct{ Name string } `json:"functionCall"`
				FunctionResponse json.RawMessage        `json:"functionResponse"`
				ThoughtSignature string                 `json:"thoughtSignature"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	start := 0
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role != "user" {
			continue
		}
		ordinary := false
		for _, p := range c.Parts {
			if p.FunctionResponse == nil && ((p.Text != nil && *p.Text != "") || p.InlineData != nil || p.FileData != nil) {
				ordinary = true
			}
		}
		if ordinary {
			start = i + 1
			break
		}
	}
	for i := start; i < len(req.Contents); i++ {
		c := req.Contents[i]
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature == "" {
				return fmt.Errorf("Function call is missing a thought_signature in functionCall parts (content %d, function %s)", i, p.FunctionCall.Name)
			}
			break
		}
	}
	return nil
}

// fromAnotherModel is an agent's history as another provider produced it:
// tool calls without Gemini signatures, one finished turn and a current
// turn of two steps.
func fromAnotherModel(model string) chat.Request {
	call := func(id, name string) chat.Block {
		return chat.Block{Type: chat.TypeToolUse, ID: id, Name: name, Input: json.RawMessage(`{}`)}
	}
	result := func(id, text string) chat.Block {
		c := chat.Str(text)
		return chat.Block{Type: chat.TypeToolResult, ToolUseID: id, Content: &c}
	}
	return chat.Request{Model: model, Messages: []chat.Message{
		{Role: chat.User, Content: chat.Str("List the files.")},
		{Role: chat.Assistant, Content: chat.Of(call("toolu_01", "ls"))},
		{Role: chat.User, Content: chat.Of(result("toolu_01", "a.go b.go"))},
		{Role: chat.Assistant, Content: chat.Str("a.go and b.go.")},
		{Role: chat.User, Content: chat.Str("Now read both.")},
		{Role: chat.Assistant, Content: chat.Of(chat.Block{Type: chat.TypeText, Text: "Reading."}, call("toolu_02", "read"), call("toolu_03", "read"))},
		{Role: chat.User, Content: chat.Of(result("toolu_02", "package a"), result("toolu_03", "package b"))},
		{Role: chat.Assistant, Content: chat.Of(call("toolu_04", "grep"))},
		{Role: chat.User, Content: chat.Of(result("toolu_04", "no match"))},
	}}
}

func encodeJSON(t *testing.T, req chat.Request) ([]byte, *gemini.Request) {
	t.Helper()
	out, _, err := gemini.EncodeRequest(req, gemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return body, out
}

func TestSignaturePlaceholder(t *testing.T) {
	req := fromAnotherModel("gemini-3-pro-preview")
	// Without the placeholder the strict fake refuses the history: it
	// is a fake that can fail.
	bare, _, _ := gemini.EncodeRequest(fromAnotherModel("gemini-2.5-flash"), gemini.Options{})
	bareBody, _ := json.Marshal(bare)
	if err := strictGemini3(bareBody); err == nil {
		t.Fatal("the strict fake accepts calls without signatures")
	}
	body, out := encodeJSON(t, req)
	if err := strictGemini3(body); err != nil {
		t.Fatalf("refused: %v\n%s", err, body)
	}
	// Only the first call of each step of the current turn is signed;
	// the earlier turn is left alone.
	var signed []string
	for i, c := range out.Contents {
		for j, p := range c.Parts {
			if p.ThoughtSignature != "" {
				signed = append(signed, fmt.Sprintf("%d.%d=%s", i, j, p.ThoughtSignature))
			}
		}
	}
	want := []string{"5.1=" + gemini.SignaturePlaceholder, "7.0=" + gemini.SignaturePlaceholder}
	if fmt.Sprint(signed) != fmt.Sprint(want) {
		t.Fatalf("signed %v, want %v", signed, want)
	}
}

func TestSignaturePlaceholderKeepsRealOnes(t *testing.T) {
	req := fromAnotherModel("models/gemini-3-flash-preview")
	// The last step came from Gemini and has its signature.
	last := &req.Messages[7]
	last.Content.Blocks = append([]chat.Block{{Type: chat.TypeThoughtSignature, Signature: "cmVhbA=="}}, last.Content.Blocks...)
	body, out := encodeJSON(t, req)
	if err := strictGemini3(body); err != nil {
		t.Fatal(err)
	}
	if got := out.Contents[7].Parts[0].ThoughtSignature; got != "cmVhbA==" {
		t.Fatalf("the real signature became %q", got)
	}
	if got := out.Contents[5].Parts[1].ThoughtSignature; got != gemini.SignaturePlaceholder {
		t.Fatalf("the step without one has %q", got)
	}
}

func TestSignaturePlaceholderModels(t *testing.T) {
	for model, want := range map[string]bool{
		"gemini-3-pro-preview":       true,
		"models/gemini-3.1-pro":      true,
		"gemini-flash-latest":        true,
		"":                           true,
		"gemini-2.5-flash":           false,
		"models/gemini-2.0-flash":    false,
		"tunedModels/gemini-1.5-pro": false,
		"gemma-3-27b-it":             false,
	} {
		_, out := encodeJSON(t, fromAnotherModel(model))
		got := out.Contents[7].Parts[0].ThoughtSignature == gemini.SignaturePlaceholder
		if got != want {
			t.Errorf("%q: placeholder %v, want %v", model, got, want)
		}
	}
}

// TestDialectToGeminiRoundTrip: a documented Gemini 3 function-calling
// request read by the dialect and written again by the Gemini encoder is
// the request the client sent, signatures in place.
func TestDialectToGeminiRoundTrip(t *testing.T) {
	body := []byte(`{
	  "systemInstruction": {"parts": [{"text": "You check flights."}]},
	  "contents": [
	    {"role": "user", "parts": [{"text": "Check flight status for AA100 and book a taxi 2 hours before if delayed."}]},
	    {"role": "model", "parts": [{"functionCall": {"name": "check_flight", "args": {"flight": "AA100"}}, "thoughtSignature": "PFNpZ19BPg=="}]},
	    {"role": "user", "parts": [{"functionResponse": {"name": "check_flight", "response": {"output": "delayed, departs 12 PM"}}}]},
	    {"role": "model", "parts": [
	      {"text": "It is delayed.", "thought": true},
	      {"functionCall": {"name": "book_taxi", "args": {"time": "10 AM"}}, "thoughtSignature": "PFNpZ19CPg=="},
	      {"functionCall": {"name": "notify", "args": {"msg": "taxi booked"}}}]},
	    {"role": "user", "parts": [
	      {"functionResponse": {"name": "book_taxi", "response": {"output": "booking confirmed"}}},
	      {"functionResponse": {"name": "notify", "response": {"error": "no phone"}}}]}],
	  "tools": [{"functionDeclarations": [
	    {"name": "check_flight", "description": "Flight status", "parametersJsonSchema": {"type": "object", "properties": {"flight": {"type": "string"}}, "required": ["flight"]}},
	    {"name": "book_taxi", "parametersJsonSchema": {"type": "object", "properties": {"time": {"type": "string"}}}},
	    {"name": "notify", "parametersJsonSchema": {"type": "object", "properties": {"msg": {"type": "string"}}}}]}],
	  "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
	  "generationConfig": {"maxOutputTokens": 4096, "temperature": 1, "topP": 0.95, "topK": 40, "stopSequences": ["END"]}
	}`)
	req, err := gemini.Dialect().Decode(body, wire.Incoming{Model: "gemini-3-pro-preview", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	out, warns, err := gemini.EncodeRequest(req, gemini.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Fatalf("warnings: %v", warns)
	}
	got, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := wiretest.Diff(body, got); d != "" {
		t.Fatalf("%s\n got: %s", d, got)
	}
	if out.Path() != "models/gemini-3-pro-preview:streamGenerateContent?alt=sse" {
		t.Fatalf("path %s", out.Path())
	}
	if err := strictGemini3(got); err != nil {
		t.Fatal(err)
	}
}

// TestSealedSignatures: a signature ctxkit sealed goes to Gemini opened
// when it is Gemini's, and as the placeholder, with a warning naming the
// provider, when another provider made it; an unsealed one goes as it
// came.
func TestSealedSignatures(t *testing.T) {
	own := wire.SealSignature(wire.HomeGemini, "cmVhbA==", "")
	for _, c := range []struct {
		name  string
		block chat.Block
		want  string
		warn  string
	}{
		{"own sealed", chat.Block{Type: chat.TypeThoughtSignature, Signature: own}, "cmVhbA==", ""},
		{"own sealed, thinking without text", chat.Block{Type: chat.TypeThinking, Signature: own}, "cmVhbA==", ""},
		{"unsealed", chat.Block{Type: chat.TypeThoughtSignature, Signature: "cmVhbA=="}, "cmVhbA==", ""},
		{"anthropic's", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealSignature(wire.HomeAnthropic, "EqQB", "t")}, gemini.SignaturePlaceholder, "made by anthropic"},
		{"responses'", chat.Block{Type: chat.TypeThinking, Signature: wire.SealSignature(wire.HomeResponses, "gAAA", "")}, gemini.SignaturePlaceholder, "made by responses"},
		{"redacted", chat.Block{Type: chat.TypeThoughtSignature, Signature: wire.SealRedacted("data")}, gemini.SignaturePlaceholder, "redacted thinking"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chat.Request{Model: "gemini-2.5-flash", Messages: []chat.Message{
				{Role: chat.User, Content: chat.Content{IsString: true, Text: "hi"}},
				{Role: chat.Assistant, Content: chat.Content{Blocks: []chat.Block{c.block, {Type: chat.TypeToolUse, ID: "t1", Name: "f", Input: json.RawMessage(`{}`)}}}},
				{Role: chat.User, Content: chat.Content{Blocks: []chat.Block{{Type: chat.TypeToolResult, ToolUseID: "t1", Content: &chat.Content{IsString: true, Text: "ok"}}}}},
			}}
			out, warns, err := gemini.EncodeRequest(req, gemini.Options{})
			if err != nil {
				t.Fatal(err)
			}
			call := out.Contents[1].Parts[0]
			if call.FunctionCall == nil || call.ThoughtSignature != c.want {
				t.Fatalf("parts %+v, want the call signed %q", out.Contents[1].Parts, c.want)
			}
			switch {
			case c.warn == "" && len(warns) > 0:
				t.Fatalf("warnings %v", warns)
			case c.warn != "" && (len(warns) != 1 || warns[0].Path != "messages[1].content[0]" || !strings.Contains(warns[0].Message, c.warn)):
				t.Fatalf("warnings %v, want one naming %q", warns, c.warn)
			}
		})
	}
}
