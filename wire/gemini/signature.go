package gemini

import "strings"

// SignaturePlaceholder is the thoughtSignature Google documents for a
// function call Gemini did not produce (history from another model, or
// written by hand): Gemini 3 refuses a function call of the current turn
// without a signature, and accepts this value in place of a real one.
const SignaturePlaceholder = "skip_thought_signature_validator"

// signatureRequired reports whether model checks the signatures of the
// current turn's function calls: Gemini 3 and later do. Gemini 1.x, 2.x
// and Gemma do not, so they are left alone; any other name (a later
// model, an alias such as gemini-flash-latest) is taken to check.
func signatureRequired(model string) bool {
	if k := strings.LastIndexByte(model, '/'); k >= 0 {
		model = model[k+1:]
	}
	for _, old := range []string{"gemini-1", "gemini-2", "gemma"} {
		if strings.HasPrefix(model, old) {
			return false
		}
	}
	return true
}

// signCalls gives SignaturePlaceholder to the first functionCall part of
// each step of the current turn that has no signature. The current turn
// begins after the last user content that holds something other than
// function responses; each model content after it is a step. Real
// signatures are kept, and earlier turns, which Gemini does not check, are
// left as they are.
func signCalls(contents []Content) {
	start := 0
	for i := len(contents) - 1; i >= 0; i-- {
		if contents[i].Role == RoleUser && !onlyResponses(contents[i].Parts) {
			start = i + 1
			break
		}
	}
	for i := start; i < len(contents); i++ {
		c := &contents[i]
		if c.Role != RoleModel {
			continue
		}
		for j := range c.Parts {
			p := &c.Parts[j]
			if p.FunctionCall == nil {
				continue
			}
			if p.ThoughtSignature == "" {
				p.ThoughtSignature = SignaturePlaceholder
			}
			break
		}
	}
}

// onlyResponses reports whether parts are function responses alone (and
// parts that carry nothing, such as a lone signature).
func onlyResponses(parts []Part) bool {
	for i := range parts {
		p := &parts[i]
		if p.FunctionResponse == nil && (p.Text != "" || p.InlineData != nil || p.FileData != nil || p.FunctionCall != nil) {
			return false
		}
	}
	return true
}
