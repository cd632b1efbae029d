package server

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/app/console"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/version"
)

// route is one row of the API: what the mux serves at a pattern, who may
// call it, and what /openapi.json says of it. The mux and the document are
// both built from the same rows, so a route cannot be served undocumented
// nor documented unserved.
type route struct {
	method, path string
	// anyMethod registers the path without its method: the handler answers
	// every method itself (MCP's transport), and the document describes
	// method only.
	anyMethod bool
	auth      access
	role      string      // authToken: the role the caller needs; "" any valid token
	serve     handlerFunc // authToken
	plain     http.HandlerFunc
	dialect   gateway.Dialect // authGateway: the dialect failures are answered in
	// dialectOf, when set, chooses the dialect of an authGateway route's
	// failures request by request (a path served in several shapes).
	dialectOf func(*http.Request) gateway.Dialect
	// guard runs before the token is looked at: a request it refuses is
	// answered with its error whatever the token (MCP's Origin rule).
	guard func(*http.Request) error
	doc   operation
}

// access is how a route authenticates its caller.
type access int

const (
	authToken   access = iota // a bearer token, with route.role when set
	authNone                  // nobody: liveness and the API's description
	authGateway               // any valid token, as a bearer or in x-api-key; failures in the route's dialect
)

// pattern is the route's http.ServeMux pattern, which is also its metric label.
func (rt *route) pattern() string {
	if rt.anyMethod {
		return rt.path
	}
	return rt.method + " " + rt.path
}

// handler is the route's handler with its authentication.
func (s *Server) handler(rt *route) http.Handler {
	var h http.Handler
	switch rt.auth {
	case authNone:
		h = rt.plain
	case authGateway:
		h = s.gatewayAuthed(rt.dialect, rt.plain)
		if of, plain := rt.dialectOf, rt.plain; of != nil {
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.gatewayAuthed(of(r), plain).ServeHTTP(w, r)
			})
		}
	default:
		h = s.authed(rt.role, rt.serve)
	}
	if guard := rt.guard; guard != nil {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := guard(r); err != nil {
				s.writeError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	return h
}

// operation is a route's OpenAPI entry. Schemas and parameters are named
// in openapi_components.json, which holds everything of the document but
// its paths.
type operation struct {
	Summary   string
	Params    []string // components/parameters, after the path's own ({id})
	Body      string   // the request body's schema in components/schemas; "" none
	Responses []reply
}

// reply is one status of an operation. With neither Desc nor Schema it is
// the shared error response (components/responses/Error).
type reply struct {
	Status int
	Desc   string
	Schema string // in components/schemas; "" no body
	Media  string // default application/json
	Record bool   // the shared record response (components/responses/Record)
	// Headers are the response headers it may carry, by name, each
	// described in components/headers under its name in lower case.
	Headers []string
}

// failures is the shared error response for each status.
func failures(statuses ...int) []reply {
	r := make([]reply, len(statuses))
	for i, st := range statuses {
		r[i] = reply{Status: st}
	}
	return r
}

// answer is a success with a body of schema, then the failures errs.
func answer(status int, desc, schema string, errs ...int) []reply {
	return append([]reply{{Status: status, Desc: desc, Schema: schema}}, failures(errs...)...)
}

// whole is 200 with the whole breadcrumb (the answer of a change, and of
// /full), then the failures errs.
func whole(errs ...int) []reply {
	return append([]reply{{Status: http.StatusOK, Record: true}}, failures(errs...)...)
}

// routeTable is every route the server serves.
func (s *Server) routeTable() []route {
	rows := []route{
		{method: "GET", path: "/health", auth: authNone, plain: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, health{Status: "ok", Version: version.String()})
		}, doc: operation{Summary: "Liveness", Responses: []reply{{Status: 200, Desc: "ok"}}}},
		{method: "GET", path: "/openapi.json", auth: authNone, plain: s.serveOpenAPI,
			doc: operation{Summary: "This document", Responses: []reply{{Status: 200, Desc: "the OpenAPI document"}}}},
		{method: "GET", path: "/metrics", role: RoleCurator, serve: func(w http.ResponseWriter, r *http.Request, p Principal) error {
			s.metrics.handler(p.OwnerID).ServeHTTP(w, r)
			return nil
		}, doc: operation{Summary: "Prometheus metrics",
			Responses: append([]reply{{Status: 200, Desc: "text exposition format"}}, failures(401)...)}},

		{method: "POST", path: "/breadcrumbs", role: RoleEmitter, serve: s.create, doc: operation{
			Summary: "Create a breadcrumb (emitter)", Params: []string{"idempotencyKey"}, Body: "CreateRequest",
			Responses: answer(201, "created (or replayed, with Idempotent-Replayed: true)", "Created", 400, 401, 403, 409, 413)}},
		{method: "GET", path: "/breadcrumbs", serve: s.list, doc: operation{
			Summary:   "List the caller's breadcrumbs, newest first",
			Params:    []string{"tag", "schemaName", "listLimit", "cursor", "includeContext"},
			Responses: answer(200, "a page", "Page", 400)}},
		{method: "GET", path: "/breadcrumbs/{id}", serve: s.getView, doc: operation{
			Summary: "The LLM view (counts a read for usage TTLs); ETag is the version", Params: []string{"ifNoneMatch", "ifMatch"},
			Responses: append(answer(200, "the view", "View", 404, 412), reply{Status: 304, Desc: "not modified: If-None-Match names the current version"})}},
		{method: "PATCH", path: "/breadcrumbs/{id}", role: RoleEmitter, serve: s.patch, doc: operation{
			Summary: "Change fields (emitter)", Params: []string{"ifMatch"}, Body: "PatchRequest",
			Responses: whole(400, 404, 412)}},
		{method: "DELETE", path: "/breadcrumbs/{id}", role: RoleCurator, serve: s.delete, doc: operation{
			Summary: "Delete (curator); the history stays", Responses: answer(204, "deleted", "", 403, 404)}},
		{method: "GET", path: "/breadcrumbs/{id}/full", serve: s.getFull, doc: operation{
			Summary: "The whole record; ETag is the version", Params: []string{"ifNoneMatch", "ifMatch"},
			Responses: append(whole(404, 412), reply{Status: 304, Desc: "not modified: If-None-Match names the current version"})}},
		{method: "GET", path: "/breadcrumbs/{id}/history", serve: s.history, doc: operation{
			Summary: "Every version, newest first", Responses: answer(200, "versions", "History", 404)}},
		{method: "POST", path: "/breadcrumbs/{id}/tags/add", role: RoleEmitter, serve: s.tags(true), doc: operation{
			Summary: "Add tags (emitter)", Params: []string{"ifMatch"}, Body: "Tags", Responses: whole(400, 404)}},
		{method: "POST", path: "/breadcrumbs/{id}/tags/remove", role: RoleEmitter, serve: s.tags(false), doc: operation{
			Summary: "Remove tags (emitter)", Params: []string{"ifMatch"}, Body: "Tags", Responses: whole(400, 404)}},
		{method: "POST", path: "/breadcrumbs/{id}/context/merge", role: RoleEmitter, serve: s.merge, doc: operation{
			Summary: "Apply an RFC 7396 JSON Merge Patch to context (emitter): null deletes, arrays replace", Params: []string{"ifMatch"}, Body: "MergeRequest",
			Responses: whole(400, 404)}},
		{method: "POST", path: "/views/preview", serve: s.preview, doc: operation{
			Summary: "Apply hints to a posted context without storing anything", Body: "PreviewRequest",
			Responses: append(answer(200, "the view", "Preview", 400),
				reply{Status: 422, Desc: "view_too_costly: the view needs more memory than a view may take", Schema: "Error"})}},
		{method: "POST", path: "/tokens/revoke", role: RoleCurator, serve: s.revoke, doc: operation{
			Summary: "Revoke tokens of the caller's own owner (curator): one token by its id (jti), or an agent's tokens " +
				"issued before a time (default now; token issue times are whole seconds, so tokens issued in that second " +
				"count as before it). Every replica refuses them with 401 token_revoked within a second",
			Body: "RevokeRequest",
			Responses: append(answer(201, "the revocation recorded", "Revocation", 400, 401, 403),
				reply{Status: 409, Desc: "too_many_revocations: the owner's curators have recorded as many revocations as they may", Schema: "Error"})}},
		// Event stream and stored subscriptions: one selector language.
		{method: "GET", path: "/events/stream", role: RoleSubscriber, serve: s.stream, doc: operation{
			Summary: "Server-Sent Events of changes the caller may see (subscriber), filtered by one of: a selector " +
				"(selector=JSON), a stored subscription of the caller's agent (subscription=ID), or the shorthand " +
				"tag/schema_name (all_tags and schema_name of a selector)",
			Params: []string{"streamSelector", "streamSubscription", "streamTag", "schemaName", "lastEventID"},
			Responses: append([]reply{{Status: 200, Media: "text/event-stream", Schema: "Event",
				Desc: "text/event-stream: events created, updated, deleted, expired (data: Event) and ping every 15 s"}},
				failures(400, 403, 404)...)}},
		{method: "POST", path: "/subscriptions", role: RoleSubscriber, serve: s.createSubscription, doc: operation{
			Summary: "Store a named selector for the caller's agent (subscriber; at most 100 per agent)",
			Body:    "SubscriptionRequest",
			Responses: append(answer(201, "the subscription", "Subscription", 400, 403),
				reply{Status: 409, Desc: "too_many_subscriptions: the agent has 100 subscriptions; delete one first", Schema: "Error"})}},
		{method: "GET", path: "/subscriptions", role: RoleSubscriber, serve: s.subscriptions, doc: operation{
			Summary:   "The caller's agent's subscriptions, oldest first (subscriber)",
			Responses: answer(200, "the subscriptions", "SubscriptionList", 403)}},
		{method: "GET", path: "/subscriptions/{id}", role: RoleSubscriber, serve: s.subscription, doc: operation{
			Summary:   "One of the caller's agent's subscriptions (subscriber); another agent's is 404",
			Responses: answer(200, "the subscription", "Subscription", 403, 404)}},
		{method: "DELETE", path: "/subscriptions/{id}", role: RoleSubscriber, serve: s.deleteSubscription, doc: operation{
			Summary:   "Delete one of the caller's agent's subscriptions (subscriber); open streams keep their selector",
			Responses: answer(204, "deleted", "", 403, 404)}},
		// End of the event stream and subscriptions.

		// Webhooks: each the creating agent's; another agent's is 404.
		{method: "POST", path: "/webhooks", role: RoleEmitter, serve: s.createWebhook, doc: operation{
			Summary: "Register a webhook for the caller's agent (emitter or curator; at most 100 per agent): an https target, " +
				"a selector, payload view (default: the record as the model sees it) or full. Deliveries follow Standard " +
				"Webhooks (webhook-id, webhook-timestamp, webhook-signature); the answer holds the signing secret, shown once",
			Body: "WebhookRequest",
			Responses: append(answer(201, "the webhook and its secret", "WebhookWithSecret", 400, 403),
				reply{Status: 409, Desc: "too_many_webhooks: the agent has 100 webhooks; delete one first", Schema: "Error"})}},
		{method: "GET", path: "/webhooks", role: RoleEmitter, serve: s.webhooks, doc: operation{
			Summary:   "The caller's agent's webhooks, oldest first (no secrets)",
			Responses: answer(200, "the webhooks", "WebhookList", 403)}},
		{method: "GET", path: "/webhooks/{id}", role: RoleEmitter, serve: s.webhook, doc: operation{
			Summary:   "One of the caller's agent's webhooks: paused and why, failing since, fan-out cursor, missed events",
			Responses: answer(200, "the webhook", "Webhook", 403, 404)}},
		{method: "PATCH", path: "/webhooks/{id}", role: RoleEmitter, serve: s.patchWebhook, doc: operation{
			Summary:   "Change a webhook: url, selector, description, paused (true pauses; false resumes, not failing)",
			Body:      "WebhookPatch",
			Responses: answer(200, "the webhook", "Webhook", 400, 403, 404)}},
		{method: "DELETE", path: "/webhooks/{id}", role: RoleEmitter, serve: s.deleteWebhook, doc: operation{
			Summary:   "Delete a webhook with its deliveries",
			Responses: answer(204, "deleted", "", 403, 404)}},
		{method: "POST", path: "/webhooks/{id}/rotate-secret", role: RoleEmitter, serve: s.rotateWebhookSecret, doc: operation{
			Summary:   "Make a new signing secret, shown once; the old one signs beside it for 24 h",
			Responses: answer(200, "the webhook and its new secret", "WebhookWithSecret", 403, 404)}},
		{method: "POST", path: "/webhooks/{id}/test", role: RoleEmitter, serve: s.testWebhook, doc: operation{
			Summary:   "Queue a signed test message ({\"type\": \"webhook.test\"}), delivered and retried as any",
			Responses: answer(202, "the test delivery", "WebhookDelivery", 403, 404)}},
		{method: "GET", path: "/webhooks/{id}/deliveries", role: RoleEmitter, serve: s.deliveries, doc: operation{
			Summary:   "A webhook's deliveries, newest first; status=failed is its dead-letter list",
			Params:    []string{"deliveryStatus", "deliveryLimit", "deliveryCursor"},
			Responses: answer(200, "a page of deliveries", "WebhookDeliveryList", 400, 403, 404)}},
		{method: "GET", path: "/webhooks/{id}/deliveries/{delivery}", role: RoleEmitter, serve: s.delivery, doc: operation{
			Params:    []string{"delivery"},
			Summary:   "One delivery with its body and its attempts (kept 7 days): status, latency, error class, response excerpt",
			Responses: answer(200, "the delivery", "WebhookDeliveryDetail", 403, 404)}},
		{method: "POST", path: "/webhooks/{id}/deliveries/{delivery}/redeliver", role: RoleEmitter, serve: s.redeliver, doc: operation{
			Params:    []string{"delivery"},
			Summary:   "Deliver a failed (or delivered) delivery again, due now with a fresh retry horizon",
			Responses: answer(200, "the delivery, pending", "WebhookDelivery", 400, 403, 404)}},
		{method: "POST", path: "/webhooks/{id}/redeliver", role: RoleEmitter, serve: s.redeliverFailed, doc: operation{
			Summary:   "Deliver every failed delivery of the webhook again (up to 10,000 per call, oldest first)",
			Responses: answer(200, "how many", "RedeliverResult", 403, 404)}},

		// The console (internal/app/console): its page and assets need no
		// token, since they hold no data; the page signs in with a token,
		// or with a login link's code exchanged once for one.
		{method: "GET", path: console.Prefix, auth: authNone, plain: console.Handler().ServeHTTP, doc: operation{
			Summary: "The web console (HTML, scripts, styles; no data): sign in with a token or a login link",
			Responses: []reply{{Status: 200, Desc: "the console page or asset", Media: "text/html"}, {Status: 304, Desc: "not modified"},
				{Status: 404, Desc: "no such console asset"}}}},
		{method: "POST", path: "/console/login", auth: authNone, plain: s.consoleLogin, doc: operation{
			Summary: "Exchange a console login link's code (ctxkit token --console; ctxkit serve prints one) for a token of " +
				"its principal, valid 12 hours. A code is valid 10 minutes and works once, across every replica",
			Body:      "LoginRequest",
			Responses: answer(200, "the token", "LoginReply", 400, 401)}},
		{method: "GET", path: "/breadcrumbs/{id}/stats", serve: s.stats, doc: operation{
			Summary:   "Token counts of the context and of its view (o200k_base) and the share the view saves; a lookup, spending no read budget",
			Responses: answer(200, "the counts", "ViewStats", 404)}},

		{method: "GET", path: "/breadcrumbs/search", serve: s.search, doc: operation{
			Summary: "Full-text search over the breadcrumbs the caller may list (title, tags, description and the text " +
				"of the view; never fields the view hides), best first (a title holding every term first); the items " +
				"are views with scores. It ranks at most the 5,000 newest matching breadcrumbs of the caller's owner, " +
				"and the message says when more matched; it also names the items whose view fell back",
			Params:    []string{"q", "tag", "schemaName", "searchLimit"},
			Responses: answer(200, "an envelope: meta (status OK, source STORE) and items", "SearchResult", 400)}},
		// Any valid token may search a workspace: see workspaceSearcher.
		{method: "GET", path: "/workspace/search", serve: newWorkspaceSearcher(s).search, doc: operation{
			Summary: "Search the tracked text files of a workspace (ctxkit serve --workspace), which every valid token " +
				"may search: from the index when it is fresh and the caller's owner wrote it, trusting only hits the " +
				"workspace's own manifest names (OK, FRESH); a file changed since indexing re-read from disk (FALLBACK, " +
				"STALE); else a scan of the files git tracks or the manifest lists (FALLBACK, STALE or UNKNOWN; at most " +
				"10 s, partial results say so); with neither list an ERROR envelope not_indexed. 503 busy (with " +
				"Retry-After) while the server runs its maximum of disk scans",
			Params:    []string{"repo", "workspaceQ", "searchLimit"},
			Responses: answer(200, "an envelope of matching files", "WorkspaceResult", 400, 404, 503)}},
		{method: "POST", path: "/mcp", anyMethod: true, serve: s.mcpHandler(), guard: s.mcpOrigin, doc: operation{
			Summary: "MCP over streamable HTTP (stateless, JSON responses): tools breadcrumb_get, breadcrumb_search, " +
				"breadcrumb_list, breadcrumb_create, breadcrumb_update, workspace_search; each result's " +
				"structuredContent is an envelope",
			Body: "JSONRPCMessage",
			Responses: append(answer(200, "a JSON-RPC 2.0 response", "JSONRPCResponse"),
				reply{Status: 202, Desc: "a notification, accepted; one the server has no use for is ignored"},
				reply{Status: 401},
				reply{Status: 403, Schema: "Error", Desc: "forbidden_origin: the Origin header is present and is not a " +
					"trusted origin (against DNS rebinding: without configuration, on a loopback listener any loopback " +
					"origin, else the origin the request's Host names)"})}},
		{method: "POST", path: "/relay", serve: s.relay, doc: operation{
			Summary:   "Relay a parent agent's prompts through a transformer pipeline for a sub-agent (stores nothing; any role)",
			Body:      "RelayRequest",
			Responses: answer(200, "the relayed prompts and what each transformer did", "RelayResponse", 400, 401, 413, 422)}},
	}
	if g := s.opts.Gateway; g != nil {
		// The gateway's errors are its dialect's, not the API's; an
		// upstream's own error is answered with a status of these too.
		dialectErrors := func(desc string, headers ...string) []reply {
			var r []reply
			for _, st := range []int{400, 401, 404, 413, 429, 500, 502, 503} {
				r = append(r, reply{Status: st, Desc: desc, Schema: "DialectError", Headers: headers})
			}
			return r
		}
		// A chat answer names the attempt that served it and what it
		// cost, the context x-ctxkit-context added and what was not
		// carried upstream; an error names the attempt whose failure
		// it passes on (when one was made) and the warnings.
		answered := []string{gateway.UpstreamHeader, gateway.AttemptsHeader, gateway.CostHeader, gateway.ContextIDsHeader, gateway.WarningsHeader}
		failed := []string{gateway.UpstreamHeader, gateway.AttemptsHeader, gateway.WarningsHeader}
		chatReplies := func(desc, dialect string) []reply {
			return append([]reply{{Status: 200, Desc: desc, Schema: "ChatResponse", Headers: answered}},
				dialectErrors("an error in the "+dialect+" dialect", failed...)...)
		}
		rows = append(rows,
			route{method: "GET", path: "/gateway/usage", serve: s.gatewayUsage, doc: operation{
				Summary: "Sum the gateway's traffic records (routes with record: true) of the caller's owner over [from, to): " +
					"requests, errors, tokens by kind and cost, grouped by model (the upstream model that answered), agent or " +
					"provider. An agent sums its own records, a curator every agent's. The range is at most 31 days (default: " +
					"the last 24 hours); at most 20,000 records are read, newest first, and complete: false says the bound " +
					"stopped the reading",
				Params:    []string{"usageFrom", "usageTo", "groupBy"},
				Responses: answer(200, "the sums", "GatewayUsage", 400, 401)}},
			route{method: "GET", path: "/gateway/routes", serve: s.gatewayRoutes, doc: operation{
				Summary: "The gateway's providers (name, type, models) and routes (the model a client sends, and the " +
					"targets tried in order: provider, its type, the upstream model; whether the route keeps traffic " +
					"records), for any valid token; never a key, a key's source or a base URL",
				Responses: answer(200, "{providers: [{name, type, api, models}], routes: [{model, targets: [{provider, type, model}], max_attempts, max_time, record}]}", "", 401)}},
			route{method: "POST", path: "/v1/messages", auth: authGateway, dialect: gateway.Anthropic, plain: g.Messages, doc: operation{
				Summary: "The Anthropic Messages dialect, served by the upstream the model names (any valid token)", Body: "ChatRequest",
				Params: []string{"ctxkitContext"}, Responses: chatReplies("the upstream's answer", "Anthropic")}},
			route{method: "POST", path: "/v1/chat/completions", auth: authGateway, dialect: gateway.OpenAI, plain: g.ChatCompletions, doc: operation{
				Summary: "The OpenAI Chat Completions dialect, served by the upstream the model names (any valid token)", Body: "ChatRequest",
				Params: []string{"ctxkitContext"}, Responses: chatReplies("the upstream's answer", "OpenAI")}},
			route{method: "POST", path: "/v1/responses", auth: authGateway, dialect: gateway.Responses, plain: g.Responses, doc: operation{
				Summary: "The OpenAI Responses dialect, served by the upstream the model names; store (the default) keeps the response as a private breadcrumb of the caller (any valid token)", Body: "ChatRequest",
				Params: []string{"ctxkitContext"}, Responses: chatReplies("the upstream's answer", "OpenAI")}},
			route{method: "GET", path: "/v1/responses/{id}", auth: authGateway, dialect: gateway.Responses, plain: g.Response, doc: operation{
				Summary:   "A stored response of the caller (any valid token)",
				Responses: append(answer(200, "the response object", "ChatResponse"), dialectErrors("an error in the OpenAI dialect")...)}},
			route{method: "DELETE", path: "/v1/responses/{id}", auth: authGateway, dialect: gateway.Responses, plain: g.DeleteResponse, doc: operation{
				Summary:   "Delete a stored response of the caller (any valid token)",
				Responses: append(answer(200, "{id, object, deleted: true}", "ChatResponse"), dialectErrors("an error in the OpenAI dialect")...)}},
			route{method: "POST", path: "/v1beta/models/{call}", auth: authGateway, dialect: gateway.Gemini, plain: g.GenerateContent, doc: operation{
				Summary: "The Gemini dialect: {model}:generateContent, and {model}:streamGenerateContent (SSE with alt=sse, else a JSON array); the token in x-goog-api-key (any valid token)", Body: "ChatRequest",
				Params: []string{"ctxkitContext"}, Responses: chatReplies("the upstream's answer", "Gemini")}},
			route{method: "GET", path: "/v1/models", auth: authGateway, dialect: gateway.OpenAI, plain: g.Models, doc: operation{
				Summary:   "The models the gateway serves (any valid token)",
				Responses: append(answer(200, "the model list", "ModelList"), reply{Status: 401, Desc: "an error in the OpenAI dialect", Schema: "DialectError"})}},
			route{method: "GET", path: "/v1/models/{model}", auth: authGateway, dialectOf: gateway.DialectOf, plain: g.Model, doc: operation{
				Summary: "One model the gateway serves (any valid token): in Anthropic's shape when the request carries an " +
					"anthropic-version or x-api-key header, else in OpenAI's; an id holding / is sent escaped (%2F)",
				Params: []string{"model"},
				Responses: append(answer(200, "the model", "Model"),
					reply{Status: 401, Desc: "an error in the request's dialect", Schema: "DialectError"},
					reply{Status: 404, Desc: "the model is not configured, in the request's dialect", Schema: "DialectError"})}},
			route{method: "POST", path: "/v1/messages/count_tokens", auth: authGateway, dialect: gateway.Anthropic, plain: g.CountTokens, doc: operation{
				Summary: "Count a Messages request's input tokens (any valid token): the upstream's own count where it has one " +
					"(Anthropic), else ctxkit's offline estimate; the X-Ctxkit-Token-Count header says exact or estimate",
				Body: "ChatRequest",
				Responses: append([]reply{{Status: 200, Desc: "the count", Schema: "TokenCount", Headers: []string{gateway.TokenCountHeader, gateway.WarningsHeader}}},
					dialectErrors("an error in the Anthropic dialect")...)}},
			route{method: "POST", path: "/v1/embeddings", auth: authGateway, dialect: gateway.OpenAI, plain: g.Embeddings, doc: operation{
				Summary: "The OpenAI embeddings dialect, served by the embedding API of the upstream the model names " +
					"(openai, mistral, gemini, bedrock; any valid token); usage estimated offline where the upstream " +
					"reports none (X-Ctxkit-Token-Count: estimate)",
				Body: "EmbeddingRequest",
				Responses: append([]reply{{Status: 200, Desc: "the embeddings", Schema: "EmbeddingResponse", Headers: []string{gateway.TokenCountHeader}}},
					dialectErrors("an error in the OpenAI dialect")...)}},
			route{method: "GET", path: "/v1beta/models", auth: authGateway, dialect: gateway.Gemini, plain: g.GeminiModels, doc: operation{
				Summary:   "The models the gateway serves, in the Gemini API's shape (any valid token)",
				Params:    []string{"pageSize", "pageToken"},
				Responses: append(answer(200, "a page of models", "GeminiModelList"), reply{Status: 400, Desc: "an error in the Gemini dialect", Schema: "DialectError"}, reply{Status: 401, Desc: "an error in the Gemini dialect", Schema: "DialectError"})}},
			route{method: "GET", path: "/v1beta/models/{model}", auth: authGateway, dialect: gateway.Gemini, plain: g.GeminiModel, doc: operation{
				Summary: "One model the gateway serves, in the Gemini API's shape (any valid token)",
				Params:  []string{"model"},
				Responses: append(answer(200, "the model", "GeminiModel"),
					reply{Status: 401, Desc: "an error in the Gemini dialect", Schema: "DialectError"},
					reply{Status: 404, Desc: "the model is not configured, in the Gemini dialect", Schema: "DialectError"})}},
		)
	}
	return rows
}

// routes builds the mux and the OpenAPI document from the route table.
func (s *Server) routes() {
	m := s.mux
	rows := s.routeTable()
	for i := range rows {
		m.Handle(rows[i].pattern(), s.handler(&rows[i]))
	}
	doc, err := openAPIDocument(rows)
	if err != nil {
		// The table and the embedded components are both part of the
		// binary: a fault here is a fault of the build, which the tests
		// catch before any release.
		panic(err)
	}
	s.openAPI = doc
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The path may exist with other methods: that is a 405 with Allow.
		var allow []string
		for _, method := range []string{"GET", "POST", "PATCH", "DELETE"} {
			probe := r.Clone(r.Context())
			probe.Method = method
			if _, pattern := m.Handler(probe); pattern != "/" && pattern != "" {
				allow = append(allow, method)
			}
		}
		if g := s.opts.Gateway; g != nil && (strings.HasPrefix(r.URL.Path, "/v1/") || strings.HasPrefix(r.URL.Path, "/v1beta/")) {
			// The gateway's paths answer in the caller's dialect, which
			// its SDK reads, and only to a caller with a valid token.
			s.gatewayAuthed(gateway.DialectOf(r), func(w http.ResponseWriter, r *http.Request) {
				g.Unknown(w, r, allow)
			}).ServeHTTP(w, r)
			return
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(w, r, errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		s.writeError(w, r, errorf(http.StatusNotFound, CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
}

// health is GET /health's answer.
type health struct {
	Status  string `json:"status"`  // always "ok": the process serves
	Version string `json:"version"` // the binary's version, as ctxkit version says it
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openAPI)
}

// openAPIComponents is the OpenAPI document without its paths: info,
// security, and the schemas, parameters and responses operations name.
//
//go:embed openapi_components.json
var openAPIComponents []byte

// openAPIDocument is the OpenAPI 3.1 document of the routes: the embedded
// components with a path item for each route. It fails when a route names
// a schema or parameter the components lack, or has no summary or replies.
func openAPIDocument(rows []route) ([]byte, error) {
	var base struct {
		OpenAPI    string          `json:"openapi"`
		Info       json.RawMessage `json:"info"`
		Security   json.RawMessage `json:"security"`
		Components json.RawMessage `json:"components"`
	}
	var c struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
		Schemas    map[string]json.RawMessage `json:"schemas"`
		Headers    map[string]json.RawMessage `json:"headers"`
	}
	if err := json.Unmarshal(openAPIComponents, &base); err != nil {
		return nil, fmt.Errorf("openapi_components.json: %w", err)
	}
	if err := json.Unmarshal(base.Components, &c); err != nil {
		return nil, fmt.Errorf("openapi_components.json: components: %w", err)
	}
	schema := func(name string) (map[string]string, error) {
		if _, ok := c.Schemas[name]; !ok {
			return nil, fmt.Errorf("no schema %q in openapi_components.json", name)
		}
		return map[string]string{"$ref": "#/components/schemas/" + name}, nil
	}
	paths := map[string]map[string]any{}
	for i := range rows {
		rt := &rows[i]
		d := &rt.doc
		where := rt.method + " " + rt.path
		if d.Summary == "" || len(d.Responses) == 0 {
			return nil, fmt.Errorf("%s: the route's OpenAPI entry has no summary or no replies", where)
		}
		op := openAPIOperation{Summary: d.Summary, Responses: map[string]any{}}
		switch rt.auth {
		case authNone:
			op.Security = &[]map[string][]string{}
		case authGateway:
			op.Security = &[]map[string][]string{{"bearer": {}}, {"apiKey": {}}}
		}
		params := d.Params
		if strings.Contains(rt.path, "{id}") {
			params = append([]string{"id"}, params...)
		}
		for _, p := range params {
			if _, ok := c.Parameters[p]; !ok {
				return nil, fmt.Errorf("%s: no parameter %q in openapi_components.json", where, p)
			}
			op.Parameters = append(op.Parameters, map[string]string{"$ref": "#/components/parameters/" + p})
		}
		if d.Body != "" {
			sc, err := schema(d.Body)
			if err != nil {
				return nil, fmt.Errorf("%s: request body: %w", where, err)
			}
			op.RequestBody = &openAPIBody{Required: true, Content: map[string]openAPIMedia{"application/json": {Schema: sc}}}
		}
		for _, rp := range d.Responses {
			code := strconv.Itoa(rp.Status)
			if _, dup := op.Responses[code]; dup || http.StatusText(rp.Status) == "" {
				return nil, fmt.Errorf("%s: status %s twice or not a status", where, code)
			}
			var headers map[string]any
			for _, h := range rp.Headers {
				name := strings.ToLower(h)
				if _, ok := c.Headers[name]; !ok {
					return nil, fmt.Errorf("%s: %s: no header %q in openapi_components.json", where, code, name)
				}
				if headers == nil {
					headers = map[string]any{}
				}
				headers[name] = map[string]string{"$ref": "#/components/headers/" + name}
			}
			if headers != nil && (rp.Record || rp.Desc == "" && rp.Schema == "") {
				return nil, fmt.Errorf("%s: %s: headers on a shared response", where, code)
			}
			switch {
			case rp.Record:
				op.Responses[code] = map[string]string{"$ref": "#/components/responses/Record"}
			case rp.Desc == "" && rp.Schema == "":
				op.Responses[code] = map[string]string{"$ref": "#/components/responses/Error"}
			case rp.Schema == "":
				op.Responses[code] = openAPIResponse{Description: rp.Desc, Headers: headers}
			default:
				sc, err := schema(rp.Schema)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", where, code, err)
				}
				media := rp.Media
				if media == "" {
					media = "application/json"
				}
				op.Responses[code] = openAPIResponse{Description: rp.Desc, Headers: headers, Content: map[string]openAPIMedia{media: {Schema: sc}}}
			}
		}
		item := paths[rt.path]
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		method := strings.ToLower(rt.method)
		if _, dup := item[method]; dup {
			return nil, fmt.Errorf("%s: routed twice", where)
		}
		item[method] = op
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // summaries are prose, not HTML
	enc.SetIndent("", "  ")
	err := enc.Encode(struct {
		OpenAPI    string                    `json:"openapi"`
		Info       json.RawMessage           `json:"info"`
		Security   json.RawMessage           `json:"security"`
		Components json.RawMessage           `json:"components"`
		Paths      map[string]map[string]any `json:"paths"`
	}{base.OpenAPI, base.Info, base.Security, base.Components, paths})
	return out.Bytes(), err
}

type openAPIOperation struct {
	Summary     string                 `json:"summary"`
	Security    *[]map[string][]string `json:"security,omitempty"` // nil: the document's; empty: none
	Parameters  []map[string]string    `json:"parameters,omitempty"`
	RequestBody *openAPIBody           `json:"requestBody,omitempty"`
	Responses   map[string]any         `json:"responses"`
}

type openAPIBody struct {
	Required bool                    `json:"required"`
	Content  map[string]openAPIMedia `json:"content"`
}

type openAPIMedia struct {
	Schema map[string]string `json:"schema"`
}

type openAPIResponse struct {
	Description string                  `json:"description"`
	Headers     map[string]any          `json:"headers,omitempty"`
	Content     map[string]openAPIMedia `json:"content,omitempty"`
}
