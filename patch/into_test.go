package patch

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestApplyIntoReusesBuffer: ApplyInto gives what Apply gives, byte for
// byte, writing into the buffer handed to it when it is large enough,
// and into memory of its own when it is not; a noop gives the target
// itself, as Apply does. One buffer serves diff after diff, and the
// target tables Apply keeps between calls never leak one file's lines
// into another's result.
func TestApplyIntoReusesBuffer(t *testing.T) {
	file := func(i, lines int) []byte {
		var b strings.Builder
		for j := range lines {
			fmt.Fprintf(&b, "line %d of file %d\n", j, i)
		}
		return []byte(b.String())
	}
	diff := func(i int) *File {
		f, err := Parse(fmt.Sprintf("--- a/f\n+++ b/f\n@@ -3,3 +3,3 @@\n line 2 of file %d\n-line 3 of file %d\n+changed %d\n line 4 of file %d\n", i, i, i, i))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	buf := make([]byte, 0, 1<<16)
	// Files of different lengths, so that the tables kept from one call
	// are longer or shorter than the next target needs.
	for i, lines := range []int{400, 10, 2000, 7, 400} {
		src := file(i, lines)
		orig := bytes.Clone(src)
		want, err := Apply(src, diff(i))
		if err != nil {
			t.Fatalf("file %d: Apply: %v", i, err)
		}
		got, err := ApplyInto(buf, src, diff(i))
		if err != nil {
			t.Fatalf("file %d: ApplyInto: %v", i, err)
		}
		if !bytes.Equal(got.Content, want.Content) || got.Status != Applied {
			t.Fatalf("file %d: ApplyInto gave %q (%v), Apply %q", i, got.Content, got.Status, want.Content)
		}
		if &got.Content[0] != &buf[:1][0] {
			t.Errorf("file %d: the content was not written into the buffer of %d bytes", i, cap(buf))
		}
		if !bytes.Equal(src, orig) {
			t.Fatalf("file %d: the target changed", i)
		}
	}
	// Too small a buffer is left alone.
	small := make([]byte, 0, 16)
	src := file(9, 50)
	got, err := ApplyInto(small, src, diff(9))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Content) < 16 || &got.Content[0] == &small[:1][0] {
		t.Errorf("a 16-byte buffer was used for %d bytes", len(got.Content))
	}
	// Already applied: the result is the target, not the buffer.
	again, err := ApplyInto(buf, got.Content, diff(9))
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != Noop || &again.Content[0] != &got.Content[0] {
		t.Errorf("re-applying: status %v, content not the target's", again.Status)
	}
}
