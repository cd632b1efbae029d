package view_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/view"
)

// A view shows a model only what it needs: here the card number is
// excluded and a template writes a one-line summary beside the rest.
func Example() {
	v, err := view.Compile([]byte(`{
		"mode": "merge",
		"exclude": ["card"],
		"transform": {"summary": {"type": "template", "template": "{{context.name}} ({{title}})"}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, res, err := v.ApplyJSON(context.Background(), []byte(`{"name":"Ann","plan":"pro","card":"4111 1111 1111 1111"}`),
		view.Record{Title: "Customer"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status)
	fmt.Println(string(out))
	// Output:
	// OK
	// {"name":"Ann","plan":"pro","summary":"Ann (Customer)"}
}

// A hints document that cannot compile is refused with the place at fault
// and a stable code.
func ExampleCompile_error() {
	_, err := view.Compile([]byte(`{"transform":{"n":{"type":"jq","query":"."}},"exclude":["a..b"]}`))
	var ve *view.Error
	if errors.As(err, &ve) {
		fmt.Println(ve.Code, ve.Path)
	}
	fmt.Println(err)
	// Output:
	// invalid_path exclude[0]
	// exclude[0]: empty segment at offset 2 in "a..b"
}

// Measure reports what a view saves, in tokens (ctxkit view --stats).
func ExampleMeasure() {
	s, err := view.Measure("", []byte(`{"name":"Ann","bio":"a long biography nobody reads"}`), []byte(`{"name":"Ann"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d -> %d tokens\n", s.Encoding, s.TokensBefore, s.TokensAfter)
	// Output:
	// o200k_base: 13 -> 5 tokens
}
