// Package render holds the text renderings the text-only formats
// (wire/simple, wire/vscodelm) share.
package render

import "github.com/ctxkit/ctxkit/chat"

// Document is the text that stands for a document block: its label
// (chat.DocumentStub), then its context and, for a text source, its text,
// one per line. whole reports whether it carries the whole document (a
// text source).
func Document(b *chat.Block) (text string, whole bool) {
	text = chat.DocumentStub(b)
	if b.Context != "" {
		text += "\n" + b.Context
	}
	whole = b.Source != nil && b.Source.Type == "text"
	if whole {
		text += "\n" + b.Source.Data
	}
	return text, whole
}
