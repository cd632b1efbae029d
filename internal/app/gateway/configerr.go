package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/internal/strictjson"
)

// Bounds of a configuration file.
const (
	maxConfigBytes   = 4 << 20
	maxConfigDepth   = 64
	maxConfigMembers = 100000
)

// ConfigError is a fault in a configuration file: the file, the line and
// column (1-based, in characters) of the field at fault, and the field's
// path (providers[0].base_url). Err says what is wrong; its message
// starts with the path.
type ConfigError struct {
	File         string
	Line, Column int    // 0: the fault has no place in the file (a missing top-level field, YAML syntax); Column 0 alone: none known
	Path         string // "": the whole file
	Err          error
}

func (e *ConfigError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// configFormat is how a configuration file is written.
type configFormat int

const (
	formatJSON configFormat = iota
	formatYAML
)

// parseConfig reads data, the configuration file named name, strictly
// (no unknown field, no key given twice, every value of its field's
// type) and checks it; every fault is a *ConfigError placed at its
// field's line.
func parseConfig(name string, data []byte, format configFormat, getenv func(string) string) (*Config, error) {
	if len(data) > maxConfigBytes {
		return nil, &ConfigError{File: name, Err: fmt.Errorf("%d bytes, more than %d", len(data), maxConfigBytes)}
	}
	fail := func(err error) error {
		path := errorPath(err)
		ce := &ConfigError{File: name, Path: path, Err: err}
		ce.Line, ce.Column = fieldPosition(data, format, path)
		return ce
	}
	doc := data
	if format == formatYAML {
		var err error
		if doc, err = yamlToJSON(data); err != nil {
			var ye *yamlError
			if errors.As(err, &ye) {
				return nil, &ConfigError{File: name, Line: ye.line, Err: errors.New(ye.msg)}
			}
			return nil, fail(err)
		}
	}
	tree, err := strictjson.Decode(doc, strictjson.Limits{Bytes: maxConfigBytes * 4, Depth: maxConfigDepth, Members: maxConfigMembers})
	if err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) && se.Line > 0 && format == formatJSON {
			return nil, &ConfigError{File: name, Line: se.Line, Column: se.Column, Err: errors.New(se.Msg)}
		}
		if errors.As(err, &se) && se.Path != "" {
			return nil, fail(fmt.Errorf("%s: %s", se.Path, se.Msg))
		}
		return nil, &ConfigError{File: name, Err: err}
	}
	if err := checkShape(tree, reflect.TypeFor[Config](), ""); err != nil {
		return nil, fail(err)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		// checkShape has seen every field: this is a fault it does not
		// know of.
		return nil, &ConfigError{File: name, Err: err}
	}
	if err := c.check(getenv); err != nil {
		return nil, fail(err)
	}
	return &c, nil
}

// errorPath is the path an error's message starts with
// ("providers[0].name: required" → "providers[0].name"), "" when it
// starts with none.
func errorPath(err error) string {
	msg := err.Error()
	i := strings.Index(msg, ": ")
	if i <= 0 {
		return ""
	}
	p := msg[:i]
	if strings.ContainsAny(p, " \t\n\"'`") {
		return ""
	}
	return p
}

// checkShape checks that v, a value strictjson.Decode made, has the shape
// encoding/json needs to decode it into a t: no field t does not define,
// every value of its field's kind, every value of a type that decodes
// itself (json.Unmarshaler) accepted by it. Its error names the path of
// the value at fault.
func checkShape(v any, t reflect.Type, path string) error {
	if v == nil {
		return nil // null leaves a field as it is, whatever its type
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %v", pathOrTop(path), err)
		}
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return fmt.Errorf("%s: %v", pathOrTop(path), err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkShape(v, t.Elem(), path)
	case reflect.Interface:
		return nil
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return kindError(path, "an object", v)
		}
		fields := structFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			f, ok := fields.byName[k]
			if !ok {
				return fmt.Errorf("%s: unknown field %q (known fields: %s)", strictjson.Join(path, k), k, strings.Join(fields.names, ", "))
			}
			if err := checkShape(obj[k], t.FieldByIndex(f).Type, strictjson.Join(path, k)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return kindError(path, "an object", v)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := checkShape(obj[k], t.Elem(), strictjson.Join(path, k)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return kindError(path, "an array", v)
		}
		for i, x := range arr {
			if err := checkShape(x, t.Elem(), strictjson.Index(path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		if _, ok := v.(string); !ok {
			return kindError(path, "a string", v)
		}
		return nil
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return kindError(path, "true or false", v)
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return kindError(path, "an integer", v)
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return fmt.Errorf("%s: %s is not an integer of %d bits", pathOrTop(path), n, t.Bits())
		}
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return kindError(path, "a whole number", v)
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			return fmt.Errorf("%s: %s is not a whole number of %d bits", pathOrTop(path), n, t.Bits())
		}
		return nil
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return kindError(path, "a number", v)
		}
		if _, err := strconv.ParseFloat(n.String(), t.Bits()); err != nil {
			return fmt.Errorf("%s: %s is out of range", pathOrTop(path), n)
		}
		return nil
	}
	return fmt.Errorf("%s: ctxkit cannot read a value of type %s", pathOrTop(path), t)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func pathOrTop(path string) string {
	if path == "" {
		return "(the file)"
	}
	return path
}

// kindError says that the value at path is not what it must be.
func kindError(path, want string, v any) error {
	got := "null"
	switch v := v.(type) {
	case string:
		got = strconv.Quote(v)
		if len(got) > 40 {
			got = "a string"
		}
	case json.Number:
		got = "the number " + v.String()
	case bool:
		got = strconv.FormatBool(v)
	case map[string]any:
		got = "an object"
	case []any:
		got = "an array"
	}
	return fmt.Errorf("%s: must be %s, not %s", pathOrTop(path), want, got)
}

// fieldSet is the JSON fields of a struct type: name → field index, and
// the names in order.
type fieldSet struct {
	byName map[string][]int
	names  []string
}

var fieldSets sync.Map // reflect.Type → *fieldSet

// structFields is t's JSON fields as encoding/json sees them: exported
// fields by their json tag's name (or Go name), those of embedded structs
// promoted, "-" left out.
func structFields(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{byName: map[string][]int{}}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(slices.Clone(index), i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if !f.IsExported() || name == "-" && !strings.Contains(tag, ",") {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, ok := fs.byName[name]; !ok {
				fs.names = append(fs.names, name)
			}
			fs.byName[name] = idx
		}
	}
	walk(t, nil)
	fieldSets.Store(t, fs)
	return fs
}

// pathStep is one step of a path: a member's key or an element's index.
type pathStep struct {
	key   string
	index int // -1 for a key
}

// parsePath splits a path (providers[0].mock.errors[1]) into its steps.
// A key is what lies between dots and brackets; a path it cannot read
// ends where it stops being readable.
func parsePath(path string) []pathStep {
	var steps []pathStep
	for path != "" && len(steps) < maxConfigDepth {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return steps
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 {
				return steps
			}
			steps = append(steps, pathStep{index: i})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			steps = append(steps, pathStep{key: path[:end], index: -1})
			path = path[end:]
		}
	}
	return steps
}

// fieldPosition is the line and column of the field at path in data (a
// file of format): of the key of an object's member, of the start of an
// array's element. A path that leads to nothing in the file (a missing
// field) gives the place of the deepest part of it there is; a path that
// leads nowhere at all, or data that cannot be read, gives 0, 0.
func fieldPosition(data []byte, format configFormat, path string) (line, col int) {
	if path == "" {
		return 0, 0
	}
	steps := parsePath(path)
	if format == formatYAML {
		return yamlPosition(data, steps)
	}
	off, ok := jsonPosition(data, steps)
	if !ok {
		return 0, 0
	}
	return strictjson.Position(data, off)
}

// jsonPosition is the byte offset in data of the field steps lead to (or
// of the deepest part of them there is), read token by token: no value
// is built, and only the values along the path are entered.
func jsonPosition(data []byte, steps []pathStep) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	found, at := false, int64(0)
	for _, s := range steps {
		tok, err := dec.Token()
		if err != nil {
			return at, found
		}
		d, _ := tok.(json.Delim)
		switch {
		case s.index < 0 && d == '{':
			hit := false
			for dec.More() {
				before := dec.InputOffset()
				k, err := dec.Token()
				if err != nil {
					return at, found
				}
				if k == s.key {
					found, at, hit = true, valueStart(data, before), true
					break
				}
				if skipValue(dec) != nil {
					return at, found
				}
			}
			if !hit {
				return at, found
			}
		case s.index >= 0 && d == '[':
			hit := false
			for i := 0; dec.More(); i++ {
				before := dec.InputOffset()
				if i == s.index {
					v := valueStart(data, before)
					if !startsValue(data, v) {
						return at, found
					}
					found, at, hit = true, v, true
					break
				}
				if skipValue(dec) != nil {
					return at, found
				}
			}
			if !hit {
				return at, found
			}
		default:
			return at, found
		}
	}
	return at, found
}

// valueStart is the offset of the first byte at or after off that is not
// white space or a separator: where the token after off begins.
func valueStart(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// startsValue reports whether a JSON value can begin at off: the
// decoder's More says only that no closing bracket is next, so an
// element position is checked before it is given as a place.
func startsValue(data []byte, off int64) bool {
	return off < int64(len(data)) && bytes.IndexByte([]byte("\"{[-0123456789tfn"), data[off]) >= 0
}

// skipValue reads one whole value, however deep, without recursing.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}
