package chat

import (
	"crypto/sha256"
	"strconv"
)

// DedupImages replaces every image that repeats an earlier one (same
// bytes, or the same URL) with a short text block referring to the first,
// and returns the new request (r is not changed) and one warning per
// replaced image. Images inside tool results count too.
func DedupImages(r Request) (Request, []Warning) {
	out := r.Clone()
	first := map[[32]byte]string{}
	var warns []Warning
	walkImages(&out, func(path string, b *Block) {
		key := imageKey(b.Source)
		if at, ok := first[key]; ok {
			*b = Block{Type: TypeText, Text: "[Image: same as " + at + "]", CacheControl: b.CacheControl}
			warns = append(warns, Warnf(path, "a repeat of the image at %s: replaced by a reference to it", at))
			return
		}
		first[key] = path
	})
	return out, warns
}

// StripImages replaces every image with a text stub naming its media type,
// for a model without vision, and returns the new request (r is not
// changed) and one warning per image.
func StripImages(r Request) (Request, []Warning) {
	out := r.Clone()
	var warns []Warning
	walkImages(&out, func(path string, b *Block) {
		*b = Block{Type: TypeText, Text: ImageStub(b.Source), CacheControl: b.CacheControl}
		warns = append(warns, Warnf(path, "the model has no vision: image replaced by a text stub"))
	})
	return out, warns
}

// ImageStub is the text that stands for an image a format cannot carry:
// "[Image: image/png]".
func ImageStub(s *Source) string {
	kind := "image"
	if s != nil && s.MediaType != "" {
		kind = s.MediaType
	} else if s != nil && s.URL != "" {
		kind = s.URL
	}
	return "[Image: " + kind + "]"
}

// DocumentStub is the text that stands for a document a format cannot
// carry: "[Document: <title>]", or, for an untitled document, its URL, its
// media type or its source type in that order ("[Document: document]"
// when it has none of them).
func DocumentStub(b *Block) string {
	kind := "document"
	switch s := b.Source; {
	case b.Title != "":
		kind = b.Title
	case s == nil:
	case s.URL != "":
		kind = s.URL
	case s.MediaType != "":
		kind = s.MediaType
	case s.Type != "":
		kind = s.Type
	}
	return "[Document: " + kind + "]"
}

func imageKey(s *Source) [32]byte {
	if s == nil {
		return sha256.Sum256(nil)
	}
	h := sha256.New()
	h.Write([]byte(s.Type + "\x00" + s.MediaType + "\x00" + s.URL + "\x00"))
	h.Write([]byte(s.Data))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// walkImages calls f for every image block, in order, with its path.
func walkImages(r *Request, f func(path string, b *Block)) {
	for i := range r.Messages {
		walkContent(&r.Messages[i].Content, MessagePath(i)+".content", f)
	}
}

func walkContent(c *Content, path string, f func(string, *Block)) {
	for j := range c.Blocks {
		b := &c.Blocks[j]
		p := path + "[" + strconv.Itoa(j) + "]"
		switch {
		case b.Type == TypeImage:
			f(p, b)
		case b.Type == TypeToolResult && b.Content != nil:
			walkContent(b.Content, p+".content", f)
		}
	}
}
