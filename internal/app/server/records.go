package server

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/canonjson"
	metric "github.com/ctxkit/ctxkit/internal/metrics"
	"github.com/ctxkit/ctxkit/internal/textcut"
	"github.com/ctxkit/ctxkit/relay"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/view"
)

// The gateway's traffic records (routes with record: true) are
// breadcrumbs of the caller's owner: private to the agent that made the
// request (and the owner's curators), of schema ExchangeSchema, tagged
// exchangeTag, expiring after the records TTL. Their llm_hints show the
// exchange's summary, attempts, usage and timings and hide the bodies,
// which GET /breadcrumbs/{id}/full has. Secrets in the bodies and
// excerpts are redacted (relay's built-in patterns), inside ctxkit's
// reasoning envelopes too (redactSealed), before anything is stored.
const (
	ExchangeSchema = "gateway.exchange.v1"
	exchangeTag    = "gateway.exchange"
	routeTag       = "gateway.route:" // + the route's model name, when it fits in a tag
)

// exchangeHints hide the bodies and the seal from the view (and so from
// search, which matches the view's text).
var exchangeHints = json.RawMessage(`{"exclude":["request","response","seal"]}`)

const (
	// recordWriters write records to the store at once. One: SQLite
	// serialises its writes anyway, and a record costs the store about a
	// millisecond of CPU, so one writer leaves the other cores to the
	// requests.
	recordWriters = 1
	// maxQueuedRecordBytes bounds the bodies of the records waiting to
	// be written, besides records.queue bounding their number: a full
	// queue of large bodies would otherwise hold gigabytes.
	maxQueuedRecordBytes = 64 << 20
	// maxRecordBatch and maxRecordBatchBytes bound the records one write
	// to the store takes (one transaction, one commit): the writer takes
	// what is queued when it is ready, so under load a commit serves many
	// records. A batch of maxRecordBatch small records holds the store's
	// one writing connection for some tens of milliseconds, which an
	// ordinary write may have to wait.
	maxRecordBatch      = 128
	maxRecordBatchBytes = 8 << 20
	// recordLinger is how long the writer waits for more records once it
	// has one. A commit costs about a millisecond of CPU however many
	// records it carries, and the pages a batch's rows share (the
	// indexes', the search index's) are written once per commit: at 500
	// requests a second a batch gathered over recordLinger (some fifty
	// records) costs each record a sixth less than batches of a dozen. A
	// record is in the store that much later; a drain does not wait.
	recordLinger = 100 * time.Millisecond
	// recordWriteTimeout bounds one write of records to the store.
	recordWriteTimeout = 10 * time.Second
	// recordContextBytes is what a record's context may take: the
	// store's limit, less room for its canonical form's changes.
	recordContextBytes = store.MaxContextBytes - 8<<10
)

// exchangeRecorder is the server's gateway.Recorder: a bounded queue and writers
// that turn exchanges into breadcrumbs off the request path.
type exchangeRecorder struct {
	s      *Server
	ttl    time.Duration
	queue  chan *gateway.Exchange
	queued atomic.Int64 // bytes of the bodies in the queue
	redact *relay.Redactor
	// shortestSecret is the fewest bytes any of redact's patterns
	// matches: shorter text holds no secret.
	shortestSecret int
	sealKey        []byte

	start   sync.Once
	stop    chan struct{}
	stopped sync.Once
	closed  atomic.Bool
	writers sync.WaitGroup
	ctx     context.Context // of the store's writes; cancelled when a drain runs out of time
	cancel  context.CancelFunc

	written *metric.Counter
	dropped *metric.CounterVec

	// batchMax and linger are maxRecordBatch and recordLinger; keepBatch,
	// when set, keeps a batch in place of keep. The benchmarks change
	// them to take the cost of recording apart (records_variant_test.go).
	batchMax  int
	linger    time.Duration
	keepBatch func([]*gateway.Exchange)
	// between runs after each record the writer makes, nil: nothing.
	between func()

	// mu guards owners: the records each owner has in the queue. An
	// owner may hold at most three quarters of the queue, so one owner's
	// flood cannot crowd out the records of an owner with none queued.
	mu     sync.Mutex
	owners map[string]int
}

// tokenPattern finds a JSON Web Token, such as a ctxkit token, wherever
// it is: the relay's patterns find one only after "Bearer", and a token a
// caller pastes into a prompt must not be kept in its traffic record.
// Both of its first two parts are base64url JSON objects ("eyJ" is
// `{"`).
var tokenPattern = relay.Pattern{Kind: "token", Regex: `\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`}

func newRecorder(s *Server, g *gateway.Gateway) *exchangeRecorder {
	ttl, queue := g.RecordSettings()
	opts := relay.RedactorOptions{Patterns: []relay.Pattern{tokenPattern}}
	red, err := relay.NewRedactor(opts)
	if err != nil {
		panic(err) // the built-in patterns are part of the binary
	}
	// The seal's key is derived from the server's signing key: records
	// are sealed and checked by the same servers, and no one else (an
	// agent writing a look-alike breadcrumb) can seal one.
	var seed []byte
	if len(s.opts.Key) == ed25519.PrivateKeySize {
		seed = s.opts.Key.Seed()
	}
	mac := hmac.New(sha256.New, seed)
	mac.Write([]byte("ctxkit " + ExchangeSchema + " seal"))
	rc := &exchangeRecorder{
		s: s, ttl: ttl, queue: make(chan *gateway.Exchange, queue), redact: red, sealKey: mac.Sum(nil),
		shortestSecret: shortestMatch(append(slices.Clone(relay.BuiltinPatterns), opts.Patterns...)),
		stop:           make(chan struct{}),
		batchMax:       maxRecordBatch, linger: recordLinger,
		written: metric.NewCounter(metric.CounterOpts{
			Name: "ctxkit_gateway_records_written_total", Help: "Gateway traffic records written to the store.",
		}),
		dropped: metric.NewCounterVec(metric.CounterOpts{
			Name: "ctxkit_gateway_records_dropped_total",
			Help: "Gateway traffic records not written, by reason (queue_full, store_error, shutdown, no_caller).",
		}, []string{"reason"}),
	}
	rc.ctx, rc.cancel = context.WithCancel(context.Background())
	for _, r := range []string{"queue_full", "store_error", "shutdown", "no_caller"} {
		rc.dropped.WithLabelValues(r)
	}
	return rc
}

func (rc *exchangeRecorder) collectors() []metric.Collector {
	return []metric.Collector{rc.written, rc.dropped}
}

// Record queues x to be written, or drops and counts it when the queue
// is full: it never waits.
func (rc *exchangeRecorder) Record(_ context.Context, x *gateway.Exchange) {
	switch {
	case x.Caller.Owner == "":
		// Not a request the server authenticated: no owner to keep it for.
		rc.dropped.WithLabelValues("no_caller").Inc()
		return
	case rc.closed.Load():
		rc.dropped.WithLabelValues("shutdown").Inc()
		return
	}
	rc.start.Do(func() {
		rc.writers.Add(recordWriters)
		for range recordWriters {
			go rc.write()
		}
	})
	size := int64(len(x.Request) + len(x.Response))
	if !rc.admit(x.Caller.Owner) {
		rc.dropped.WithLabelValues("owner_share").Inc()
		return
	}
	if rc.queued.Add(size) > maxQueuedRecordBytes {
		rc.queued.Add(-size)
		rc.release(x.Caller.Owner)
		rc.dropped.WithLabelValues("queue_full").Inc()
		return
	}
	select {
	case rc.queue <- x:
	default:
		rc.queued.Add(-size)
		rc.release(x.Caller.Owner)
		rc.dropped.WithLabelValues("queue_full").Inc()
	}
}

// admit counts a record of owner into the queue, unless owner already
// holds three quarters of it. A record is counted out (release) when a
// writer takes it from the queue: the share bounds the queue's slots,
// while the records a writer holds are bounded by their bytes (queued).
func (rc *exchangeRecorder) admit(owner string) bool {
	share := max(1, cap(rc.queue)-cap(rc.queue)/4)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.owners == nil {
		rc.owners = map[string]int{}
	}
	if rc.owners[owner] >= share {
		return false
	}
	rc.owners[owner]++
	return true
}

// release counts a record of owner out of the queue.
func (rc *exchangeRecorder) release(owner string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch n := rc.owners[owner]; {
	case n > 1:
		rc.owners[owner] = n - 1
	default:
		delete(rc.owners, owner) // a nil map, or a record counted in by no Record
	}
}

// write is one writer: it writes queued records, as many at a time as
// are queued (within the batch's bounds), until the exchangeRecorder
// stops, then those still queued.
func (rc *exchangeRecorder) write() {
	defer rc.writers.Done()
	keep := rc.keep
	if rc.keepBatch != nil {
		keep = rc.keepBatch
	}
	batch := make([]*gateway.Exchange, 0, rc.batchMax)
	for {
		select {
		case x := <-rc.queue:
			rc.release(x.Caller.Owner)
			keep(rc.gather(rc.take(append(batch[:0], x))))
		case <-rc.stop:
			for {
				batch = rc.take(batch[:0])
				if len(batch) == 0 {
					return
				}
				keep(batch)
			}
		}
	}
}

// gather adds to batch the records that come within recordLinger, until
// the batch is full or the exchangeRecorder stops.
func (rc *exchangeRecorder) gather(batch []*gateway.Exchange) []*gateway.Exchange {
	var size int
	for _, x := range batch {
		size += len(x.Request) + len(x.Response)
	}
	if len(batch) >= rc.batchMax || size >= maxRecordBatchBytes {
		return batch
	}
	if rc.linger <= 0 {
		return batch
	}
	linger := time.NewTimer(rc.linger)
	defer linger.Stop()
	for len(batch) < rc.batchMax && size < maxRecordBatchBytes {
		select {
		case x := <-rc.queue:
			rc.release(x.Caller.Owner)
			batch = append(batch, x)
			size += len(x.Request) + len(x.Response)
		case <-linger.C:
			return batch
		case <-rc.stop:
			return batch
		}
	}
	return batch
}

// take adds the records queued to batch, without waiting, until the
// batch holds maxRecordBatch records or maxRecordBatchBytes of bodies.
func (rc *exchangeRecorder) take(batch []*gateway.Exchange) []*gateway.Exchange {
	var size int
	for _, x := range batch {
		size += len(x.Request) + len(x.Response)
	}
	for len(batch) < rc.batchMax && size < maxRecordBatchBytes {
		select {
		case x := <-rc.queue:
			rc.release(x.Caller.Owner)
			batch = append(batch, x)
			size += len(x.Request) + len(x.Response)
		default:
			return batch
		}
	}
	return batch
}

// drain stops taking records and writes those queued, until ctx ends;
// the rest are dropped and counted.
func (rc *exchangeRecorder) drain(ctx context.Context) error {
	rc.closed.Store(true)
	rc.stopped.Do(func() { close(rc.stop) })
	done := make(chan struct{})
	go func() { rc.writers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		rc.cancel() // the writes in progress fail and are counted
		<-done
		return fmt.Errorf("gateway records: %w", ctx.Err())
	}
}

// keep writes the records of batch, each a breadcrumb of its caller,
// in one call to the store: one transaction and one commit for them all
// where the store can (store.BatchCreator).
func (rc *exchangeRecorder) keep(batch []*gateway.Exchange) {
	rc.commit(rc.build(batch, rc.between))
}

// build is the breadcrumbs of batch's records, and the records they are
// of; those that cannot be made are counted lost. between, when set,
// runs after each record.
func (rc *exchangeRecorder) build(batch []*gateway.Exchange, between func()) ([]store.Creation, []*gateway.Exchange) {
	cs := make([]store.Creation, 0, len(batch))
	xs := make([]*gateway.Exchange, 0, len(batch))
	for _, x := range batch {
		rc.queued.Add(-int64(len(x.Request) + len(x.Response)))
		if rc.ctx.Err() != nil {
			rc.dropped.WithLabelValues("shutdown").Inc()
			continue
		}
		in, err := rc.breadcrumb(x)
		if err != nil {
			rc.lost(x, err)
			continue
		}
		cs = append(cs, store.Creation{Actor: store.Actor{OwnerID: x.Caller.Owner, AgentID: x.Caller.Agent}, In: in})
		xs = append(xs, x)
		if between != nil {
			between()
		}
	}
	return cs, xs
}

// commit writes cs, the breadcrumbs of xs, in one call to the store.
// Records are flushed to disk by their commit like every other write
// (synchronous FULL on SQLite): written without it (synchronous NORMAL
// for their transaction), they added as much to the requests' latency
// in BenchmarkRecordOverhead, so a power failure losing the last ones
// would buy nothing.
func (rc *exchangeRecorder) commit(cs []store.Creation, xs []*gateway.Exchange) {
	if len(cs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(rc.ctx, recordWriteTimeout)
	out, err := store.CreateBatch(ctx, rc.s.opts.Store, cs)
	cancel()
	for i, x := range xs {
		e := err
		if e == nil {
			e = out[i].Err
		}
		if e != nil {
			rc.lost(x, e)
			continue
		}
		rc.written.Inc()
	}
}

// lost counts and logs a record not written.
func (rc *exchangeRecorder) lost(x *gateway.Exchange, err error) {
	reason := "store_error"
	if rc.ctx.Err() != nil {
		reason = "shutdown"
	}
	rc.dropped.WithLabelValues(reason).Inc()
	rc.s.opts.Logger.Warn("gateway record not written", "owner", x.Caller.Owner, "agent", x.Caller.Agent, "route", x.Route, "err", err.Error())
}

// exchangeRecord is the context of a traffic record. Its fields, and
// those of the types in it, are in the order of their JSON names, so
// that encoding it with HTML escaping off writes the store's canonical
// form (keys sorted) at once: the seal is taken over that form, and
// the writer spends no decoding and re-encoding on it.
type exchangeRecord struct {
	Attempts          []attemptRecord `json:"attempts"`
	CostUSD           *float64        `json:"cost_usd,omitempty"` // absent: no price (see Unpriced)
	Dialect           string          `json:"dialect"`
	ErrorClass        string          `json:"error_class,omitempty"`
	FirstByte         float64         `json:"first_byte_ms"` // 0: nothing was written
	Request           json.RawMessage `json:"request"`
	RequestBytes      int64           `json:"request_bytes"`
	RequestTruncated  bool            `json:"request_truncated,omitempty"`
	Response          json.RawMessage `json:"response"`
	ResponseBytes     int64           `json:"response_bytes"`
	ResponseTruncated bool            `json:"response_truncated,omitempty"`
	Route             string          `json:"route"`
	Seal              string          `json:"seal,omitempty"` // see seal
	Started           time.Time       `json:"started"`
	Status            int             `json:"status"` // 0: the client went away before any answer
	Stream            bool            `json:"stream"`
	Summary           exchangeSummary `json:"summary"`
	Total             float64         `json:"total_ms"`
	Unpriced          bool            `json:"unpriced,omitempty"` // the exchange used tokens no price was put on
	Usage             *usageRecord    `json:"usage,omitempty"`
}

type attemptRecord struct {
	ErrorClass string  `json:"error_class,omitempty"`
	KeyID      string  `json:"key_id,omitempty"`
	Latency    float64 `json:"latency_ms"`
	Model      string  `json:"model"`
	Provider   string  `json:"provider"`
	Status     int     `json:"status"`
}

// exchangeSummary is what a reader of the view needs first.
type exchangeSummary struct {
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	FirstMessage string   `json:"first_message,omitempty"`
	LastMessage  string   `json:"last_message,omitempty"`
	Model        string   `json:"model"` // the upstream model of the last attempt; the route when none was made
	Provider     string   `json:"provider,omitempty"`
	Status       int      `json:"status"`
	Tokens       int64    `json:"tokens"` // input and output
}

// usageRecord is chat.Usage as a record keeps it: its JSON names, in
// their order.
type usageRecord struct {
	CacheRead  int64    `json:"cache_read_tokens,omitempty"`
	CacheWrite int64    `json:"cache_write_tokens,omitempty"`
	Cost       *float64 `json:"cost,omitempty"`
	Input      int64    `json:"input_tokens"`
	Output     int64    `json:"output_tokens"`
	Reasoning  int64    `json:"reasoning_tokens,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// breadcrumb is the record of x, redacted, bounded and sealed.
func (rc *exchangeRecorder) breadcrumb(x *gateway.Exchange) (store.Breadcrumb, error) {
	// The names come from the configuration and the client: kept as the
	// store keeps text. The bodies and excerpts are made so below.
	rec := exchangeRecord{
		Dialect: storable(x.Dialect), Route: storable(x.Route), Stream: x.Stream, Started: x.Started.UTC(), Status: x.Status,
		ErrorClass: storable(x.ErrorClass), Attempts: []attemptRecord{}, FirstByte: ms(x.FirstByte), Total: ms(x.Total),
		RequestBytes: x.RequestSize, ResponseBytes: x.ResponseSize,
	}
	if u := x.Usage; u != nil {
		rec.Usage = &usageRecord{CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Cost: u.Cost, Input: u.Input, Output: u.Output, Reasoning: u.Reasoning}
	}
	cost := x.CostUSD
	if cost == nil && x.Usage != nil {
		cost = x.Usage.Cost
	}
	switch {
	case cost != nil:
		c := *cost
		rec.CostUSD = &c
	case x.Usage != nil:
		// Tokens were used and no price was put on them: say so, as
		// a cost of 0 would say something else.
		rec.Unpriced = true
	}
	for _, a := range x.Attempts {
		rec.Attempts = append(rec.Attempts, attemptRecord{Provider: storable(a.Provider), Model: storable(a.Model), KeyID: storable(a.KeyID),
			Status: a.Status, Latency: ms(a.Latency), ErrorClass: storable(a.ErrorClass)})
	}
	rec.Summary = exchangeSummary{Model: rec.Route, Status: x.Status, CostUSD: rec.CostUSD,
		FirstMessage: rc.excerpt(x.FirstMessage), LastMessage: rc.excerpt(x.LastMessage)}
	if n := len(x.Attempts); n > 0 {
		rec.Summary.Model, rec.Summary.Provider = rec.Attempts[n-1].Model, rec.Attempts[n-1].Provider
	}
	if x.Usage != nil {
		rec.Summary.Tokens = x.Usage.Input + x.Usage.Output
	}
	limit := gateway.RecordedBodyBytes
	var ctx []byte
	for {
		rec.Request, rec.RequestTruncated = rc.body(x.Request, x.RequestSize, limit)
		rec.Response, rec.ResponseTruncated = rc.body(x.Response, x.ResponseSize, limit)
		var err error
		if ctx, err = rc.seal(x.Caller, &rec); err != nil {
			return store.Breadcrumb{}, err
		}
		if len(ctx) <= recordContextBytes {
			break
		}
		if limit < 1<<10 {
			return store.Breadcrumb{}, errors.New("the record is larger than the store keeps")
		}
		// Escaping made the bodies larger than the store keeps: keep
		// less of each.
		limit /= 2
	}
	route := storable(x.Route)
	title := textcut.Prefix(fmt.Sprintf("gateway exchange %s %d", route, x.Status), store.MaxTitleBytes)
	tags := []string{exchangeTag}
	if t := routeTag + route; len(t) <= store.MaxTagBytes {
		tags = append(tags, t)
	}
	expires := rc.s.opts.Now().Add(rc.ttl)
	return store.Breadcrumb{
		Title: title, Context: ctx, Tags: tags, SchemaName: ExchangeSchema, LLMHints: exchangeHints,
		Visibility: store.Private, Sensitivity: store.PII, ExpiresAt: &expires, SearchText: searchText(&rec),
	}, nil
}

// searchText is the text search matches in a record: its view's, which
// exchangeHints make the record less its bodies and seal. It is written
// from rec's fields as the store writes a view's text (keys in order,
// each followed by its value; numbers as the record's JSON has them),
// rather than left to the store, which would decode the whole context,
// bodies and all, and compile the hints only to drop them, or encoded
// and decoded again here. The store reads it into the same words (""
// has it derive them); TestRecordSearchText and FuzzExchangeRecord hold
// the two to each other.
func searchText(rec *exchangeRecord) string {
	w := viewTextWriter{b: make([]byte, 0, 512)}
	w.key("attempts")
	for _, a := range rec.Attempts {
		w.str("error_class", a.ErrorClass, true)
		w.str("key_id", a.KeyID, true)
		w.float("latency_ms", &a.Latency)
		w.str("model", a.Model, false)
		w.str("provider", a.Provider, false)
		w.int("status", int64(a.Status), false)
	}
	w.float("cost_usd", rec.CostUSD)
	w.str("dialect", rec.Dialect, false)
	w.str("error_class", rec.ErrorClass, true)
	w.float("first_byte_ms", &rec.FirstByte)
	w.int("request_bytes", rec.RequestBytes, false)
	w.bool("request_truncated", rec.RequestTruncated, true)
	w.int("response_bytes", rec.ResponseBytes, false)
	w.bool("response_truncated", rec.ResponseTruncated, true)
	w.str("route", rec.Route, false)
	w.str("started", rec.Started.Format(time.RFC3339Nano), false)
	w.int("status", int64(rec.Status), false)
	w.bool("stream", rec.Stream, false)
	w.key("summary")
	sum := &rec.Summary
	w.float("cost_usd", sum.CostUSD)
	w.str("first_message", sum.FirstMessage, true)
	w.str("last_message", sum.LastMessage, true)
	w.str("model", sum.Model, false)
	w.str("provider", sum.Provider, true)
	w.int("status", int64(sum.Status), false)
	w.int("tokens", sum.Tokens, false)
	w.float("total_ms", &rec.Total)
	w.bool("unpriced", rec.Unpriced, true)
	if u := rec.Usage; u != nil {
		w.key("usage")
		w.int("cache_read_tokens", u.CacheRead, true)
		w.int("cache_write_tokens", u.CacheWrite, true)
		w.float("cost", u.Cost)
		w.int("input_tokens", u.Input, false)
		w.int("output_tokens", u.Output, false)
		w.int("reasoning_tokens", u.Reasoning, true)
	}
	if w.bad {
		return "" // a value JSON cannot hold: the store derives its own
	}
	return string(w.b)
}

// viewTextWriter writes a view's text as the store does: each key, then
// each scalar value, on a line of its own. Each method writes one field
// of the record's JSON form, none when omitempty leaves it out.
type viewTextWriter struct {
	b   []byte
	bad bool // a value JSON cannot hold was met
}

func (w *viewTextWriter) key(k string) {
	w.b = append(append(w.b, k...), '\n')
}

func (w *viewTextWriter) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.key(k)
	w.b = append(append(w.b, v...), '\n')
}

func (w *viewTextWriter) int(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.b = append(strconv.AppendInt(w.b, v, 10), '\n')
}

func (w *viewTextWriter) bool(k string, v, omitEmpty bool) {
	if omitEmpty && !v {
		return
	}
	w.key(k)
	w.b = append(strconv.AppendBool(w.b, v), '\n')
}

// float writes *v as encoding/json does (a nil v is an omitted field).
func (w *viewTextWriter) float(k string, v *float64) {
	if v == nil {
		return
	}
	f := *v
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.bad = true
		return
	}
	w.key(k)
	w.b, _ = canonjson.AppendFloat(w.b, f)
	w.b = append(w.b, '\n')
}

// body is a recorded body: the JSON value it is, its strings redacted,
// when it is whole, JSON and within limit; else its text, redacted and
// cut to limit bytes. truncated says the record holds less than the
// body.
func (rc *exchangeRecorder) body(b []byte, size int64, limit int) (json.RawMessage, bool) {
	if len(b) == 0 {
		return json.RawMessage("null"), size > 0
	}
	whole := int64(len(b)) >= size
	if whole && len(b) <= limit {
		if doc, err := view.DecodeJSON(b); err == nil {
			red := rc.redactJSON(doc)
			if out, err := canonjson.Append(make([]byte, 0, len(b)+len(b)/8), red); err == nil {
				return out, false
			}
		}
	}
	// Redacted before it is cut: a secret across the cut is found
	// whole (the gateway kept a little more than the limit).
	// The envelopes first: a pattern the redactor finds in an
	// envelope's base64 would leave it unopenable, and its thinking
	// kept.
	text := rc.redactSealed(strings.ToValidUTF8(string(b), "\uFFFD"), false, !whole, 0)
	text, _ = rc.redact.Redact(text)
	text = strings.ReplaceAll(text, "\x00", "\uFFFD")
	truncated := !whole || len(text) > limit
	if len(text) > limit {
		text = textcut.Prefix(text, limit)
	}
	return canonjson.AppendString(make([]byte, 0, len(text)+2), text), truncated
}

// redactJSON is v with every string (keys too) redacted and its NUL
// characters replaced (the store keeps none). An object is changed in
// place, and copied only when a key changes.
func (rc *exchangeRecorder) redactJSON(v any) any {
	switch t := v.(type) {
	case string:
		return rc.redactString(t)
	case []any:
		for i := range t {
			t[i] = rc.redactJSON(t[i])
		}
	case map[string]any:
		rekey := false
		for k, e := range t {
			rekey = rekey || rc.redactString(k) != k
			t[k] = rc.redactJSON(e)
		}
		if !rekey {
			return t
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[rc.redactString(k)] = e
		}
		return out
	}
	return v
}

// redactString is s redacted, the envelopes in it too (redactSealed),
// its NUL characters replaced. A string
// shorter than any secret the redactor finds (most keys and many values
// of a body: "role", "user", "model") is not searched.
func (rc *exchangeRecorder) redactString(s string) string {
	if len(s) < rc.shortestSecret && strings.IndexByte(s, 0) < 0 {
		return s
	}
	s, _ = rc.redact.Redact(rc.redactSealed(s, true, false, 0))
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// shortestMatch is the fewest bytes any of pats matches.
func shortestMatch(pats []relay.Pattern) int {
	n := -1
	for _, p := range pats {
		re, err := syntax.Parse(p.Regex, syntax.Perl)
		if err != nil {
			return 0 // not a pattern the redactor takes: search everything
		}
		if m := minBytes(re.Simplify()); n < 0 || m < n {
			n = m
		}
	}
	return max(n, 0)
}

// minBytes is the fewest bytes re matches: a character takes one at
// least, an empty-width assertion none.
func minBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minBytes(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minBytes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minBytes(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if m := minBytes(s); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // empty-width assertions, *, ?, the empty string
}

// excerpt is s redacted and cut to gateway.ExcerptBytes.
func (rc *exchangeRecorder) excerpt(s string) string {
	s = rc.redactString(strings.ToValidUTF8(s, "\uFFFD"))
	return textcut.Clip(s, gateway.ExcerptBytes, "…")
}

// storable is s as the store keeps text: valid UTF-8 without NUL.
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// seal is rec's context in the store's canonical form with a seal: an
// HMAC of the rest and of the owner and agent the record is written for,
// which only the server can make. GET /gateway/usage counts sealed
// records only, each seal once, so an agent cannot add to its owner's
// usage by writing look-alike breadcrumbs or copies of real ones (its
// own, or, for a curator, another agent's), nor change a record's
// figures. rec's text must be storable (valid UTF-8 without NUL) and
// its bodies canonical already.
func (rc *exchangeRecorder) seal(c gateway.Caller, rec *exchangeRecord) ([]byte, error) {
	rec.Seal = ""
	canon, err := canonjson.Marshal(rec)
	if err != nil {
		return nil, err
	}
	rec.Seal = rc.sealOf(c.Owner, c.Agent, canon)
	// The seal's field goes in where its name sorts, before "started":
	// encoding the record, bodies and all, a second time would cost as
	// much as the first. The last `,"started":` of canon is the record's
	// own: no field after it holds one, and in a string a quote is
	// escaped.
	i := bytes.LastIndex(canon, []byte(`,"started":`))
	if i < 0 {
		return canonjson.Marshal(rec)
	}
	out := make([]byte, 0, len(canon)+len(`,"seal":""`)+len(rec.Seal))
	out = append(out, canon[:i]...)
	out = append(out, `,"seal":"`...)
	out = append(out, rec.Seal...)
	out = append(out, '"')
	return append(out, canon[i:]...), nil
}

// sealOf is the seal of canon, a record written for owner's agent.
func (rc *exchangeRecorder) sealOf(owner, agent string, canon []byte) string {
	mac := hmac.New(sha256.New, rc.sealKey)
	// Each name with its length: no two pairs of names write the same
	// bytes.
	for _, name := range []string{owner, agent} {
		mac.Write(binary.BigEndian.AppendUint32(nil, uint32(len(name))))
		mac.Write([]byte(name))
	}
	mac.Write(canon)
	return hex.EncodeToString(mac.Sum(nil))
}

// open reads the context of b, a stored record, and whether its seal
// holds for b's owner and the agent that wrote it; seal is the seal.
func (rc *exchangeRecorder) open(b *store.Breadcrumb) (rec exchangeRecord, seal string, ok bool) {
	ctx := b.Context
	doc, err := view.DecodeJSON(ctx)
	if err != nil {
		return rec, "", false
	}
	m, isMap := doc.(map[string]any)
	if !isMap {
		return rec, "", false
	}
	seal, _ = m["seal"].(string)
	delete(m, "seal")
	canon, err := canonjson.Marshal(m)
	if err != nil || !hmac.Equal([]byte(seal), []byte(rc.sealOf(b.OwnerID, b.CreatedBy, canon))) {
		return rec, "", false
	}
	return rec, seal, json.Unmarshal(canon, &rec) == nil
}

// Bounds of GET /gateway/usage: the range it sums, and the records one
// request reads (newest first, in pages, each with its context).
const (
	defaultUsageRange = 24 * time.Hour
	maxUsageRange     = 31 * 24 * time.Hour
	usagePageSize     = 50
	maxUsageScan      = 20_000
)

// usageTotals sum exchanges.
type usageTotals struct {
	Requests int64       `json:"requests"`
	Errors   int64       `json:"errors"` // answered with a status of 400 or more, or not at all
	Tokens   usageTokens `json:"tokens"`
	CostUSD  float64     `json:"cost_usd"`
	// UnpricedRequests are the exchanges that used tokens no price was
	// put on: their cost is not in CostUSD, which is a lower bound when
	// there are any.
	UnpricedRequests int64 `json:"unpriced_requests"`
}

type usageTokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	Reasoning  int64 `json:"reasoning"`
}

func (t *usageTotals) add(rec *exchangeRecord) {
	t.Requests++
	if rec.Status == 0 || rec.Status >= 400 {
		t.Errors++
	}
	if u := rec.Usage; u != nil {
		t.Tokens.Input += u.Input
		t.Tokens.Output += u.Output
		t.Tokens.CacheRead += u.CacheRead
		t.Tokens.CacheWrite += u.CacheWrite
		t.Tokens.Reasoning += u.Reasoning
		if rec.CostUSD == nil {
			t.UnpricedRequests++
		}
	}
	if rec.CostUSD != nil {
		t.CostUSD += *rec.CostUSD
	}
}

type usageGroup struct {
	Key string `json:"key"`
	usageTotals
}

// usageReport is GET /gateway/usage's answer.
type usageReport struct {
	From    time.Time    `json:"from"`
	To      time.Time    `json:"to"`
	GroupBy string       `json:"group_by"`
	Groups  []usageGroup `json:"groups"` // largest cost first, then most requests, then by key
	Total   usageTotals  `json:"total"`
	// Scanned is how many records were read; Complete is false when the
	// scan bound stopped the reading before from.
	Scanned  int  `json:"scanned"`
	Complete bool `json:"complete"`
}

// gatewayUsage serves GET /gateway/usage: the gateway's traffic records
// of the caller's owner that the caller may read (an agent its own; a
// curator every agent's), summed over [from, to) by model, agent or
// provider.
func (s *Server) gatewayUsage(w http.ResponseWriter, r *http.Request, p Principal) error {
	q := r.URL.Query()
	for name := range q {
		if name != "from" && name != "to" && name != "group_by" {
			return errorAt(http.StatusBadRequest, store.CodeInvalid, name, "not a parameter of /gateway/usage (from, to, group_by)")
		}
	}
	at := func(name string, def time.Time) (time.Time, error) {
		v := q.Get(name)
		if v == "" {
			return def, nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, errorAt(http.StatusBadRequest, store.CodeInvalid, name, "%q is not an RFC 3339 time such as 2026-11-27T08:00:00Z", textcut.Prefix(v, 64))
		}
		return t.UTC(), nil
	}
	to, err := at("to", s.opts.Now().UTC())
	if err != nil {
		return err
	}
	from, err := at("from", to.Add(-defaultUsageRange))
	if err != nil {
		return err
	}
	if !from.Before(to) {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "from", "must be before to (%s)", to.Format(time.RFC3339))
	}
	if to.Sub(from) > maxUsageRange {
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "from", "the range is longer than %d days; ask for a shorter one", int(maxUsageRange/(24*time.Hour)))
	}
	by := q.Get("group_by")
	switch by {
	case "":
		by = "model"
	case "model", "agent", "provider":
	default:
		return errorAt(http.StatusBadRequest, store.CodeInvalid, "group_by", "%q is not one of model, agent, provider", textcut.Prefix(by, 64))
	}
	rep := usageReport{From: from, To: to, GroupBy: by, Groups: []usageGroup{}, Complete: true}
	rc := s.records
	if rc == nil {
		writeJSON(w, http.StatusOK, rep)
		return nil
	}
	groups := map[string]*usageTotals{}
	counted := map[string]bool{} // the seals of the records summed (at most maxUsageScan)
	a := actor(p)
	query := store.Query{SchemaName: ExchangeSchema, Tags: []string{exchangeTag}, Limit: usagePageSize}
scan:
	for {
		page, err := s.opts.Store.List(r.Context(), a, query)
		if err != nil {
			return err
		}
		for _, b := range page.Items {
			if rep.Scanned == maxUsageScan {
				rep.Complete = false
				break scan
			}
			rep.Scanned++
			if b.CreatedAt.Before(from) {
				break scan // the list is newest first: the rest are older still
			}
			// Only the server's own records: private, sealed.
			if b.Visibility != store.Private {
				continue
			}
			rec, seal, ok := rc.open(&b)
			if !ok || rec.Started.Before(from) || !rec.Started.Before(to) || counted[seal] {
				continue
			}
			// A copy of a record holds its seal: one exchange counts
			// once, whichever breadcrumb holds it.
			counted[seal] = true
			key := rec.Summary.Model
			switch by {
			case "agent":
				key = b.CreatedBy
			case "provider":
				key = rec.Summary.Provider
			}
			t := groups[key]
			if t == nil {
				t = &usageTotals{}
				groups[key] = t
			}
			t.add(&rec)
			rep.Total.add(&rec)
		}
		if page.NextCursor == "" {
			break
		}
		query.Cursor = page.NextCursor
	}
	for k, t := range groups {
		rep.Groups = append(rep.Groups, usageGroup{Key: k, usageTotals: *t})
	}
	sort.Slice(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		if a.Requests != b.Requests {
			return a.Requests > b.Requests
		}
		return a.Key < b.Key
	})
	writeJSON(w, http.StatusOK, rep)
	return nil
}
