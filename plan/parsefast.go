package plan

import "github.com/ctxkit/ctxkit/internal/jsonscan"

// parseFast decodes a plan in one pass over its bytes, without the token
// decoder's cost per token (a plan of a few hundred diffs is megabytes of
// JSON strings). It accepts only what decodeStrict accepts, with the same
// result, and gives up (false) on everything else: invalid JSON, an
// unknown, repeated or missing field, a value of the wrong kind, a bound
// passed, a string whose decoding the token decoder would alter (invalid
// UTF-8, an escaped surrogate), an escaped key, a number that is not a
// plain integer (jsonscan).
// Parse then runs decodeStrict, which names the fault. FuzzParseFast holds
// the two to the same result.
func parseFast(data []byte) (*Plan, bool) {
	r := jsonscan.New(data)
	var p Plan
	var seen [2]bool // diffs, post
	ok := r.Object(func(key []byte) bool {
		switch string(key) {
		case "diffs":
			if seen[0] {
				return false
			}
			seen[0] = true
			return r.Array(MaxDiffs, func() bool {
				var d Diff
				var got [3]bool
				ok := r.Object(func(key []byte) bool {
					var into *string
					var max, at int
					switch string(key) {
					case "path":
						into, max, at = &d.Path, maxPathBytes, 0
					case "checksum":
						into, max, at = &d.Checksum, 64, 1
					case "unified_diff":
						into, max, at = &d.UnifiedDiff, MaxDiffBytes, 2
					default:
						return false
					}
					if got[at] {
						return false
					}
					got[at] = true
					s, ok := r.String(max)
					*into = s
					return ok
				})
				p.Diffs = append(p.Diffs, d)
				return ok && got[0] && got[1] && got[2]
			})
		case "post":
			if seen[1] {
				return false
			}
			seen[1] = true
			p.Post = &Post{Commands: []Command{}}
			var got bool
			return r.Object(func(key []byte) bool {
				if string(key) != "commands" || got {
					return false
				}
				got = true
				return r.Array(MaxCommands, func() bool {
					var c Command
					var got [3]bool
					ok := r.Object(func(key []byte) bool {
						var at int
						switch string(key) {
						case "program":
							at = 0
						case "args":
							at = 1
						case "timeout_ms":
							at = 2
						default:
							return false
						}
						if got[at] {
							return false
						}
						got[at] = true
						var ok bool
						switch at {
						case 0:
							c.Program, ok = r.String(maxPathBytes)
						case 1:
							c.Args = []string{}
							ok = r.Array(MaxArgs, func() bool {
								s, ok := r.String(maxArgBytes)
								c.Args = append(c.Args, s)
								return ok
							})
						case 2:
							c.TimeoutMS, ok = r.Int()
						}
						return ok
					})
					p.Post.Commands = append(p.Post.Commands, c)
					return ok && got[0]
				})
			}) && got
		}
		return false
	})
	if !ok || !seen[0] || !r.End() {
		return nil, false
	}
	return &p, true
}
