// Package canonjson writes a decoded JSON value in ctxkit's canonical form:
// compact, object keys sorted, no HTML escaping and no trailing newline. The
// store keeps contexts and hints in this form (so equal documents have equal
// checksums), a hints document's hash is taken over it, and views are
// written in it, because a model reads "<", not "\u003c".
package canonjson

import (
	"bytes"
	"encoding/json"
)

// Marshal returns v in canonical form. Object keys come out sorted because
// encoding/json sorts map keys; a json.Number is written as it was read.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
