package tokencount_test

import (
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/tokencount"
)

func TestCodec(t *testing.T) {
	for _, name := range append(tokencount.Encodings(), "") {
		c, err := tokencount.Codec(name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		n, err := c.Count("hello world")
		if err != nil || n != 2 {
			t.Errorf("%q: hello world is %d tokens (%v), want 2", name, n, err)
		}
		again, _ := tokencount.Codec(name)
		if again != c {
			t.Errorf("%q: a second call loaded the encoding again", name)
		}
	}
	if _, err := tokencount.Codec("gpt2-ish"); err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("unknown encoding: %v (the error should list the known ones)", err)
	}
}
