package console_test

import (
	"strings"
	"testing"
)

func TestPlaygroundErrorThenPreviewThenSave(t *testing.T) {
	s := newSite(t)
	tok := s.token("acme", "alice", "emitter")
	id := s.create(tok, map[string]any{"title": "shape me", "context": map[string]any{"keep": "yes", "secret": "s3cr3t"}})
	tb := newTab(t, s)
	tb.signIn(tok)
	tb.open("/ui/#/b/" + id)
	tb.until(`document.querySelector("#preview-json") && document.querySelector("#preview-json").textContent.includes("s3cr3t")`)

	// Not JSON: the line of the fault.
	tb.fill("hints", "{\n  \"exclude\": [\n    \"secret\",,\n  ]\n}")
	tb.until(`document.querySelector("#hints-line")`)
	if l := tb.value(`document.querySelector("#hints-line").textContent`); l != "line 3" {
		t.Fatalf("a JSON fault on line 3 is shown at %q", l)
	}
	// A rule the server refuses: its line and its name.
	tb.fill("hints", "{\n  \"transform\": {\n    \"pick\": {\n      \"type\": \"jq\",\n      \"query\": \"((\"\n    }\n  }\n}")
	tb.until(`document.querySelector("#hints-rule")`)
	rule, line := tb.value(`document.querySelector("#hints-rule").textContent`), tb.value(`document.querySelector("#hints-line").textContent`)
	if rule != "transform.pick.query" || line != "line 5" {
		t.Fatalf("a bad rule is shown as %q at %q", rule, line)
	}
	// Fixed: the preview follows.
	tb.fill("hints", `{"exclude": ["secret"]}`)
	tb.until(`!document.querySelector("#hints-rule") && !document.querySelector("#preview-json").textContent.includes("s3cr3t") && document.querySelector("#preview-json").textContent.includes("keep")`)
	tb.screenshot("playground")
	tb.click("#save-hints")
	tb.until(`document.querySelector("#view-json") && !document.querySelector("#view-json").textContent.includes("s3cr3t") && document.querySelector("#full-json").textContent.includes("s3cr3t")`)
	if st, m := s.call("GET", "/breadcrumbs/"+id, tok, nil); st != 200 || strings.Contains(m["context"].(map[string]any)["keep"].(string), "s3cr3t") || m["context"].(map[string]any)["secret"] != nil {
		t.Fatalf("the saved view: %d %v", st, m)
	}
}
