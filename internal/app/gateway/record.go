package gateway

import (
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/textcut"
	"github.com/ctxkit/ctxkit/wire"
)

// Traffic records: a route with record: true hands every exchange it
// serves, bodies and all, to the gateway's Recorder. The gateway only
// notes what passes (status, times, the bodies' start, usage); the
// recorder does the costly work (redaction, encoding, the store's write)
// off the request path.

// RecordedBodyBytes bounds each body a traffic record keeps: the store
// holds a record's context within 1 MiB, and two bodies of this size
// leave room for the rest of the record and for JSON escaping. A longer
// body is kept cut, and the record says so.
const RecordedBodyBytes = 384 << 10

// recordSlack is what the gateway keeps of a body past RecordedBodyBytes:
// a recorder redacts before it cuts, so that a secret the cut would
// split is still found whole.
const recordSlack = 8 << 10

// ExcerptBytes bounds a record's first and last message excerpts after
// redaction; the gateway keeps excerptSlack more, for the same reason as
// recordSlack.
const (
	ExcerptBytes = 200
	excerptSlack = 200
)

// Defaults of the records settings.
const (
	DefaultRecordTTL   = 7 * 24 * time.Hour
	DefaultRecordQueue = 1024
)

// Bounds of the records settings.
const (
	minRecordTTL   = time.Minute
	maxRecordTTL   = 10 * 365 * 24 * time.Hour
	maxRecordQueue = 1 << 20
)

// RecordSettings are the records settings with their defaults filled in:
// how long a record is kept and how many may wait to be written.
func (g *Gateway) RecordSettings() (ttl time.Duration, queue int) {
	ttl, queue = time.Duration(g.cfg.Records.TTL), g.cfg.Records.Queue
	if ttl <= 0 {
		ttl = DefaultRecordTTL
	}
	if queue <= 0 {
		queue = DefaultRecordQueue
	}
	return ttl, queue
}

// checkRecords validates the records settings.
func (c *Config) checkRecords() error {
	if ttl := time.Duration(c.Records.TTL); ttl != 0 && (ttl < minRecordTTL || ttl > maxRecordTTL) {
		return fmt.Errorf("records.ttl: %v is not between %v and %v (default %v)", ttl, minRecordTTL, maxRecordTTL, DefaultRecordTTL)
	}
	if q := c.Records.Queue; q < 0 || q > maxRecordQueue {
		return fmt.Errorf("records.queue: %d is not between 1 and %d (0 takes the default, %d)", q, maxRecordQueue, DefaultRecordQueue)
	}
	return nil
}

// recordingRoutes are the client model names whose exchanges are
// recorded.
func recordingRoutes(cfg *Config) map[string]bool {
	m := map[string]bool{}
	for _, r := range cfg.Routes {
		if r.Record && r.Model != "" {
			m[r.Model] = true
		}
	}
	return m
}

// recordWriter is the client's ResponseWriter while the gateway answers a
// request of a gateway with recording routes: it notes the status, when
// the first byte went out and the start of the body.
type recordWriter struct {
	http.ResponseWriter
	d       Dialect
	started time.Time // monotonic, for the durations
	x       *Exchange // nil: the request's route does not record

	status    int
	firstByte time.Duration
	body      []byte // the start of what was written
	size      int64  // all that was written
	teeing    bool   // a stream: the response is collected from its chunks, not its bytes
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// write deadlines).
func (w *recordWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recordWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.x != nil && len(p) > 0 {
		if w.firstByte == 0 {
			w.firstByte = max(time.Since(w.started), 1)
		}
		if !w.teeing {
			w.size += int64(len(p))
			if room := RecordedBodyBytes + recordSlack - len(w.body); room > 0 {
				w.body = append(w.body, p[:min(room, len(p))]...)
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

// watch wraps w for a request of dialect d when any route records; done
// hands the exchange, if its route records, to the recorder once the
// answer is written.
func (g *Gateway) watch(w http.ResponseWriter, r *http.Request, d Dialect) (http.ResponseWriter, func()) {
	if len(g.recording) == 0 || g.recorder == nil {
		return w, func() {}
	}
	rw := &recordWriter{ResponseWriter: w, d: d, started: time.Now()}
	return rw, func() { g.finish(rw, r) }
}

// recordStart makes x, the exchange of req (whose raw body is body),
// one to record when its route records.
func recordStart(w http.ResponseWriter, rt *route, x *Exchange, req *chat.Request, body []byte) {
	rw, ok := w.(*recordWriter)
	if !ok || !rt.record {
		return
	}
	// From when the request came in, not when its route was found.
	x.Started = x.Started.Add(-time.Since(rw.started))
	x.RequestSize = int64(len(body))
	x.Request = body
	if len(body) > RecordedBodyBytes+recordSlack {
		// A copy: the record must not hold the whole body (up to
		// MaxBodyBytes) while it waits to be written.
		x.Request = append([]byte(nil), body[:RecordedBodyBytes+recordSlack]...)
	}
	if n := len(req.Messages); n > 0 {
		x.FirstMessage = excerpt(messageText(req.Messages[0].Content))
		x.LastMessage = excerpt(messageText(req.Messages[n-1].Content))
	}
	rw.x = x
}

// statusClass is the error class of a failure status the client got
// where no attempt's outcome says more (see try): statusOutcome's rule,
// with a 401 the only refusal a status alone shows.
func statusClass(status int) string {
	return statusOutcome(status, status == http.StatusUnauthorized)
}

// recorded notes res, the whole response a non-streaming client gets.
func recorded(w http.ResponseWriter, res *chat.Response) {
	rw, ok := w.(*recordWriter)
	if !ok || rw.x == nil {
		return
	}
	rw.x.Usage = usageOf(res)
	if t := answerText(res); t != "" {
		rw.x.LastMessage = t
	}
}

// maxRecordedChunks bounds the events a recorded stream keeps besides
// its usage and end: events without text (a tool call's start, an empty
// delta) cost memory the text bound does not count.
const maxRecordedChunks = 16 << 10

// recordStream passes chunks on to a streaming client and, when the
// exchange is recorded, keeps them (their text up to
// RecordedBodyBytes) to record the stream as the one response of the
// client's dialect it amounts to.
func recordStream(w http.ResponseWriter, out wire.Outgoing, chunks iter.Seq2[chat.Chunk, error]) iter.Seq2[chat.Chunk, error] {
	rw, ok := w.(*recordWriter)
	if !ok || rw.x == nil {
		return chunks
	}
	rw.teeing = true
	return func(yield func(chat.Chunk, error) bool) {
		var (
			seen    []chat.Chunk
			kept    int   // the chunks kept, those of a text run each counted
			size    int64 // of the chunks' text, kept or not
			failure error
			usageAt = -1 // where in seen the last usage is
			// Text chunks kept one after another are kept as one, the
			// first of them in seen, its text the run's: a stream is
			// mostly text deltas, and a chunk each cost the record more
			// than their text. chat.Collect makes one text block of them
			// either way.
			run   []byte
			runAt = -1 // where in seen the run's chunk is; -1: no run
		)
		endRun := func() {
			if runAt >= 0 {
				seen[runAt].Text = string(run)
				run, runAt = run[:0], -1
			}
		}
		defer func() {
			endRun()
			rw.collected(seen, size, failure, out)
		}()
		for c, err := range chunks {
			if err != nil {
				failure = err
				yield(c, err)
				return
			}
			n := int64(len(c.Text) + len(c.Arguments) + len(c.Signature) + len(c.Redacted))
			size += n
			// What ends or counts a response is always kept; text past the
			// bound is not, nor events past maxRecordedChunks. Usage is a
			// running total: the last one replaces the one before, so that
			// a provider that repeats it in every event (Gemini) keeps one.
			switch {
			case c.Type == chat.ChunkUsage && usageAt >= 0:
				seen[usageAt] = c
			case c.Type == chat.ChunkUsage:
				endRun()
				usageAt = len(seen)
				seen = append(seen, c)
				kept++
			case c.Type == chat.ChunkStop || c.Type == chat.ChunkError ||
				size <= RecordedBodyBytes && kept < maxRecordedChunks:
				kept++
				if c.Type != chat.ChunkText {
					endRun()
					seen = append(seen, c)
					break
				}
				if runAt < 0 {
					runAt = len(seen)
					seen = append(seen, chat.Chunk{Type: chat.ChunkText})
				}
				run = append(run, c.Text...)
			}
			if !yield(c, nil) {
				failure = errClientGone
				return
			}
		}
	}
}

// collected makes the kept chunks of a stream the recorded response.
func (w *recordWriter) collected(seen []chat.Chunk, size int64, failure error, out wire.Outgoing) {
	res, err := chat.Collect(func(yield func(chat.Chunk, error) bool) {
		for _, c := range seen {
			if !yield(c, nil) {
				return
			}
		}
	})
	x := w.x
	if failure != nil && res.Error == nil {
		res.Error = &chat.StreamError{Type: "api_error", Message: failure.Error()}
	}
	if res.Error != nil {
		x.ErrorClass = "stream_error"
	}
	if err != nil && res.Error == nil {
		// The kept chunks do not make a response (a tool call cut by
		// the bound): the record says so in place of its end.
		res.Error = &chat.StreamError{Type: "too_large", Message: "the response is larger than a record keeps"}
	}
	x.Usage = usageOf(&res)
	if t := answerText(&res); t != "" {
		x.LastMessage = t
	}
	body, err := w.d.row().Response(res, out)
	if err != nil && res.Error != nil {
		// A dialect whose responses carry no error: the part that came,
		// the failure in the record's error class.
		res.Error = nil
		body, err = w.d.row().Response(res, out)
	}
	if err != nil {
		return
	}
	x.Response, x.ResponseSize = body, int64(len(body))
	if size > RecordedBodyBytes {
		x.ResponseSize += size - RecordedBodyBytes // what was left out
	}
}

// finish completes the exchange of rw, if its route records, and hands
// it to the recorder.
func (g *Gateway) finish(rw *recordWriter, r *http.Request) {
	x := rw.x
	if x == nil {
		return
	}
	x.Total, x.FirstByte, x.Status = time.Since(rw.started), rw.firstByte, rw.status
	if x.Response == nil {
		x.Response, x.ResponseSize = rw.body, rw.size
	}
	if x.Usage != nil && x.Usage.Cost != nil {
		x.CostUSD = x.Usage.Cost
	}
	switch {
	case x.Status == 0 && r.Context().Err() != nil:
		x.ErrorClass = "canceled"
	case x.Status >= 400 && x.ErrorClass == "":
		// A failure of the attempts has its class already, the last
		// attempt's: the record and its attempts agree.
		x.ErrorClass = statusClass(x.Status)
	case x.ErrorClass == "stream_error" && r.Context().Err() != nil:
		x.ErrorClass = "canceled"
	}
	g.recorder.Record(r.Context(), x)
}

// usageOf is res's usage, nil when it reports none.
func usageOf(res *chat.Response) *chat.Usage {
	if res.Usage == (chat.Usage{}) {
		return nil
	}
	u := res.Usage
	return &u
}

// messageText is the text of a message's content: its text blocks, and a
// tool call or result named.
func messageText(c chat.Content) string {
	if c.IsString || len(c.Blocks) == 0 {
		return c.Text
	}
	var b strings.Builder
	for _, bl := range c.Blocks {
		if b.Len() >= ExcerptBytes+excerptSlack {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		switch {
		case bl.Text != "":
			b.WriteString(bl.Text)
		case bl.Type == "tool_use":
			b.WriteString("[tool_use " + bl.Name + "]")
		case bl.Content != nil:
			b.WriteString(messageText(*bl.Content))
		default:
			b.WriteString("[" + bl.Type + "]")
		}
	}
	return b.String()
}

// answerText is the text of a response, for its excerpt.
func answerText(res *chat.Response) string {
	return excerpt(messageText(chat.Content{Blocks: res.Content}))
}

// excerpt is the start of s that a summary shows, with room for the
// recorder's redaction, cut at a character boundary. It is a copy: a
// slice would keep the whole of s (a message of megabytes, uncounted by
// the recorder's queue bound) while the record waits to be written.
func excerpt(s string) string {
	return strings.Clone(textcut.Prefix(s, ExcerptBytes+excerptSlack))
}
