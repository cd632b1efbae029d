package server

import (
	"context"
	"errors"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/store"
)

// The gateway's stored responses (the Responses dialect's store: true)
// are breadcrumbs: private to the agent that made the request (and its
// owner's curators), of schema ResponseSchema, tagged with the response's
// id, with llm_hints that show what a response was and cost but not the
// conversation.
const (
	ResponseSchema = "ctxkit.response"
	responseTag    = "ctxkit.response:" // + the response's id
)

// ResponseTTL is how long a stored response is kept (OpenAI's 30 days).
const ResponseTTL = 30 * 24 * time.Hour

// callerKey is the context key of the Principal behind a gateway request.
type callerKey struct{}

// keeper keeps the gateway's stored responses in the store, for the
// caller its request's context names.
type keeper struct{ s *Server }

func (k keeper) actor(ctx context.Context) (store.Actor, error) {
	p, ok := ctx.Value(callerKey{}).(Principal)
	if !ok {
		return store.Actor{}, errors.New("gateway request without a caller")
	}
	return actor(p), nil
}

func (k keeper) Keep(ctx context.Context, id string, record []byte) error {
	a, err := k.actor(ctx)
	if err != nil {
		return err
	}
	// Kept as long as OpenAI keeps a stored response: every request may
	// keep one, and without an end they would pile up for good.
	expires := k.s.opts.Now().Add(ResponseTTL)
	in := store.Breadcrumb{
		Title: "response " + id, Context: record, Tags: []string{responseTag + id}, SchemaName: ResponseSchema,
		LLMHints: gateway.Hints, Visibility: store.Private, Sensitivity: store.PII, ExpiresAt: &expires,
	}
	in.SearchText = k.s.searchable().Text(ctx, &in, 1)
	_, _, err = k.s.opts.Store.Create(ctx, a, in, store.Idempotency{})
	return err
}

// find is the breadcrumb of response id the caller may read.
func (k keeper) find(ctx context.Context, id string) (store.Breadcrumb, error) {
	a, err := k.actor(ctx)
	if err != nil {
		return store.Breadcrumb{}, err
	}
	if len(responseTag)+len(id) > store.MaxTagBytes {
		return store.Breadcrumb{}, gateway.ErrNotKept
	}
	// A private breadcrumb is listed to its creator and the owner's
	// curators only; one of another owner never. Another agent of the
	// owner who knows the id can write team breadcrumbs with the same tag
	// and schema, listed first (newest first): they are passed over, not
	// taken for the response, nor allowed to hide it (up to
	// keeperPages pages of them: each item carries its context, so the
	// pages are small).
	q := store.Query{Tags: []string{responseTag + id}, SchemaName: ResponseSchema, Limit: keeperPageSize}
	for range keeperPages {
		page, err := k.s.opts.Store.List(ctx, a, q)
		if err != nil {
			return store.Breadcrumb{}, err
		}
		for _, b := range page.Items {
			if b.Visibility == store.Private {
				return b, nil
			}
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	return store.Breadcrumb{}, gateway.ErrNotKept
}

// keeperPages and keeperPageSize bound the look-alike breadcrumbs read to
// find a response.
const (
	keeperPages    = 8
	keeperPageSize = 8
)

func (k keeper) Recall(ctx context.Context, id string) ([]byte, error) {
	b, err := k.find(ctx, id)
	if err != nil {
		return nil, err
	}
	return b.Context, nil
}

func (k keeper) Forget(ctx context.Context, id string) error {
	b, err := k.find(ctx, id)
	if err != nil {
		return err
	}
	a, _ := k.actor(ctx)
	err = k.s.opts.Store.Delete(ctx, a, b.ID)
	if errors.Is(err, store.ErrNotFound) {
		return gateway.ErrNotKept
	}
	return err
}
