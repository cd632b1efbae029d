package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// yamlError is a fault the YAML parser found: a key given twice, at its
// line, or a fault of syntax. The parser's line of a syntax fault is that
// of the construct it was reading, sometimes counted from 0: it stays in
// the message as the parser wrote it ("yaml: line 1: did not find
// expected key"), not offered as the place of the fault.
type yamlError struct {
	line int // 0: none known
	msg  string
}

func (e *yamlError) Error() string { return e.msg }

// yamlLine reads the line out of a message of the YAML parser's
// TypeError: "line 2: mapping key "a" already defined at line 1".
// Compiled on first use, not in every process at start.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })

// yamlToJSON turns a YAML configuration into JSON, so both go through the
// same strict decoding. Keys must be strings; an error of a key that is
// not names its path.
func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			// Placed by the nodes it read: the lines are the file's.
			if m := yamlLine().FindStringSubmatch(te.Errors[0]); m != nil {
				n, _ := strconv.Atoi(m[1])
				return nil, &yamlError{line: n, msg: m[2]}
			}
			return nil, &yamlError{msg: te.Errors[0]}
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "yaml: ") {
			msg = "yaml: " + msg
		}
		return nil, &yamlError{msg: msg}
	}
	v, err := jsonable(v, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func jsonable(v any, at string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			y, err := jsonable(x, strictjson.Join(at, k))
			if err != nil {
				return nil, err
			}
			v[k] = y
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%s: key %v is not a string", pathOrTop(at), k)
			}
			y, err := jsonable(x, strictjson.Join(at, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = y
		}
		return out, nil
	case []any:
		for i, x := range v {
			y, err := jsonable(x, strictjson.Index(at, i))
			if err != nil {
				return nil, err
			}
			v[i] = y
		}
		return v, nil
	}
	return v, nil
}

// yamlPosition is the line and column in data, a YAML document, of the
// field steps lead to (a mapping's key, a sequence's item), or of the
// deepest part of them there is; 0, 0 when data cannot be read or the
// first step leads nowhere. Aliases are followed, and a key not found in
// a mapping is looked for in what it merges (<<).
func yamlPosition(data []byte, steps []pathStep) (line, col int) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return 0, 0
	}
	n := doc.Content[0]
	for _, s := range steps {
		n = yamlDeref(n)
		var at, next *yaml.Node
		if s.index < 0 {
			at, next = yamlMember(n, s.key, 0)
		} else if n.Kind == yaml.SequenceNode && s.index < len(n.Content) {
			at, next = n.Content[s.index], n.Content[s.index]
		}
		if at == nil {
			break
		}
		line, col = at.Line, at.Column
		n = next
	}
	return line, col
}

// yamlDeref is n, or what it is an alias of.
func yamlDeref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxConfigDepth; i++ {
		n = n.Alias
	}
	return n
}

// yamlMember is the key node and the value node of key in mapping n, or
// of the mappings it merges; nil, nil when it has none.
func yamlMember(n *yaml.Node, key string, depth int) (*yaml.Node, *yaml.Node) {
	if n.Kind != yaml.MappingNode || depth > maxConfigDepth {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == key && k.Tag != "!!merge" {
			return k, v
		}
		if k.Tag == "!!merge" {
			merges = append(merges, yamlDeref(v))
		}
	}
	for _, m := range merges {
		if m.Kind == yaml.SequenceNode {
			for _, x := range m.Content {
				if k, v := yamlMember(yamlDeref(x), key, depth+1); k != nil {
					return k, v
				}
			}
		} else if k, v := yamlMember(m, key, depth+1); k != nil {
			return k, v
		}
	}
	return nil, nil
}
