package patch_test

import (
	"errors"
	"fmt"

	"github.com/ctxkit/ctxkit/patch"
)

// A model's diff whose header line numbers are off: the hunk is placed by
// its content, and the result says how.
func ExampleApply() {
	src := []byte("package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	f, err := patch.Parse(`--- a/main.go
+++ b/main.go
@@ -10,3 +10,3 @@
 func main() {
-	println("hello")
+	println("hello, world")
 }
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := patch.Apply(src, f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(res.Content))
	fmt.Println(res.Status, res.Hunks[0].Match, res.Hunks[0].Match.Offset)

	// The same diff again is already applied: nothing to change.
	again, err := patch.Apply(res.Content, f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(again.Status)
	// Output:
	// package main
	//
	// func main() {
	// 	println("hello, world")
	// }
	// applied offset -7
	// noop
}

// A hunk whose lines are not in the file fails with a typed error that
// names the hunk and the closest region of the file.
func ExampleError() {
	f, err := patch.Parse("@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = patch.Apply([]byte("z\na\nc\n"), f)
	var e *patch.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Path, e.FileLine)
		fmt.Println(err)
	}
	// Output:
	// hunk_not_found hunks[0] 2
	// hunk 1 (diff line 1): its old lines are not in the file; the closest region is line 2 (similarity 50%), where line 3 is "c", the diff expects "b"
}
