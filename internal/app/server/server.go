// Package server is ctxkit's HTTP API over a store.Store: breadcrumbs, their
// LLM views, and authoring previews. Handlers return errors; one adapter maps
// them to JSON errors with fitting status codes.
package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/canonjson"
	"github.com/ctxkit/ctxkit/internal/lru"
	"github.com/ctxkit/ctxkit/internal/strictjson"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// Options configure a Server; the zero values of the limits are defaults.
type Options struct {
	Store        store.Store
	Key          ed25519.PrivateKey // verifies bearer tokens
	Logger       *slog.Logger       // nil: discard
	MaxBodyBytes int64              // default 1 MiB
	MaxDepth     int                // JSON nesting depth of a request body; default 64
	RuleTimeout  time.Duration      // view rules' deadline; default view.DefaultRuleTimeout
	PingEvery    time.Duration      // event-stream keep-alive; default 15s
	RelayTimeout time.Duration      // POST /relay's deadline, waiting for a slot included; default 5s
	// MaxConcurrentViews bounds how many views are computed at once (cache
	// hits are free): a hints author cannot make the server run more rule
	// engines than this in parallel. Default: 2 × GOMAXPROCS.
	MaxConcurrentViews int
	// ViewCacheBytes bounds the bytes of computed views kept for reuse (as
	// well as their number, 4096): a view is as large as its record, so
	// a count alone would let any reader hold gigabytes. Default 64 MiB.
	ViewCacheBytes int64
	// ViewMemory bounds the heap while views are computed, in bytes: when
	// the heap passes it, the views that have run longest are stopped
	// (view_too_costly). Each view computation gets a budget of its own,
	// ViewMemory / (4 × MaxConcurrentViews) up to 64 MiB, that its costly
	// steps are priced against before they run. Default 1 GiB.
	ViewMemory int64
	Now        func() time.Time // default time.Now
	// MaxRevocations bounds the revocations recorded for one owner that its
	// curators may add to through POST /tokens/revoke (409
	// too_many_revocations past it; the command line is not bounded).
	// Revocations are kept for good and every replica holds them all in
	// memory, so without a bound one curator could fill it. Default
	// 100,000.
	MaxRevocations int
	// Gateway, when set, serves POST /v1/messages, POST
	// /v1/chat/completions and GET /v1/models for any valid token, which
	// these routes also accept in the x-api-key header.
	Gateway *gateway.Gateway
	// Workspaces are the directories GET /workspace/search (and the MCP
	// tool workspace_search) may read, each named by its index status's
	// repo or else its base name. Nothing outside them is read. A workspace
	// is what the operator shares with every agent of the server: any valid
	// token, of any owner, may search it. That is why only its tracked text
	// files are ever read (git ls-files, or the manifest ctxkit index
	// wrote), never .git, .ctxkit, untracked or ignored files.
	Workspaces []string
	// MaxWorkspaceScans bounds the disk scans of workspaces running at
	// once; a search that would start one more is answered 503 busy.
	// Default 2.
	MaxWorkspaceScans int
	// SearchMaxRanked bounds how many of the newest matching breadcrumbs
	// of the caller's owner a search ranks (store.SearchQuery.MaxRanked);
	// 0 means store.DefaultMaxRanked.
	SearchMaxRanked int
	// WorkspaceScanTimeout bounds one workspace search's reading of files
	// (a disk scan, or verifying index hits); one that runs out of time
	// answers with what it found so far and says so. Default 10s.
	WorkspaceScanTimeout time.Duration
	// WorkspaceVerifyBytes bounds the bytes one workspace search reads to
	// verify index hits against the files on disk; hits past it are
	// reported as not verified. Default 64 MiB.
	WorkspaceVerifyBytes int64
	// MCPOrigins are browser origins ("https://app.example.com") besides
	// the server's own that may call /mcp; see Server.mcpOrigin.
	MCPOrigins []string
	// Webhooks tune webhook delivery (RunWebhooks) and the target check
	// of POST and PATCH /webhooks.
	Webhooks WebhookOptions
}

// DefaultViewMemory is Options.ViewMemory's default.
const DefaultViewMemory = 1 << 30

// Server serves the API.
type Server struct {
	opts    Options
	pub     ed25519.PublicKey
	views   *view.Cache
	results *lru.Cache[view.ResultKey, cachedView]
	tokens  *lru.Cache[[32]byte, verified] // tokens verified, by SHA-256
	frames  *lru.Cache[int64, []byte]      // event-stream frames of recent changes, by seq
	revoked revocations
	mux     *router
	openAPI []byte // the document GET /openapi.json serves, built from the route table
	metrics *metrics
	records *exchangeRecorder // the gateway's traffic records; nil without a gateway
	hooks   *hookRunner       // webhook fan-out and delivery

	corruptLogged atomic.Bool // the store said it is damaged, and it was logged

	viewSlots   chan struct{}   // a token per view computation in progress
	streams     context.Context // cancelled by StopStreams
	stopStreams context.CancelFunc
}

type cachedView struct {
	value    json.RawMessage
	status   view.Status
	code     string // the view error code when status is FALLBACK
	reason   string
	warnings []view.Warning
}

// size is what a cached view holds in memory, its key included, roughly.
func (c cachedView) size() int64 {
	n := int64(len(c.value)+len(c.reason)) + 256
	for _, w := range c.warnings {
		n += int64(len(w.Path)+len(w.Message)) + 32
	}
	return n
}

// New returns a server.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 64
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = 15 * time.Second
	}
	if opts.MaxConcurrentViews <= 0 {
		opts.MaxConcurrentViews = 2 * runtime.GOMAXPROCS(0)
	}
	if opts.ViewCacheBytes <= 0 {
		opts.ViewCacheBytes = 64 << 20
	}
	if opts.ViewMemory <= 0 {
		opts.ViewMemory = DefaultViewMemory
	}
	if opts.MaxRevocations <= 0 {
		opts.MaxRevocations = 100_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// The computations that may run at once together take at most a
	// quarter of the bound by their budgets; the rest is the heap's room
	// for everything else, and for the watchdog's reaction time.
	perView := min(64<<20, opts.ViewMemory/int64(4*opts.MaxConcurrentViews))
	viewOpts := view.Options{RuleTimeout: opts.RuleTimeout, MaxMemory: perView, Budget: view.NewBudget(opts.ViewMemory)}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    opts,
		pub:     opts.Key.Public().(ed25519.PublicKey),
		views:   view.NewCache(1024, viewOpts),
		results: lru.NewBytes[view.ResultKey, cachedView](4096, opts.ViewCacheBytes, cachedView.size),
		tokens:  lru.New[[32]byte, verified](4096),
		frames:  lru.New[int64, []byte](1024),
		mux:     newRouter(),
		metrics: newMetrics(),
	}
	s.revoked.store = opts.Store
	s.hooks = newHookRunner(s, opts.Webhooks)
	s.viewSlots = make(chan struct{}, opts.MaxConcurrentViews)
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	if opts.Gateway != nil {
		opts.Gateway.SetKeeper(keeper{s})
		opts.Gateway.SetContextSource(contextSource{s})
		s.metrics.reg.MustRegister(opts.Gateway.Collectors()...)
		s.records = newRecorder(s, opts.Gateway)
		opts.Gateway.SetRecorder(s.records)
		s.metrics.reg.MustRegister(s.records.collectors()...)
	}
	s.routes()
	return s
}

// viewSlot waits for a free view computation slot; release it when done.
func (s *Server) viewSlot(ctx context.Context) (release func(), err error) {
	select {
	case s.viewSlots <- struct{}{}:
		return func() { <-s.viewSlots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// StopStreams ends every open event stream. Call it when shutting down:
// http.Server.Shutdown waits for requests to finish, and a stream never does
// on its own (register it with http.Server.RegisterOnShutdown).
func (s *Server) StopStreams() { s.stopStreams() }

// DrainRecords stops taking the gateway's traffic records and writes
// those waiting, until ctx ends (the rest are dropped and counted). Call
// it after http.Server.Shutdown, with the shutdown's deadline.
func (s *Server) DrainRecords(ctx context.Context) error {
	if s.records == nil {
		return nil
	}
	return s.records.drain(ctx)
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.metrics.instrument(s.mux) }

// Code is a stable, machine-readable error code: the "code" of an error
// reply. The store's, view's and relay's codes pass through as they are.
type Code string

// The server's own codes.
const (
	CodeUnauthorized       Code = "unauthorized"  // no bearer token, or not a valid one
	CodeTokenRevoked       Code = "token_revoked" // a valid token that was revoked
	CodeForbidden          Code = "forbidden"     // the token lacks the route's role
	CodeForbiddenOrigin    Code = "forbidden_origin"
	CodeNotFound           Code = "not_found" // no such endpoint
	CodeMethodNotAllowed   Code = "method_not_allowed"
	CodeInvalidUTF8        Code = "invalid_utf8"
	CodeInvalidJSON        Code = "invalid_json"
	CodeUnknownField       Code = "unknown_field"
	CodeTooDeep            Code = "too_deep"
	CodeTooLarge           Code = "too_large" // a request body over Options.MaxBodyBytes
	CodeBadBody            Code = "bad_body"  // the request body could not be read
	CodeTooManyRevocations Code = "too_many_revocations"
	CodeUnknownRepo        Code = "unknown_repo"
	CodeBusy               Code = "busy" // every workspace scan slot is taken
	CodeRelayBusy          Code = "RELAY_BUSY"
	CodeRelayTimeout       Code = "RELAY_TIMEOUT"
	CodeCancelled          Code = "cancelled" // the client went away (499)
	CodeUnavailable        Code = "unavailable"
	CodeInternal           Code = "internal"
)

// Error is an error the API answers with: its HTTP status, code and
// message, and where in the request the fault is.
type Error struct {
	Status int
	Code   Code
	// Path is the request's field, query parameter or header at fault, in
	// the style ttl_config.max_reads, limit or If-Match; "" is the request
	// as a whole.
	Path string
	Msg  string
	Err  error // the cause, when another package's error is behind it
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// errorf is an Error of the request as a whole. code is any package's
// code type: the store's, view's and relay's codes are answered as they are.
func errorf[C ~string](status int, code C, format string, args ...any) *Error {
	return &Error{Status: status, Code: Code(code), Msg: fmt.Sprintf(format, args...)}
}

// errorAt is an Error at path, whose message begins with the path.
func errorAt[C ~string](status int, code C, path, format string, args ...any) *Error {
	return &Error{Status: status, Code: Code(code), Path: path, Msg: path + ": " + fmt.Sprintf(format, args...)}
}

// handlerFunc is a handler that returns its error; p is the verified caller.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p Principal) error

// authed wraps h with authentication and a role check ("" = any role).
func (s *Server) authed(role string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.authenticate(r)
		if err == nil && role != "" && !p.Has(role) {
			err = errorf(http.StatusForbidden, CodeForbidden, "this needs the %s role", role)
		}
		if err == nil {
			err = h(w, r, p)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// gatewayAuthed wraps a gateway route: any valid token, as a bearer token,
// in x-api-key (where Anthropic-dialect clients send their key) or in
// x-goog-api-key (Gemini-dialect clients);
// failures are answered in the route's dialect.
func (s *Server) gatewayAuthed(d gateway.Dialect, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			// Anthropic's SDKs send their key in x-api-key, Google's in
			// x-goog-api-key.
			for _, name := range []string{"x-api-key", "x-goog-api-key"} {
				if key := strings.TrimSpace(r.Header.Get(name)); key != "" {
					r = r.Clone(r.Context())
					r.Header.Set("Authorization", "Bearer "+key)
					break
				}
			}
		}
		p, err := s.authenticate(r)
		if err != nil {
			var ae *Error
			msg := "invalid token"
			if errors.As(err, &ae) {
				msg = ae.Msg
			}
			if store.IsCode(err, store.CodeUnavailable) {
				// The token may be fine: revocations could not be checked.
				w.Header().Set("Retry-After", "1")
				gateway.WriteError(w, d, http.StatusServiceUnavailable, "overloaded_error", err.Error())
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
			gateway.WriteError(w, d, http.StatusUnauthorized, "authentication_error", msg)
			return
		}
		ctx := context.WithValue(r.Context(), callerKey{}, p)
		h(w, r.WithContext(gateway.WithCaller(ctx, gateway.Caller{Owner: p.OwnerID, Agent: p.AgentID})))
	})
}

func (s *Server) authenticate(r *http.Request) (Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, errorf(http.StatusUnauthorized, CodeUnauthorized, "missing bearer token")
	}
	// A token verified before is not verified again (an EdDSA check costs
	// tens of microseconds) while it is valid: tokens cannot change.
	now := s.opts.Now()
	key := sha256.Sum256([]byte(token))
	if v, ok := s.tokens.Get(key); ok && !now.Before(v.notBefore) && now.Before(v.expires) {
		return s.unlessRevoked(r.Context(), v)
	}
	if strings.Count(token, ".") != 2 {
		// Not a JWT at all: most often a provider's API key given to a
		// client whose base URL points at ctxkit's gateway.
		return Principal{}, errorf(http.StatusUnauthorized, CodeUnauthorized,
			"invalid token: this is not a ctxkit token (%s): send a token that 'ctxkit token' mints (or 'ctxkit token --admin'); a provider's API key belongs in the gateway's configuration, not in the client", tokenShape(token))
	}
	_, v, err := verifyClaims(s.pub, token, now)
	if err != nil {
		ae := errorf(http.StatusUnauthorized, CodeUnauthorized, "invalid token: %v", err)
		ae.Err = err
		return Principal{}, ae
	}
	s.tokens.Add(key, v)
	return s.unlessRevoked(r.Context(), v)
}

// tokenShape says what a credential that is not a ctxkit token looks
// like, without repeating any of it.
func tokenShape(token string) string {
	for _, k := range []struct{ prefix, what string }{
		{"sk-ant-", "it looks like an Anthropic API key"},
		{"sk-or-", "it looks like an OpenRouter API key"},
		{"sk-", "it looks like an OpenAI-style API key"},
		{"AIza", "it looks like a Google API key"},
		{"AKIA", "it looks like an AWS access key"},
	} {
		if strings.HasPrefix(token, k.prefix) {
			return k.what
		}
	}
	return "a ctxkit token has three dot-separated parts"
}

func actor(p Principal) store.Actor {
	return store.Actor{OwnerID: p.OwnerID, AgentID: p.AgentID, Curator: p.Has(RoleCurator)}
}

// statusClientClosed answers a request whose client went away before the
// reply (nginx's 499): it is counted among the client's errors, not the
// server's.
const statusClientClosed = 499

// writeError maps an error to a JSON error response.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae *Error
		se *store.Error
	)
	// The client went away (or the server is closing its connection):
	// whatever failed because of it is nobody's fault, and nobody reads the
	// reply. Neither a store failure nor an unavailability; only damage
	// to the store is still reported (and refuses writes).
	gone := r.Context().Err() != nil && errors.Is(context.Cause(r.Context()), context.Canceled) && !store.IsCode(err, store.CodeCorrupt)
	switch {
	case errors.As(err, &ae):
	case gone:
		ae = errorf(statusClientClosed, CodeCancelled, "the client closed the request")
	case errors.As(err, &se):
		ae = &Error{Code: Code(se.Code), Msg: se.Error(), Err: se}
		switch se.Code {
		case store.CodeInvalid:
			ae.Status = http.StatusBadRequest
		case store.CodeNotFound:
			ae.Status = http.StatusNotFound
		case store.CodeVersionMismatch:
			ae.Status = http.StatusPreconditionFailed
		case store.CodeIdempotencyConflict:
			ae.Status = http.StatusConflict
		case store.CodeTooLarge:
			ae.Status = http.StatusRequestEntityTooLarge
		case store.CodeUnavailable:
			ae.Status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "1")
		case store.CodeInsufficientStorage:
			ae.Status = http.StatusInsufficientStorage
		case store.CodeCorrupt:
			ae.Status = http.StatusInternalServerError
			s.metrics.storeFails.Inc()
			// The store refuses writes from now on; one log line tells the
			// operator, not one per request.
			if s.corruptLogged.CompareAndSwap(false, true) {
				s.opts.Logger.Error("the store is damaged; writes are refused until it is restored", "method", r.Method, "path", r.URL.Path, "err", cmp.Or(se.Err, error(se)))
			}
		default:
			ae.Status = http.StatusInternalServerError
		}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		ae = errorf(http.StatusServiceUnavailable, CodeUnavailable, "the request was cancelled or timed out")
	default:
		s.metrics.storeFails.Inc()
		s.opts.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = errorf(http.StatusInternalServerError, CodeInternal, "internal error")
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit"`)
	}
	writeJSON(w, ae.Status, errorReply{Error: errorBody{Code: ae.Code, Message: ae.Msg}})
}

// errorReply is every error the API answers: {"error": {"code", "message"}}.
type errorReply struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := canonjson.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// decode reads a JSON request body into v: bounded in size and depth, valid
// UTF-8, and with no fields v does not define.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, s.opts.MaxBodyBytes)
	if err != nil {
		return err
	}
	return s.parse(body, v)
}

// parse is decode for a body already read.
func (s *Server) parse(body []byte, v any) error {
	err := strictjson.Unmarshal(body, v, strictjson.Limits{Depth: s.opts.MaxDepth})
	if err == nil {
		return nil
	}
	e := err.(*strictjson.Error)
	switch e.Code {
	case strictjson.CodeUTF8:
		return errorf(http.StatusBadRequest, "invalid_utf8", "the request body is not valid UTF-8")
	case strictjson.CodeTooDeep:
		return errorf(http.StatusBadRequest, "too_deep", "the request body %s", e.Msg)
	case strictjson.CodeType:
		var te *json.UnmarshalTypeError
		errors.As(e.Err, &te)
		return errorf(http.StatusBadRequest, store.CodeInvalid, "%s: must be %s, not a JSON %s", te.Field, typeName(te.Type.String()), te.Value)
	case strictjson.CodeUnknownField:
		return errorf(http.StatusBadRequest, "unknown_field", "unknown field %s", e.Msg)
	case strictjson.CodeTrailing:
		return errorf(http.StatusBadRequest, "invalid_json", "the request body holds more than one JSON value")
	}
	return errorf(http.StatusBadRequest, "invalid_json", "the request body is not valid JSON: %v", e.Err)
}

// typeName names a Go type by the JSON it takes, in the server's words
// (they differ from relay's: a bool is "bool").
func typeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "struct"), strings.HasPrefix(goType, "server."):
		return "an object"
	case strings.HasPrefix(goType, "int"):
		return "an integer"
	}
	return goType
}

func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errorf(http.StatusRequestEntityTooLarge, "too_large", "the request body is over %d bytes", limit)
	}
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "bad_body", "reading the request body: %v", err)
	}
	return b.Bytes(), nil
}
