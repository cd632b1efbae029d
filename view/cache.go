package view

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// Cache holds compiled views by the hash of their hints, so a hints document
// shared by many records is parsed once. It is bounded (least recently used
// views are dropped) and safe for concurrent use.
type Cache struct {
	opts    Options
	byBytes *LRU[[sha256.Size]byte, *View] // exact bytes: a hit hashes and nothing more
	byHash  *LRU[string, *View]            // canonical hash: same hints, other spelling
}

// NewCache returns a cache of at most size compiled views (default 1024),
// compiling with opts.
func NewCache(size int, opts Options) *Cache {
	return &Cache{opts: opts, byBytes: NewLRU[[sha256.Size]byte, *View](size), byHash: NewLRU[string, *View](size)}
}

// Compile returns the compiled view of hints, compiling only on a miss.
// Errors are not cached.
func (c *Cache) Compile(hints []byte) (*View, error) {
	if max := c.opts.withDefaults().MaxHintsBytes; len(hints) > max {
		return nil, errorf(CodeTooLarge, "", "hints are %d bytes; the limit is %d", len(hints), max)
	}
	raw := sha256.Sum256(hints)
	if v, ok := c.byBytes.Get(raw); ok {
		return v, nil
	}
	h, err := Hash(hints)
	if err != nil {
		return nil, err
	}
	v, ok := c.byHash.Get(h)
	if !ok {
		if v, err = CompileWith(hints, c.opts); err != nil {
			return nil, err
		}
		c.byHash.Add(h, v)
	}
	c.byBytes.Add(raw, v)
	return v, nil
}

// CompileUncached returns the cached view of hints on a hit and otherwise
// compiles them without keeping the result: for hints seen once (a preview
// of a draft), which must not evict the views of stored records nor hold
// the cache's memory.
func (c *Cache) CompileUncached(hints []byte) (*View, error) {
	if max := c.opts.withDefaults().MaxHintsBytes; len(hints) > max {
		return nil, errorf(CodeTooLarge, "", "hints are %d bytes; the limit is %d", len(hints), max)
	}
	if v, ok := c.byBytes.Get(sha256.Sum256(hints)); ok {
		return v, nil
	}
	return CompileWith(hints, c.opts)
}

// Len reports how many compiled views the cache holds.
func (c *Cache) Len() int { return c.byHash.Len() }

// ResultKey identifies one applied view: a record at one version seen
// through one hints document. A new version or new hints give a new key, so a
// cache keyed by it never serves a view of stale data.
type ResultKey struct {
	RecordID  string
	Version   int64
	HintsHash string
}

// LRU is a bounded least-recently-used map, safe for concurrent use. Servers
// use LRU[ResultKey, …] to cache encoded views.
type LRU[K comparable, V any] struct {
	mu    sync.Mutex
	size  int
	order *list.List // front = most recent; elements hold *lruEntry[K, V]
	items map[K]*list.Element

	maxBytes int64         // 0: entries are not weighed
	bytes    int64         // the entries' weight
	weigh    func(V) int64 // an entry's size in bytes
}

type lruEntry[K comparable, V any] struct {
	key   K
	val   V
	bytes int64
}

// NewLRU returns an LRU holding at most size entries (default 1024).
func NewLRU[K comparable, V any](size int) *LRU[K, V] {
	if size <= 0 {
		size = 1024
	}
	return &LRU[K, V]{size: size, order: list.New(), items: make(map[K]*list.Element)}
}

// NewLRUBytes returns an LRU holding at most size entries weighing at most
// maxBytes together, as weigh measures them: where values are as large as
// the records they come from, a count alone bounds nothing. A value heavier
// than maxBytes is not kept.
func NewLRUBytes[K comparable, V any](size int, maxBytes int64, weigh func(V) int64) *LRU[K, V] {
	l := NewLRU[K, V](size)
	l.maxBytes, l.weigh = maxBytes, weigh
	return l
}

// Get returns the value for k and marks it recently used.
func (l *LRU[K, V]) Get(k K) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[k]; ok {
		l.order.MoveToFront(el)
		return el.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Add stores v under k, dropping the least recently used entry when full.
func (l *LRU[K, V]) Add(k K, v V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	if l.weigh != nil {
		n = l.weigh(v)
	}
	if el, ok := l.items[k]; ok {
		l.remove(el)
	}
	if l.maxBytes > 0 && n > l.maxBytes {
		return
	}
	l.items[k] = l.order.PushFront(&lruEntry[K, V]{key: k, val: v, bytes: n})
	l.bytes += n
	for l.order.Len() > l.size || (l.maxBytes > 0 && l.bytes > l.maxBytes) {
		l.remove(l.order.Back())
	}
}

func (l *LRU[K, V]) remove(el *list.Element) {
	e := l.order.Remove(el).(*lruEntry[K, V])
	delete(l.items, e.key)
	l.bytes -= e.bytes
}

// Bytes reports the entries' weight (0 for an LRU made by NewLRU).
func (l *LRU[K, V]) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// Len reports the number of entries.
func (l *LRU[K, V]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}
