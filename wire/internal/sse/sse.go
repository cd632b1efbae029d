// Package sse reads and writes Server-Sent Events, the framing most model
// providers stream in: "event:", "data:", "id:" and "retry:" fields, events
// ended by a blank line, comment lines starting with ":", LF, CRLF or CR
// line ends. Reading is bounded: an event larger than the limit is an
// error, never an unbounded buffer.
package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"
	"sync"
)

// DefaultMaxEvent bounds one event (all its data lines together).
const DefaultMaxEvent = 8 << 20

// A reader is what ReadLent reads a stream with, reused across streams:
// the buffered reader (the largest allocation of a short stream) and the
// buffers of an event's data and of a line that spans reads, which would
// otherwise grow anew, doubling, in every stream.
type reader struct {
	br         *bufio.Reader
	data, line []byte
}

var readers = sync.Pool{New: func() any { return &reader{br: bufio.NewReaderSize(nil, 64<<10)} }}

// maxKept bounds the buffers a reader keeps for the next stream: one
// stream's large event does not stay in memory for good.
const maxKept = 64 << 10

func kept(b []byte) []byte {
	if cap(b) > maxKept {
		return nil
	}
	return b[:0]
}

// Event is one event. Data joins the event's data lines with "\n".
type Event struct {
	Name string // the "event:" field; empty means "message"
	Data []byte
	ID   string
}

// Read yields the events of r in order. maxEvent bounds an event's size
// (0: DefaultMaxEvent); a longer one ends the stream with an error. A
// stream that ends in the middle of an event yields that event if it has
// data (a cut stream loses nothing it received whole). Each event's Data
// is its own.
func Read(r io.Reader, maxEvent int) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ev, err := range ReadLent(r, maxEvent) {
			ev.Data = bytes.Clone(ev.Data)
			if !yield(ev, err) {
				return
			}
		}
	}
}

// ReadLent is Read with each event's Data lent: it holds until the loop
// asks for the next event or ends (the buffer then serves another
// stream), and a consumer that keeps it copies it. The
// stream decoders read an event's data into values of their own, so a
// copy of every event would be an allocation per event for nothing.
func ReadLent(r io.Reader, maxEvent int) iter.Seq2[Event, error] {
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return func(yield func(Event, error) bool) {
		rd := readers.Get().(*reader)
		br := rd.br
		br.Reset(r)
		var (
			ev      Event
			data    = rd.data // the event's data lines, joined; reused from event to event
			hasData bool
			size    int
			buf     = rd.line // a line that spans reads of r, reused: what is kept of a line is copied out of it
			// The names and ids of a stream repeat from event to event
			// (content_block_delta, ...): the last one is reused rather
			// than made again.
			lastName, lastID string
		)
		// The data lent is the consumer's until it asks for the next
		// event, and it asks for none after the stream: the buffers go
		// back with the reader.
		defer func() {
			br.Reset(nil) // drop the reference to r
			rd.data, rd.line = kept(data), kept(buf)
			readers.Put(rd)
		}()
		// flush dispatches the event being read, if it has data (as the
		// SSE specification says: an event without data is not dispatched).
		flush := func() bool {
			if !hasData {
				ev, size = Event{}, 0
				return true
			}
			ev.Data = data
			out := ev
			ev, hasData, size = Event{}, false, 0
			data = data[:0]
			return yield(out, nil)
		}
		for {
			line, spanned, err := readLine(br, maxEvent-size, buf[:0])
			if spanned {
				buf = line
			}
			if err == errTooLong {
				yield(Event{}, fmt.Errorf("sse: event larger than %d bytes", maxEvent))
				return
			}
			if err != nil && len(line) == 0 {
				if err == io.EOF {
					flush()
					return
				}
				yield(Event{}, err)
				return
			}
			size += len(line)
			if len(line) == 0 {
				if !flush() {
					return
				}
				continue
			}
			if line[0] == ':' {
				continue // a comment
			}
			field, value := line, []byte(nil)
			if i := bytes.IndexByte(line, ':'); i >= 0 {
				field, value = line[:i], line[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(field) {
			case "event":
				if string(value) != lastName {
					lastName = name(value)
				}
				ev.Name = lastName
			case "data":
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					if string(value) != lastID {
						lastID = string(value)
					}
					ev.ID = lastID
				}
			case "retry":
				// Reconnection delays are the client's business.
			}
			if err == io.EOF {
				flush()
				return
			}
		}
	}
}

var errTooLong = fmt.Errorf("line too long")

// name is an event name as a string: one of the names the providers
// ctxkit reads send without an allocation, any other made.
func name(b []byte) string {
	switch string(b) {
	case "message_start":
		return "message_start"
	case "content_block_start":
		return "content_block_start"
	case "content_block_delta":
		return "content_block_delta"
	case "content_block_stop":
		return "content_block_stop"
	case "message_delta":
		return "message_delta"
	case "message_stop":
		return "message_stop"
	case "ping":
		return "ping"
	case "error":
		return "error"
	// The Responses API names every event by its type: a stream of a
	// short answer has a dozen names, each but the delta's once.
	case "response.created":
		return "response.created"
	case "response.in_progress":
		return "response.in_progress"
	case "response.output_item.added":
		return "response.output_item.added"
	case "response.output_item.done":
		return "response.output_item.done"
	case "response.content_part.added":
		return "response.content_part.added"
	case "response.content_part.done":
		return "response.content_part.done"
	case "response.output_text.delta":
		return "response.output_text.delta"
	case "response.output_text.done":
		return "response.output_text.done"
	case "response.function_call_arguments.delta":
		return "response.function_call_arguments.delta"
	case "response.function_call_arguments.done":
		return "response.function_call_arguments.done"
	case "response.reasoning_summary_part.added":
		return "response.reasoning_summary_part.added"
	case "response.reasoning_summary_part.done":
		return "response.reasoning_summary_part.done"
	case "response.reasoning_summary_text.delta":
		return "response.reasoning_summary_text.delta"
	case "response.reasoning_summary_text.done":
		return "response.reasoning_summary_text.done"
	case "response.completed":
		return "response.completed"
	case "response.incomplete":
		return "response.incomplete"
	case "response.failed":
		return "response.failed"
	}
	return string(b)
}

// readLine reads one line without its end (LF, CRLF or CR), at most limit
// bytes long. A line that lies whole in what the reader has buffered is
// returned as a slice of that buffer (valid until br is read again, which
// the caller does only once it is done with the line); one that spans
// reads is appended to line, and spanned is set. It scans what the reader
// has buffered rather than going byte by byte.
func readLine(br *bufio.Reader, limit int, line []byte) (_ []byte, spanned bool, _ error) {
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return line, spanned, err
			}
		}
		buf, _ := br.Peek(br.Buffered())
		i := lineEnd(buf)
		if i < 0 {
			if len(line)+len(buf) > limit {
				return nil, spanned, errTooLong
			}
			line = append(line, buf...)
			spanned = true
			br.Discard(len(buf))
			continue
		}
		if len(line)+i > limit {
			return nil, spanned, errTooLong
		}
		end := buf[i]
		if end == '\r' && i+1 == len(buf) {
			// A CR at the end of what is buffered: whether an LF follows
			// is known only after the next read, which may move the
			// buffer's contents, so the line is copied out first.
			line = append(line, buf[:i]...)
			spanned = true
			br.Discard(i + 1)
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				br.Discard(1)
			}
			return line, spanned, nil
		}
		n := i + 1
		if end == '\r' && buf[i+1] == '\n' {
			n++
		}
		if spanned {
			line = append(line, buf[:i]...)
		} else {
			line = buf[:i:i]
		}
		br.Discard(n)
		return line, spanned, nil
	}
}

// lineEnd is the index of the first CR or LF in b, -1 if there is none.
// Two byte searches (each vectorised) beat bytes.IndexAny, which builds a
// set of the bytes sought on each call; the CR search looks only before
// the LF, so a stream of LF-ended lines is scanned once more at most up
// to each line's end.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// Writer writes events. Each event goes to W in one Write.
type Writer struct {
	W   io.Writer
	buf []byte // the event being written, reused from event to event
}

// Event writes one event: its name (unless empty), its data (one "data:"
// line per line of data) and the blank line that ends it.
func (w *Writer) Event(name string, data []byte) error {
	b := w.buf[:0]
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		data = data[i+1:]
	}
	b = append(b, '\n')
	if cap(b) <= 64<<10 {
		w.buf = b // a buffer grown for a huge event is not kept
	}
	_, err := w.W.Write(b)
	return err
}
