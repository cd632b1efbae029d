package workspace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/apiclient"
	"github.com/ctxkit/ctxkit/store"
)

// maxReplyBytes bounds what the indexer reads of one reply of a server.
const maxReplyBytes = 4 << 20

// NewServerTarget is a Target that writes through the API of the ctxkit
// server at baseURL with token, a bearer token of the emitter role (the
// curator role to remove the breadcrumbs of deleted files). A nil client
// is one with a one-minute timeout.
func NewServerTarget(baseURL, token string, client *http.Client) Target {
	return &httpTarget{api: apiclient.Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: client}}
}

// httpTarget writes through a ctxkit server's API.
type httpTarget struct {
	api apiclient.Client
}

func (t *httpTarget) describe() string { return "server:" + t.api.BaseURL }

// replyError is an error reply of the server. It stays unexported: Index
// only tells a missing breadcrumb, a version mismatch and a refusal apart
// (isNotFound, isVersionMismatch, isForbidden), and a caller gets its
// message.
type replyError struct {
	status int
	code   string
	msg    string
}

func (e *replyError) Error() string { return fmt.Sprintf("%s (%d %s)", e.msg, e.status, e.code) }

// call sends req with body encoded as JSON (none when nil) and decodes
// the reply into out (unless nil). A reply of status 300 or more is a
// *replyError. It returns the reply's header.
func (t *httpTarget) call(ctx context.Context, req apiclient.Request, body, out any) (http.Header, error) {
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		req.Body = data
	}
	resp, err := t.api.Do(ctx, req, maxReplyBytes)
	if err != nil && resp.Status == 0 {
		return nil, fmt.Errorf("--server: %w", err)
	}
	// A read error cutting the body short is not reported as such: a cut
	// reply fails to decode below, a cut error reply keeps its status.
	if resp.Status >= 300 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(resp.Body, &e)
		if e.Error.Message == "" {
			e.Error.Message = http.StatusText(resp.Status)
		}
		return resp.Header, &replyError{status: resp.Status, code: e.Error.Code, msg: e.Error.Message}
	}
	if out != nil {
		return resp.Header, json.Unmarshal(resp.Body, out)
	}
	return resp.Header, nil
}

func (t *httpTarget) create(ctx context.Context, b store.Breadcrumb, key string) (string, int64, error) {
	var out struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
	}
	body := map[string]any{"title": b.Title, "description": b.Description,
		"schema_name": b.SchemaName, "tags": b.Tags, "context": b.Context}
	post := apiclient.Request{Method: "POST", Path: "/breadcrumbs", Header: http.Header{"Idempotency-Key": {key}}}
	hdr, err := t.call(ctx, post, body, &out)
	if err == nil && hdr.Get("Idempotent-Replayed") == "true" {
		// The first create's breadcrumb may have been removed since.
		if _, _, gerr := t.record(ctx, out.ID); isNotFound(gerr) {
			post.Header = http.Header{"Idempotency-Key": {key + ":" + newNonce()}}
			_, err = t.call(ctx, post, body, &out)
		}
	}
	return out.ID, out.Version, err
}

func (t *httpTarget) record(ctx context.Context, id string) (string, FileContext, error) {
	var fc FileContext
	var b store.Breadcrumb
	if _, err := t.call(ctx, apiclient.Request{Method: "GET", Path: "/breadcrumbs/" + url.PathEscape(id) + "/full"}, nil, &b); err != nil {
		return "", fc, err
	}
	if b.SchemaName != FileSchema || json.Unmarshal(b.Context, &fc) != nil {
		return b.CreatedBy, FileContext{}, nil
	}
	return b.CreatedBy, fc, nil
}

// agent is the subject of the target's token: the agent the server
// records as the creator of what it writes. The server checks the token;
// this only reads it.
func (t *httpTarget) agent() (string, error) {
	parts := strings.Split(t.api.Token, ".")
	if len(parts) != 3 {
		return "", errors.New("--token: not a ctxkit token")
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("--token: %w", err)
	}
	var c struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(data, &c); err != nil || c.Subject == "" {
		return "", errors.New("--token: names no agent")
	}
	return c.Subject, nil
}

func (t *httpTarget) update(ctx context.Context, id string, version int64, b store.Breadcrumb) (int64, error) {
	var out struct {
		Version int64 `json:"version"`
	}
	patch := apiclient.Request{Method: "PATCH", Path: "/breadcrumbs/" + id, Header: http.Header{"If-Match": {strconv.FormatInt(version, 10)}}}
	_, err := t.call(ctx, patch, map[string]any{"title": b.Title, "description": b.Description, "context": b.Context}, &out)
	return out.Version, err
}

func (t *httpTarget) delete(ctx context.Context, id string) error {
	_, err := t.call(ctx, apiclient.Request{Method: "DELETE", Path: "/breadcrumbs/" + id}, nil, nil)
	return err
}

func (t *httpTarget) files(ctx context.Context, tag string) ([]fileRef, error) {
	var refs []fileRef
	q := url.Values{"tag": {tag}, "schema_name": {FileSchema}, "limit": {strconv.Itoa(store.MaxLimit)}}
	for {
		var page struct {
			Items []struct {
				ID      string `json:"id"`
				Title   string `json:"title"`
				Version int64  `json:"version"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		if _, err := t.call(ctx, apiclient.Request{Method: "GET", Path: "/breadcrumbs", Query: q}, nil, &page); err != nil {
			return nil, err
		}
		for _, b := range page.Items {
			refs = append(refs, fileRef{ID: b.ID, Path: b.Title, Version: b.Version})
		}
		if page.NextCursor == "" {
			return refs, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}
