package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ctxkit/ctxkit/envelope"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// exchangeSchema is the schema of the gateway's traffic records.
const exchangeSchema = "gateway.exchange.v1"

// contextSource answers the gateway's x-ctxkit-context from the store:
// the breadcrumbs the caller of the request may read, found the way GET
// /breadcrumbs/search finds them (with a query) or GET /breadcrumbs lists
// them (tags alone, newest first), each as its view.
//
// The gateway's own records (stored responses, traffic records) are passed
// over: their views quote earlier requests, which a query would match and
// feed back into the next one.
type contextSource struct{ s *Server }

// contextParam is the header, as the gateway's errors name it.
const contextParam = "x-ctxkit-context"

func (c contextSource) Context(ctx context.Context, sel gateway.Selector) ([]gateway.ContextItem, []string, error) {
	p, ok := ctx.Value(callerKey{}).(Principal)
	if !ok {
		return nil, nil, errors.New("gateway request without a caller")
	}
	// More candidates than items: some may fall back, be the gateway's
	// own records or not fit the budget.
	limit := min(store.MaxSearchLimit, 2*sel.Max+5)
	var items []gateway.ContextItem
	add := func(id, title, schema string, v json.RawMessage, ok bool) {
		if schema == ResponseSchema || schema == exchangeSchema {
			return
		}
		it := gateway.ContextItem{ID: id, Title: title, View: v}
		if !ok {
			// The filtered context is not what the hints show.
			it.Omit, it.View = "its view fell back", nil
		}
		items = append(items, it)
	}
	if sel.Query != "" {
		res, err := c.s.runSearch(ctx, p, store.SearchQuery{Text: sel.Query, Tags: sel.Tags, Limit: limit})
		if err != nil {
			return nil, nil, contextFailure(err)
		}
		for _, it := range res.Items {
			add(it.ID, it.Title, it.SchemaName, it.Context, it.ViewStatus == envelope.StatusOK)
		}
		return items, nil, nil
	}
	page, err := c.s.opts.Store.List(ctx, actor(p), store.Query{Tags: sel.Tags, Limit: limit})
	if err != nil {
		return nil, nil, contextFailure(err)
	}
	for i := range page.Items {
		b := &page.Items[i]
		v, err := c.s.applyView(ctx, b)
		if err != nil {
			return nil, nil, contextFailure(err)
		}
		add(b.ID, b.Title, b.SchemaName, v.value, v.status == view.StatusOK)
	}
	return items, nil, nil
}

// contextFailure is err, a failure to read the context, as the gateway's
// client gets it: a fault of the selector names the header (400), a store
// that is unavailable is worth a retry (503).
func contextFailure(err error) error {
	var se *Error
	var st *store.Error
	switch {
	case errors.As(err, &se) && se.Status == http.StatusBadRequest:
		return &gateway.Error{Code: gateway.CodeInvalidRequest, Status: http.StatusBadRequest, Path: contextParam, Msg: contextParam + ": " + se.Msg, Err: err}
	case errors.As(err, &st) && st.Code == store.CodeInvalid:
		return &gateway.Error{Code: gateway.CodeInvalidRequest, Status: http.StatusBadRequest, Path: contextParam, Msg: contextParam + ": " + st.Error(), Err: err}
	case errors.As(err, &st) && st.Code == store.CodeUnavailable:
		return &gateway.Error{Code: gateway.CodeOverloaded, Status: http.StatusServiceUnavailable, RetryAfter: "1", Path: contextParam,
			Msg: contextParam + ": the store is unavailable; retry shortly", Err: err}
	}
	return err
}
