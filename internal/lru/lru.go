// Package lru is a bounded least-recently-used map, safe for concurrent use.
// ctxkit caches compiled views, applied views, verified tokens and event
// frames in it; bounding by entry count alone says nothing where entries are
// as large as the records they come from, so an LRU may also weigh them.
package lru

import (
	"container/list"
	"sync"
)

// Cache is a bounded least-recently-used map, safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	size  int
	order *list.List // front = most recent; elements hold *entry[K, V]
	items map[K]*list.Element

	maxBytes int64         // 0: entries are not weighed
	bytes    int64         // the entries' weight
	weigh    func(V) int64 // an entry's size in bytes
}

type entry[K comparable, V any] struct {
	key   K
	val   V
	bytes int64
}

// New returns a Cache holding at most size entries (default 1024).
func New[K comparable, V any](size int) *Cache[K, V] {
	if size <= 0 {
		size = 1024
	}
	return &Cache[K, V]{size: size, order: list.New(), items: make(map[K]*list.Element)}
}

// NewBytes returns a Cache holding at most size entries weighing at most
// maxBytes together, as weigh measures them: where values are as large as
// the records they come from, a count alone bounds nothing. A value heavier
// than maxBytes is not kept.
func NewBytes[K comparable, V any](size int, maxBytes int64, weigh func(V) int64) *Cache[K, V] {
	l := New[K, V](size)
	l.maxBytes, l.weigh = maxBytes, weigh
	return l
}

// Get returns the value for k and marks it recently used.
func (l *Cache[K, V]) Get(k K) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[k]; ok {
		l.order.MoveToFront(el)
		return el.Value.(*entry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Add stores v under k, dropping the least recently used entry when full.
func (l *Cache[K, V]) Add(k K, v V) {
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
	l.items[k] = l.order.PushFront(&entry[K, V]{key: k, val: v, bytes: n})
	l.bytes += n
	for l.order.Len() > l.size || (l.maxBytes > 0 && l.bytes > l.maxBytes) {
		l.remove(l.order.Back())
	}
}

func (l *Cache[K, V]) remove(el *list.Element) {
	e := l.order.Remove(el).(*entry[K, V])
	delete(l.items, e.key)
	l.bytes -= e.bytes
}

// Bytes reports the entries' weight (0 for a Cache made by New).
func (l *Cache[K, V]) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// Len reports the number of entries.
func (l *Cache[K, V]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}
