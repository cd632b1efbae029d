package view

import (
	"crypto/sha256"

	"github.com/ctxkit/ctxkit/internal/lru"
)

// Cache holds compiled views by the hash of their hints, so a hints document
// shared by many records is parsed once. It is bounded (least recently used
// views are dropped) and safe for concurrent use.
type Cache struct {
	opts    Options
	byBytes *lru.Cache[[sha256.Size]byte, *View] // exact bytes: a hit hashes and nothing more
	byHash  *lru.Cache[string, *View]            // canonical hash: same hints, other spelling
}

// NewCache returns a cache of at most size compiled views (default 1024),
// compiling with opts.
func NewCache(size int, opts Options) *Cache {
	return &Cache{opts: opts, byBytes: lru.New[[sha256.Size]byte, *View](size), byHash: lru.New[string, *View](size)}
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
