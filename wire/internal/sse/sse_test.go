package sse_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctxkit/ctxkit/wire/internal/sse"
)

func read(t *testing.T, in string, max int) ([]sse.Event, error) {
	t.Helper()
	var out []sse.Event
	for e, err := range sse.Read(strings.NewReader(in), max) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func TestRead(t *testing.T) {
	in := ": a comment\n" +
		"event: message_start\ndata: {\"a\":1}\n\n" +
		"data: line one\r\ndata: line two\r\n\r\n" + // CRLF
		"data:no space\rid: 7\r\r" + // CR only
		"event: ping\n\n" + // no data: not dispatched
		"retry: 100\ndata: [DONE]\n\n" +
		"data: cut at the end"
	got, err := read(t, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []sse.Event{
		{Name: "message_start", Data: []byte(`{"a":1}`)},
		{Data: []byte("line one\nline two")},
		{Data: []byte("no space"), ID: "7"},
		{Data: []byte("[DONE]")},
		{Data: []byte("cut at the end")},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events: %+v", len(got), got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || !bytes.Equal(got[i].Data, want[i].Data) || got[i].ID != want[i].ID {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadOneByteAtATime(t *testing.T) {
	in := "event: e\ndata: {\"x\":\"y\"}\n\n"
	var n int
	for e, err := range sse.Read(iotest.OneByteReader(strings.NewReader(in)), 0) {
		if err != nil || e.Name != "e" || string(e.Data) != `{"x":"y"}` {
			t.Fatalf("%+v %v", e, err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d events", n)
	}
}

func TestEventTooLarge(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100) + "\n\n"
	if _, err := read(t, in, 50); err == nil || !strings.Contains(err.Error(), "larger than 50 bytes") {
		t.Fatalf("want a size error, got %v", err)
	}
	// The bound covers all of an event's data lines together.
	in = strings.Repeat("data: xxxxxxxxxx\n", 10) + "\n"
	if _, err := read(t, in, 50); err == nil {
		t.Fatal("many small lines slipped past the bound")
	}
}

func TestReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	var events int
	var last error
	for _, err := range sse.Read(r, 0) {
		if err != nil {
			last = err
			break
		}
		events++
	}
	if events != 1 || last != io.ErrUnexpectedEOF {
		t.Fatalf("%d events, error %v", events, last)
	}
}

func TestWriteReadsBack(t *testing.T) {
	var b bytes.Buffer
	w := sse.Writer{W: &b}
	b.WriteString(": keep alive\n\n") // a comment, which Read skips
	w.Event("content_block_delta", []byte(`{"t":"a"}`))
	w.Event("", []byte("two\nlines"))
	got, err := read(t, b.String(), 0)
	if err != nil || len(got) != 2 || got[0].Name != "content_block_delta" || string(got[1].Data) != "two\nlines" {
		t.Fatalf("%+v %v", got, err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("event: a\ndata: b\n\n"), 64)
	f.Add([]byte("data: x\r\ndata: y\r\r: c\n"), 8)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 1<<16 {
			max = 1 << 16
		}
		for e, err := range sse.Read(bytes.NewReader(in), max) {
			if err != nil {
				return
			}
			if max > 0 && len(e.Data) > max {
				t.Fatalf("event of %d bytes past a %d-byte bound", len(e.Data), max)
			}
		}
	})
}

// reference reads in as the SSE specification's steps say, a line at a
// time from the whole input, with Read's bound: the slow path Read's
// buffered scanning is held to.
func reference(in []byte, max int) ([]sse.Event, bool) {
	if max <= 0 {
		max = sse.DefaultMaxEvent
	}
	var (
		out     []sse.Event
		ev      sse.Event
		data    []byte
		hasData bool
		size    int
	)
	flush := func() {
		if hasData {
			ev.Data = data
			out = append(out, ev)
		}
		ev, data, hasData, size = sse.Event{}, nil, false, 0
	}
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		line := in
		rest := []byte(nil)
		if i >= 0 {
			line, rest = in[:i], in[i+1:]
			if in[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
				rest = rest[1:]
			}
		}
		in = rest
		if len(line) > max-size {
			return out, false
		}
		size += len(line)
		switch {
		case len(line) == 0:
			flush()
			continue
		case line[0] == ':':
			continue
		}
		field, value := line, []byte(nil)
		if j := bytes.IndexByte(line, ':'); j >= 0 {
			field, value = line[:j], line[j+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		}
	}
	flush()
	return out, true
}

// FuzzReadAgreesWithReference holds ReadLent (lines taken as slices of its
// buffer where they lie whole in it, copied where they span reads) to
// reference, for the input read whole, a byte at a time and in pieces of
// three bytes.
func FuzzReadAgreesWithReference(f *testing.F) {
	f.Add([]byte("event: a\ndata: b\n\n"), 64)
	f.Add([]byte("data: x\r\ndata: y\r\r: c\n"), 8)
	f.Add([]byte("event: e\r\nid: 1\r\ndata: {}\r\n\r\nevent: e\rdata: 2\r\r"), 0)
	f.Add([]byte("data: cut at the end"), 0)
	f.Add([]byte(": comment only\n\nretry: 5\n"), 3)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 0 || max > 1<<16 {
			max = 1 << 16
		}
		want, ok := reference(in, max)
		readers := map[string]func() io.Reader{
			"whole":    func() io.Reader { return bytes.NewReader(in) },
			"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(in)) },
			"threes":   func() io.Reader { return &pieces{b: in, n: 3} },
		}
		for name, r := range readers {
			var got []sse.Event
			failed := false
			for e, err := range sse.ReadLent(r(), max) {
				if err != nil {
					failed = true
					break
				}
				e.Data = bytes.Clone(e.Data) // lent until the next event
				got = append(got, e)
			}
			if failed == ok {
				t.Fatalf("%s: failed %v, the reference %v", name, failed, !ok)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d events, the reference %d: %q vs %q", name, len(got), len(want), got, want)
			}
			for i := range want {
				if got[i].Name != want[i].Name || got[i].ID != want[i].ID || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("%s: event %d: %q, the reference %q", name, i, got[i], want[i])
				}
			}
		}
	})
}

// pieces reads b n bytes at a time.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}

// TestStreamsShareNoBuffers reads streams of every size at once, many
// times over, lent, as the decoders do: the buffers an event's data and a
// line spanning reads are kept in pass from stream to stream, and no
// stream may see another's bytes (a short stream after one whose events
// outgrew them, a stream left in the middle, a stream read a byte at a
// time so that every line spans reads).
func TestStreamsShareNoBuffers(t *testing.T) {
	streams := make([]string, 4)
	want := make([][]string, len(streams))
	for i := range streams {
		var b strings.Builder
		for j := range 5 + 10*i {
			data := strings.Repeat(string(rune('a'+i)), 1+j*j*(i+1))
			b.WriteString("event: e" + string(rune('0'+i)) + "\ndata: " + data + "\ndata: " + data[:len(data)/2] + "\n\n")
			want[i] = append(want[i], data+"\n"+data[:len(data)/2])
		}
		streams[i] = b.String()
	}
	const workers, rounds = 4, 40
	errs := make(chan string, workers*rounds)
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for r := range rounds {
				i := (w + r) % len(streams)
				var src io.Reader = strings.NewReader(streams[i])
				if r%3 == 0 {
					src = iotest.OneByteReader(src)
				}
				stop := len(want[i])
				if r%5 == 0 {
					stop = 2 // the consumer leaves the stream early
				}
				n := 0
				for ev, err := range sse.ReadLent(src, 0) {
					if err != nil {
						errs <- err.Error()
						break
					}
					if string(ev.Data) != want[i][n] || ev.Name != "e"+string(rune('0'+i)) {
						errs <- "stream " + string(rune('0'+i)) + ": an event differs from the one written"
						break
					}
					if n++; n == stop {
						break
					}
				}
				if n != stop {
					errs <- "stream " + string(rune('0'+i)) + ": events missing"
				}
			}
		}()
	}
	for range workers {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
