package patch

import (
	"errors"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// defaultTarget is the file of a matrix case that names none.
const defaultTarget = `package main

import "fmt"

func add(a, b int) int {
	return a + b
}

func sub(a, b int) int {
	return a - b
}

func main() {
	fmt.Println(add(1, 2))
	fmt.Println(sub(3, 1))
}
`

type matrixCase struct {
	Name   string   `yaml:"name"`
	File   *string  `yaml:"file"`
	Diff   string   `yaml:"diff"`
	Want   *string  `yaml:"want"`
	Status string   `yaml:"status"`
	Match  []string `yaml:"match"`
	Error  string   `yaml:"error"`
	CRLF   []string `yaml:"crlf"`
}

func loadMatrix(t testing.TB) []matrixCase {
	data, err := os.ReadFile("testdata/matrix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []matrixCase
	if err := yaml.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		c := &cases[i]
		if c.File == nil {
			s := defaultTarget
			c.File = &s
		}
		for _, f := range c.CRLF {
			switch f {
			case "file":
				*c.File = strings.ReplaceAll(*c.File, "\n", "\r\n")
			case "diff":
				c.Diff = strings.ReplaceAll(c.Diff, "\n", "\r\n")
			case "want":
				s := strings.ReplaceAll(*c.Want, "\n", "\r\n")
				c.Want = &s
			default:
				t.Fatalf("%s: crlf names %q", c.Name, f)
			}
		}
		if (c.Want == nil) == (c.Error == "") {
			t.Fatalf("%s: a case has either want or error", c.Name)
		}
	}
	return cases
}

func TestMatrix(t *testing.T) { testMatrix(t) }

// TestMatrixIndexed runs the matrix with every search going through the
// index of the target's lines, as it does for long targets.
func TestMatrixIndexed(t *testing.T) {
	defer func(n int) { indexMin = n }(indexMin)
	indexMin = 1
	testMatrix(t)
}

func testMatrix(t *testing.T) {
	for _, c := range loadMatrix(t) {
		t.Run(c.Name, func(t *testing.T) {
			f, err := Parse(c.Diff)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			res, err := Apply([]byte(*c.File), f)
			if c.Error != "" {
				var pe *Error
				if !errors.As(err, &pe) {
					t.Fatalf("Apply: got %v (%+v), want error %s", err, res, c.Error)
				}
				if string(pe.Code) != c.Error {
					t.Fatalf("Apply: got %s error %v, want %s", pe.Code, err, c.Error)
				}
				t.Logf("error: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got := string(res.Content); got != *c.Want {
				t.Fatalf("content:\n%q\nwant:\n%q", got, *c.Want)
			}
			want := "applied"
			if c.Status != "" {
				want = c.Status
			}
			if res.Status.String() != want {
				t.Errorf("status %s, want %s", res.Status, want)
			}
			if c.Match != nil {
				var got []string
				for _, h := range res.Hunks {
					got = append(got, h.Match.String())
				}
				if strings.Join(got, ",") != strings.Join(c.Match, ",") {
					t.Errorf("match %q, want %q", got, c.Match)
				}
			}
			for _, w := range res.Warnings {
				t.Logf("warning: %s", w)
			}
		})
	}
}
