package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ctxkit/ctxkit/store"
)

// Target is where Index writes file breadcrumbs: a store (NewStoreTarget)
// or a ctxkit server (NewServerTarget). Its methods are unexported: a run
// relies on how these two behave on retries and refusals.
type Target interface {
	// create creates b; a retry with the same key returns the breadcrumb
	// the first made, when it still exists.
	create(ctx context.Context, b store.Breadcrumb, key string) (id string, version int64, err error)
	update(ctx context.Context, id string, version int64, b store.Breadcrumb) (int64, error)
	delete(ctx context.Context, id string) error
	// files lists the file breadcrumbs tagged tag, newest first: what an
	// earlier run wrote, whether or not the manifest recorded it (and
	// whatever else carries the tag).
	files(ctx context.Context, tag string) ([]fileRef, error)
	// record returns a breadcrumb's creator and file context.
	record(ctx context.Context, id string) (createdBy string, fc FileContext, err error)
	// agent is the agent the target writes as.
	agent() (string, error)
	describe() string
}

// fileRef is a file breadcrumb a target holds: its title is the path.
type fileRef struct {
	ID      string
	Path    string
	Version int64
}

// indexTag is the tag of the file breadcrumbs of the index instance id.
func indexTag(instance string) string { return "index:" + instance }

// idempotencyKey is the key of the create of path's breadcrumb with the
// content hashed sum by index instance: a create retried after its reply
// was lost returns the breadcrumb it made.
func idempotencyKey(instance, path, sum string) string {
	h := sha256.Sum256([]byte(path + "\x00" + sum))
	return "ctxkit-index:" + instance + ":" + hex.EncodeToString(h[:16])
}

// NewStoreTarget is a Target that writes to db directly, as actor. desc
// names the store in the manifest (such as its data directory), so that a
// run into another store starts afresh.
func NewStoreTarget(db store.Store, desc string, actor store.Actor) Target {
	return &storeTarget{db: db, desc: desc, actor: actor}
}

// storeTarget writes to a store directly.
type storeTarget struct {
	db    store.Store
	desc  string
	actor store.Actor
}

func (t *storeTarget) describe() string { return "store:" + t.desc + "#" + t.actor.OwnerID }

func (t *storeTarget) create(ctx context.Context, b store.Breadcrumb, key string) (string, int64, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(data)
	idem := store.Idempotency{Key: key, RequestHash: hex.EncodeToString(sum[:])}
	out, replayed, err := t.db.Create(ctx, t.actor, b, idem)
	if err == nil && replayed {
		// The first create's breadcrumb may have been removed since.
		if _, gerr := t.db.Get(ctx, t.actor, out.ID); isNotFound(gerr) {
			idem.Key = key + ":" + newNonce()
			out, _, err = t.db.Create(ctx, t.actor, b, idem)
		}
	}
	return out.ID, out.Version, err
}

func (t *storeTarget) record(ctx context.Context, id string) (string, FileContext, error) {
	var fc FileContext
	b, err := t.db.Get(ctx, t.actor, id)
	if err != nil {
		return "", fc, err
	}
	if b.SchemaName != FileSchema || json.Unmarshal(b.Context, &fc) != nil {
		return b.CreatedBy, FileContext{}, nil
	}
	return b.CreatedBy, fc, nil
}

func (t *storeTarget) agent() (string, error) { return t.actor.AgentID, nil }

// newNonce is a random word, to make a key unique.
func newNonce() string {
	var raw [8]byte
	rand.Read(raw[:])
	return hex.EncodeToString(raw[:])
}

func (t *storeTarget) update(ctx context.Context, id string, version int64, b store.Breadcrumb) (int64, error) {
	out, err := t.db.Update(ctx, t.actor, id, version, func(x *store.Breadcrumb) error {
		x.Title, x.Description, x.Context = b.Title, b.Description, b.Context
		return nil
	})
	return out.Version, err
}

func (t *storeTarget) delete(ctx context.Context, id string) error {
	return t.db.Delete(ctx, t.actor, id)
}

func (t *storeTarget) files(ctx context.Context, tag string) ([]fileRef, error) {
	var refs []fileRef
	q := store.Query{Tags: []string{tag}, SchemaName: FileSchema, Limit: store.MaxLimit}
	for {
		page, err := t.db.List(ctx, t.actor, q)
		if err != nil {
			return nil, err
		}
		for _, b := range page.Items {
			refs = append(refs, fileRef{ID: b.ID, Path: b.Title, Version: b.Version})
		}
		if page.NextCursor == "" {
			return refs, nil
		}
		q.Cursor = page.NextCursor
	}
}

// isNotFound reports whether err says the breadcrumb does not exist, from
// a store or a server.
func isNotFound(err error) bool {
	var re *replyError
	return store.IsCode(err, store.CodeNotFound) || errors.As(err, &re) && re.code == string(store.CodeNotFound)
}

// isVersionMismatch reports whether err says the breadcrumb is at another
// version, from a store or a server.
func isVersionMismatch(err error) bool {
	var re *replyError
	return store.IsCode(err, store.CodeVersionMismatch) || errors.As(err, &re) && re.code == string(store.CodeVersionMismatch)
}

// isForbidden reports whether a server refused for want of a role.
func isForbidden(err error) bool {
	var re *replyError
	return errors.As(err, &re) && re.status == http.StatusForbidden
}
