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
