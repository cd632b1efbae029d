package bedrock_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/wire/bedrock"
	"github.com/ctxkit/ctxkit/wire/wiretest"
)

// encode is EncodeRequest with its options read strictly from JSON. The
// result is the wire request plus, when the bedrock caching strategy is on,
// the cache state under "x-cache-state" so that the case file can check
// the placements written back.
var encode = wiretest.Adapt(func(req chat.Request, opts bedrock.Options) (any, []chat.Warning, error) {
	out, warns, err := bedrock.EncodeRequest(req, opts)
	if err != nil || opts.Cache != bedrock.CacheBedrock {
		return out, warns, err
	}
	return withState{out, out.CacheState}, warns, nil
})

// withState is a wire request with its cache state beside it.
type withState struct {
	*bedrock.Request
	State bedrock.CacheState `json:"x-cache-state"`
}

func TestConformance(t *testing.T) { wiretest.Run(t, encode) }

func TestCases(t *testing.T) { wiretest.RunCases(t, "testdata/cases.json", encode) }

func BenchmarkEncode(b *testing.B) { wiretest.Bench(b, encode) }

// TestCacheStateAcrossTurns grows a conversation turn by turn, passing the
// cache state back through JSON as the CLI does, and checks the strategy's
// promises: at most the model's points, each after a user message, in
// ascending order, one cache point block per placement; from one turn to
// the next the placements are kept, or one is added after them, or two
// ranges merge (one placement removed) and one is added.
func TestCacheStateAcrossTurns(t *testing.T) {
	full := wiretest.Conversation(90)
	var state *bedrock.CacheState
	var prev []int
	changes := 0
	for n := 1; n <= len(full.Messages); n++ {
		req := full
		req.Messages = full.Messages[:n]
		before, _ := json.Marshal(req)
		out, _, err := bedrock.EncodeRequest(req, bedrock.Options{Cache: bedrock.CacheBedrock, Model: "anthropic.claude-sonnet-4-20250514-v1:0", State: state})
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := json.Marshal(req); !bytes.Equal(before, after) {
			t.Fatalf("turn %d: the request changed", n)
		}
		again, _, _ := bedrock.EncodeRequest(req, bedrock.Options{Cache: bedrock.CacheBedrock, Model: "anthropic.claude-sonnet-4-20250514-v1:0", State: state})
		if !reflect.DeepEqual(out, again) {
			t.Fatalf("turn %d: two encodings differ", n)
		}
		a, _ := json.Marshal(out)
		var cur []int
		for _, p := range out.CacheState.Placements {
			if p.Field != "messages" {
				continue
			}
			if req.Messages[p.Index].Role != chat.User {
				t.Fatalf("turn %d: a point after message %d, which is not the user's", n, p.Index)
			}
			if len(cur) > 0 && p.Index <= cur[len(cur)-1] {
				t.Fatalf("turn %d: placements not ascending: %v", n, out.CacheState.Placements)
			}
			cur = append(cur, p.Index)
		}
		if len(out.CacheState.Placements) > 4 {
			t.Fatalf("turn %d: %d placements", n, len(out.CacheState.Placements))
		}
		points := bytes.Count(a, []byte(`"cachePoint"`))
		if points != len(out.CacheState.Placements) {
			t.Fatalf("turn %d: %d cache points for %d placements", n, points, len(out.CacheState.Placements))
		}
		if len(prev) > 0 {
			kept := 0
			for _, i := range prev {
				if contains(cur, i) {
					kept++
				}
			}
			added := len(cur) - kept
			switch {
			case kept == len(prev) && added == 0:
			case kept == len(prev) && added == 1 && cur[len(cur)-1] > prev[len(prev)-1]:
				changes++
			case kept == len(prev)-1 && added == 1 && cur[len(cur)-1] > prev[len(prev)-1]:
				changes++
			default:
				t.Fatalf("turn %d: placements went from %v to %v", n, prev, cur)
			}
		}
		if testing.Verbose() {
			t.Logf("turn %d: %v", n, out.CacheState.Placements)
		}
		prev = cur
		data, err := json.Marshal(out.CacheState)
		if err != nil {
			t.Fatal(err)
		}
		state = new(bedrock.CacheState)
		if err := json.Unmarshal(data, state); err != nil {
			t.Fatal(err)
		}
	}
	if changes < 4 {
		t.Fatalf("the placements changed only %d times over the conversation", changes)
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestIDsStayDistinct: ids that clean to the same spelling stay distinct,
// match Bedrock's pattern, and pair each tool use with its result.
func TestIDsStayDistinct(t *testing.T) {
	ids := []string{"a.b", "a:b", "a_b", "a b", "a/b", "ä_b", strings.Repeat("z", 80), strings.Repeat("z", 81)}
	req := chat.Request{Model: "claude", MaxTokens: 100, Tools: []chat.Tool{{Name: "f", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	req.Messages = append(req.Messages, chat.Message{Role: chat.User, Content: chat.Str("go")})
	var uses, results []chat.Block
	for i, id := range ids {
		uses = append(uses, chat.Block{Type: chat.TypeToolUse, ID: id, Name: "f", Input: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)})
		c := chat.Str(strconv.Itoa(i))
		results = append([]chat.Block{{Type: chat.TypeToolResult, ToolUseID: id, Content: &c}}, results...)
	}
	req.Messages = append(req.Messages, chat.Message{Role: chat.Assistant, Content: chat.Of(uses...)},
		chat.Message{Role: chat.User, Content: chat.Of(results...)})
	out, _, err := bedrock.EncodeRequest(req, bedrock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	byID := map[string]string{}
	for _, b := range out.Messages[1].Content {
		id := b.ToolUse.ToolUseID
		if !pattern.MatchString(id) {
			t.Errorf("id %q does not match Bedrock's pattern", id)
		}
		if _, dup := byID[id]; dup {
			t.Errorf("id %q given twice", id)
		}
		byID[id] = string(b.ToolUse.Input)
	}
	for _, b := range out.Messages[2].Content {
		r := b.ToolResult
		if want := `{"i":` + r.Content[0].Text + `}`; byID[r.ToolUseID] != want {
			t.Errorf("result %s pairs with %q, want the call %s", r.Content[0].Text, byID[r.ToolUseID], want)
		}
	}
	if len(byID) != len(ids) {
		t.Errorf("%d distinct ids for %d", len(byID), len(ids))
	}
}
