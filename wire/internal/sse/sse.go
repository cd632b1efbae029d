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

// readers are reused across streams: a reader's buffer is the largest
// allocation of a short stream.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// Event is one event. Data joins the event's data lines with "\n".
type Event struct {
	Name string // the "event:" field; empty means "message"
	Data []byte
	ID   string
}

// Read yields the events of r in order. maxEvent bounds an event's size
// (0: DefaultMaxEvent); a longer one ends the stream with an error. A
// stream that ends in the middle of an event yields that event if it has
// data (a cut stream loses nothing it received whole).
func Read(r io.Reader, maxEvent int) iter.Seq2[Event, error] {
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return func(yield func(Event, error) bool) {
		br := readers.Get().(*bufio.Reader)
		br.Reset(r)
		defer func() {
			br.Reset(nil) // drop the reference to r
			readers.Put(br)
		}()
		var (
			ev      Event
			data    bytes.Buffer
			hasData bool
			size    int
			buf     []byte // the line being read, reused: what is kept of a line is copied out of it
		)
		// flush dispatches the event being read, if it has data (as the
		// SSE specification says: an event without data is not dispatched).
		flush := func() bool {
			if !hasData {
				ev, size = Event{}, 0
				return true
			}
			ev.Data = bytes.Clone(data.Bytes())
			out := ev
			ev, hasData, size = Event{}, false, 0
			data.Reset()
			return yield(out, nil)
		}
		for {
			line, err := readLine(br, maxEvent-size, buf[:0])
			buf = line
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
				ev.Name = string(value)
			case "data":
				if hasData {
					data.WriteByte('\n')
				}
				data.Write(value)
				hasData = true
			case "id":
				if bytes.IndexByte(value, 0) < 0 {
					ev.ID = string(value)
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

// readLine reads one line without its end (LF, CRLF or CR), at most limit
// bytes long, appended to line. It scans what the reader has buffered
// rather than going byte by byte.
func readLine(br *bufio.Reader, limit int, line []byte) ([]byte, error) {
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return line, err
			}
		}
		buf, _ := br.Peek(br.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(line)+len(buf) > limit {
				return nil, errTooLong
			}
			line = append(line, buf...)
			br.Discard(len(buf))
			continue
		}
		if len(line)+i > limit {
			return nil, errTooLong
		}
		line = append(line, buf[:i]...)
		end := buf[i]
		br.Discard(i + 1)
		if end == '\r' {
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				br.Discard(1)
			}
		}
		return line, nil
	}
}

// Writer writes events.
type Writer struct {
	W io.Writer
}

// Event writes one event: its name (unless empty), its data (one "data:"
// line per line of data) and the blank line that ends it.
func (w Writer) Event(name string, data []byte) error {
	var b []byte
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
	_, err := w.W.Write(b)
	return err
}
