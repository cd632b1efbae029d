package gateway

import (
	"context"
	"time"

	"github.com/ctxkit/ctxkit/chat"
)

// Caller is who sent a gateway request: the owner and agent of the
// token, set by the server that authenticated it.
type Caller struct {
	Owner string
	Agent string
}

type callerKey struct{}

// WithCaller returns ctx carrying c, the caller of the request it serves.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf is the caller ctx carries (zero when none was set).
func callerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Exchange is what the gateway saw of one request: what it was asked,
// every upstream attempt, and what it answered.
type Exchange struct {
	Caller   Caller
	Dialect  string // the client's: anthropic, openai, responses, gemini
	Route    string // the model name the client sent
	Stream   bool
	Started  time.Time
	Attempts []Attempt
	// Status is the HTTP status the client got; ErrorClass, when the
	// exchange failed, what kind of failure it was.
	Status     int
	ErrorClass string
	Usage      *chat.Usage
	// CostUSD is what the exchange cost in US dollars; nil when it has
	// no price (the model has none, or there was no usage to price),
	// which is not a cost of 0.
	CostUSD   *float64
	FirstByte time.Duration // from the request to the first byte written to the client
	Total     time.Duration
	Request   []byte // the client's request body
	Response  []byte // the answer in the client's dialect (a stream as one response)
	// RequestSize and ResponseSize are the bodies' whole sizes: larger
	// than Request and Response when the gateway kept only their start
	// (RecordedBodyBytes and a little more).
	RequestSize, ResponseSize int64
	// FirstMessage and LastMessage are the start of the text of the
	// conversation's first message and of its last one (the answer when
	// there is one), for a summary.
	FirstMessage, LastMessage string
}

// Attempt is one request sent upstream for an exchange.
type Attempt struct {
	Provider   string
	Model      string
	KeyID      string
	Status     int // the upstream's HTTP status; 0: none came
	Latency    time.Duration
	ErrorClass string // connect, timeout, rate_limit, server, client, ...; "": it succeeded
}

// Recorder keeps exchanges. Record must not block: the request it is
// called for is waiting.
type Recorder interface {
	Record(ctx context.Context, x *Exchange)
}

// SetRecorder sets where the exchanges of routes that keep records go.
func (g *Gateway) SetRecorder(r Recorder) { g.recorder = r }
