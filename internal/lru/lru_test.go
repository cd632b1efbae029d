package lru_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/lru"
)

// TestLRUBytes: an LRU made with a byte budget drops the least recently used
// entries to stay under it, and keeps no entry heavier than all of it.
func TestLRUBytes(t *testing.T) {
	l := lru.NewBytes[int, []byte](100, 1000, func(v []byte) int64 { return int64(len(v)) })
	for i := range 10 {
		l.Add(i, make([]byte, 300))
	}
	if l.Len() != 3 || l.Bytes() != 900 {
		t.Fatalf("%d entries of %d bytes; want 3 of 900", l.Len(), l.Bytes())
	}
	if _, ok := l.Get(9); !ok {
		t.Fatal("the newest entry was dropped")
	}
	if _, ok := l.Get(6); ok {
		t.Fatal("an old entry was kept past the budget")
	}
	l.Add(9, make([]byte, 100)) // replacing an entry re-weighs it
	if l.Bytes() != 700 {
		t.Fatalf("%d bytes after replacing an entry; want 700", l.Bytes())
	}
	l.Add(42, make([]byte, 1001))
	if _, ok := l.Get(42); ok || l.Len() != 3 {
		t.Fatal("an entry heavier than the budget was kept")
	}
}
