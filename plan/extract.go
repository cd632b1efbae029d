package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Extract pulls the plan's JSON text out of a model's reply: the body of
// the first markdown code fence that holds a JSON object (a "json" fence
// first), else the first JSON object in the prose. It only finds the
// text; Parse decodes it.
func Extract(reply string) ([]byte, error) {
	if len(reply) > MaxPlanBytes {
		return nil, &Error{Code: CodeTooLarge, Msg: fmt.Sprintf("the reply is %d bytes, more than %d", len(reply), MaxPlanBytes)}
	}
	fences := fencedBlocks(reply)
	for _, jsonOnly := range []bool{true, false} {
		for _, f := range fences {
			if jsonOnly != (f.lang == "json") {
				continue
			}
			body := strings.TrimSpace(f.body)
			if strings.HasPrefix(body, "{") && json.Valid([]byte(body)) {
				return []byte(body), nil
			}
		}
	}
	tries := 0
	for i := 0; i < len(reply) && tries < maxExtractTries; i++ {
		if reply[i] != '{' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(reply[i:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil {
			return bytes.TrimSpace(raw), nil
		}
	}
	return nil, &Error{Code: CodeNoPlan, Msg: "the reply holds no JSON object: answer with the plan as one JSON object"}
}

type fence struct{ lang, body string }

// fencedBlocks finds the ``` (or ~~~) blocks of a markdown text.
func fencedBlocks(s string) []fence {
	var out []fence
	lines := strings.SplitAfter(s, "\n")
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		marker := ""
		switch {
		case strings.HasPrefix(t, "```"):
			marker = "```"
		case strings.HasPrefix(t, "~~~"):
			marker = "~~~"
		default:
			continue
		}
		lang := strings.ToLower(strings.TrimSpace(strings.TrimLeft(t, marker[:1])))
		var body strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == marker {
				break
			}
			body.WriteString(lines[j])
		}
		out = append(out, fence{lang: lang, body: body.String()})
		i = j
	}
	return out
}
