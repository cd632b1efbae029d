package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSplitNeverPanicsOnMalformed: input that is not valid JSON after all
// is refused, never read past its end.
func TestSplitNeverPanicsOnMalformed(t *testing.T) {
	for _, s := range []string{`{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a" 1}`, `{1:2}`, `{"a":[1,}`, `{"a":"x`, `{"a":tru`, `{"a\`, `{"a":"\"}`} {
		if _, err := SplitObject([]byte(s), math.MaxInt); err == nil {
			t.Errorf("%s: accepted", s)
		}
		if _, err := SplitArray([]byte("["+s[1:]), math.MaxInt); err == nil {
			t.Errorf("[%s: accepted", s[1:])
		}
	}
}

// TestSplitObjectLarge: an object of more members than SplitObject
// gathers on the stack is read whole, sorted, and its first key given
// twice found in the order of the text.
func TestSplitObjectLarge(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("{")
	for i := 40; i > 0; i-- {
		if i < 40 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
	}
	b.WriteString("}")
	fields, err := SplitObject(b.Bytes(), math.MaxInt)
	if err != nil || len(fields) != 40 {
		t.Fatalf("%d fields, %v", len(fields), err)
	}
	for i := 1; i < len(fields); i++ {
		if fields[i-1].Key >= fields[i].Key {
			t.Fatalf("not sorted: %q before %q", fields[i-1].Key, fields[i].Key)
		}
	}
	if v, ok := fields.Get("k17"); !ok || string(v) != "17" {
		t.Fatalf("k17: %s %v", v, ok)
	}
	if fields.Has("k41") {
		t.Fatal("k41 found")
	}
	// k30 is repeated before k5 is, though k5 sorts first.
	data := bytes.Replace(b.Bytes(), []byte(`"k2":`), []byte(`"k30":`), 1)
	data = bytes.Replace(data, []byte(`"k1":`), []byte(`"k5":`), 1)
	var dup *DuplicateKeyError
	if _, err := SplitObject(data, math.MaxInt); !errors.As(err, &dup) || dup.Key != "k30" {
		t.Fatalf("error %v, want k30 given twice", err)
	}
	if _, err := SplitObject([]byte(`{"b":1,"a":2,"b":3,"a":4}`), math.MaxInt); !errors.As(err, &dup) || dup.Key != "b" {
		t.Fatalf("error %v, want b given twice", err)
	}
}

// TestSplitAtMost: a container of max members is read; one of more is
// ErrTooMany, for objects also when the members past max repeat a key.
func TestSplitAtMost(t *testing.T) {
	obj := func(n int) []byte {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strconv.Itoa(i) + `":[` + strconv.Itoa(i) + `]`)
		}
		return []byte(b.String() + "}")
	}
	for _, n := range []int{0, 3, 16, 17, 40} {
		if ms, err := SplitObject(obj(n), n); err != nil || len(ms) != n {
			t.Fatalf("object of %d: %d members, %v", n, len(ms), err)
		}
		if _, err := SplitObject(obj(n+1), n); err != ErrTooMany {
			t.Fatalf("object of %d past %d: %v", n+1, n, err)
		}
		arr := `[` + strings.Repeat(`{"a":"]"},`, n) + `1]`
		if out, err := SplitArray([]byte(arr), n+1); err != nil || len(out) != n+1 {
			t.Fatalf("array of %d: %d elements, %v", n+1, len(out), err)
		}
		if _, err := SplitArray([]byte(arr), n); err != ErrTooMany {
			t.Fatalf("array of %d past %d: %v", n+1, n, err)
		}
	}
	if _, err := SplitObject([]byte(`{"a":1,"a":2,"a":3}`), 2); err != ErrTooMany {
		t.Fatalf("repeated keys past max: %v", err)
	}
}

// FuzzSplitAgreesWithDecoder: on valid JSON, SplitObject and SplitArray
// read what encoding/json's decoder reads: the same members (sorted) and
// elements, each its own bytes, or the same key given twice. On any other
// input they return, with an error or not, without panicking.
func FuzzSplitAgreesWithDecoder(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,{"c":"]"}],"d":"x\"y"}`, `{"b":1,"a":2,"b":3}`, ` { "\u0061" : null , "\ud800":true, "a":0} `,
		"{\"k\":\"\xff\"}", `{}`, `{"a":}`, `{"a":1}x`, `[1, "a", {"b":[]}, [null]]`, `[]`, `[1,]`, `["\\",2.5e3,-0]`,
		`{"a":"\\\"\\","b":"\\\\"}`, `{"":1,"":2}`, `[{"a":[{"b":{}}]},"\"]"]`,
	} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			return
		}
		if max < 0 {
			max = math.MaxInt
		}
		switch data[0] {
		case '{':
			ms, err := SplitObject(data, max)
			if !json.Valid(data) {
				return
			}
			want, dup := decodeObject(t, data)
			var dupErr *DuplicateKeyError
			switch {
			case len(want) > max:
				if err != ErrTooMany {
					t.Fatalf("%d members past %d: %v", len(want), max, err)
				}
			case dup != nil:
				if !errors.As(err, &dupErr) || dupErr.Key != *dup {
					t.Fatalf("error %v, want %q given twice", err, *dup)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			default:
				slices.SortFunc(want, func(a, b Member) int { return strings.Compare(a.Key, b.Key) })
				if len(ms) != len(want) {
					t.Fatalf("%d members, decoder %d", len(ms), len(want))
				}
				for i := range ms {
					if ms[i].Key != want[i].Key || !bytes.Equal(ms[i].Value, want[i].Value) {
						t.Fatalf("member %d: %q:%s, decoder %q:%s", i, ms[i].Key, ms[i].Value, want[i].Key, want[i].Value)
					}
				}
			}
		case '[':
			out, err := SplitArray(data, max)
			var want []json.RawMessage
			if json.Unmarshal(data, &want) != nil {
				return
			}
			switch {
			case len(want) > max:
				if err != ErrTooMany {
					t.Fatalf("%d elements past %d: %v", len(want), max, err)
				}
			case err != nil:
				t.Fatalf("refused: %v", err)
			case len(out) != len(want):
				t.Fatalf("%d elements, decoder %d", len(out), len(want))
			default:
				for i := range want {
					if !bytes.Equal(out[i], want[i]) {
						t.Fatalf("element %d: %s, decoder %s", i, out[i], want[i])
					}
				}
			}
		}
	})
}

// decodeObject reads the valid JSON object data with encoding/json's
// decoder: its members in the order of the text, and the first key that
// repeats one before it (nil if none does).
func decodeObject(t *testing.T, data []byte) ([]Member, *string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var ms []Member
	var dup *string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if seen[k] && dup == nil {
			dup = &k
		}
		seen[k] = true
		ms = append(ms, Member{k, v})
	}
	return ms, dup
}
