package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/app/gateway"
	"github.com/ctxkit/ctxkit/internal/metrics"
	"github.com/ctxkit/ctxkit/wire/anthropic"
	"github.com/ctxkit/ctxkit/wire/openai"
	"github.com/ctxkit/ctxkit/wire/responses"
)

// The client's own tool-call ids in the conversations of these tests: one
// an OpenAI upstream refuses (longer than 40 characters), one an Anthropic
// upstream refuses (a colon and a dot).
var (
	longID  = "call_" + strings.Repeat("x", 45)
	colonID = "functions.get_weather:0"
)

// forwardKey is the providers' key: it must reach no client.
const forwardKey = "sk-forward-secret-0123456789"

// oaiEvent is a chunk object of an OpenAI stream, as the API writes it.
func oaiEvent(choices string) string {
	return `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-x","system_fingerprint":"fp_up","choices":` + choices + `,"usage":null}` + "\n\n"
}

func oaiDelta(delta, finish string) string {
	return oaiEvent(`[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]`)
}

const oaiUsage = `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-x","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":10},"completion_tokens_details":{"reasoning_tokens":4}}}` + "\n\n"

func antEvent(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

const antStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_up\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":20,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n"

func antDelta(index int, typ, field, value string) string {
	v, _ := json.Marshal(value)
	return antEvent("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":%q,%q:%s}}`, index, typ, field, v))
}

func antEnd(reason string) string {
	return antEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+reason+`","stop_sequence":null},"usage":{"output_tokens":15}}`) +
		antEvent("message_stop", `{"type":"message_stop"}`)
}

// pause in a stream shape: the upstream waits there (past the gateway's
// idle timeout).
const pause = "\x00pause\x00"

// forwardShapes are the upstream streams of the differential test, by
// upstream type and name; {id} is replaced by the tool-call id the gateway
// sent upstream in place of the client's.
var forwardShapes = map[string]map[string]string{
	"openai": {
		"text": oaiDelta(`{"role":"assistant","content":"","refusal":null}`, "null") +
			oaiDelta(`{"content":"Hello"}`, "null") + oaiDelta(`{"content":" \"world\"\n\u00e9"}`, "null") +
			oaiDelta(`{}`, `"stop"`) + oaiUsage + "data: [DONE]\n\n",
		"tools": oaiDelta(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"{id}","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null") +
			oaiDelta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null") +
			oaiDelta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null") +
			oaiDelta(`{"tool_calls":[{"index":1,"id":"call_new","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`, "null") +
			oaiDelta(`{}`, `"tool_calls"`) + oaiUsage + "data: [DONE]\n\n",
		"thinking": oaiDelta(`{"role":"assistant","content":""}`, "null") +
			oaiDelta(`{"reasoning_content":"Let me think"}`, "null") + oaiDelta(`{"reasoning_content":" about it."}`, "null") +
			oaiDelta(`{"content":"<think>not a tag here"}`, "null") + oaiDelta(`{}`, `"length"`) + oaiUsage + "data: [DONE]\n\n",
		"thinktags": oaiDelta(`{"role":"assistant","content":"<think>"}`, "null") + oaiDelta(`{"content":"hidden"}`, "null") +
			oaiDelta(`{"content":"</think>shown"}`, "null") + oaiDelta(`{"content":" more"}`, "null") + oaiDelta(`{}`, `"stop"`) + "data: [DONE]\n\n",
		"error": oaiDelta(`{"role":"assistant","content":"partial"}`, "null") + oaiDelta(`{"content":" answer"}`, "null") +
			`data: {"error":{"message":"key ` + forwardKey + ` is over quota","type":"server_error"}}` + "\n\n" + oaiDelta(`{"content":"after"}`, "null"),
		"cut":  oaiDelta(`{"role":"assistant","content":"never"}`, "null") + oaiDelta(`{"content":" finished"}`, "null"),
		"idle": oaiDelta(`{"role":"assistant","content":"slow"}`, "null") + pause + oaiDelta(`{"content":" late"}`, "null") + oaiDelta(`{}`, `"stop"`),
	},
	"anthropic": {
		"text": antStart + antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			antEvent("ping", `{"type": "ping"}`) +
			antDelta(0, "text_delta", "text", "Hello") + antDelta(0, "text_delta", "text", " \"world\"\né") + antDelta(0, "text_delta", "text", "!") +
			antEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) + antEnd("end_turn"),
		"tools": antStart + antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			antDelta(0, "text_delta", "text", "Checking") + antDelta(0, "text_delta", "text", " now.") +
			antEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			antEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"{id}","name":"get_weather","input":{}}}`) +
			antDelta(1, "input_json_delta", "partial_json", "") + antDelta(1, "input_json_delta", "partial_json", `{"city":`) +
			antDelta(1, "input_json_delta", "partial_json", `"Paris"}`) +
			antEvent("content_block_stop", `{"type":"content_block_stop","index":1}`) + antEnd("tool_use"),
		"thinking": antStart + antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`) +
			antDelta(0, "thinking_delta", "thinking", "Let me") + antDelta(0, "thinking_delta", "thinking", " think.") +
			antDelta(0, "signature_delta", "signature", "c2lnbmF0dXJl") +
			antEvent("content_block_stop", `{"type":"content_block_stop","index":0}`) +
			antEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
			antDelta(1, "text_delta", "text", "Answer") + antDelta(1, "text_delta", "text", " given.") +
			antEvent("content_block_stop", `{"type":"content_block_stop","index":1}`) + antEnd("max_tokens"),
		"error": antStart + antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			antDelta(0, "text_delta", "text", "partial") + antDelta(0, "text_delta", "text", " answer") +
			antEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"key `+forwardKey+` overloaded"}}`),
		"cut": antStart + antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			antDelta(0, "text_delta", "text", "never") + antDelta(0, "text_delta", "text", " finished"),
		"idle": antStart + antEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
			antDelta(0, "text_delta", "text", "slow") + antDelta(0, "text_delta", "text", " start") + pause +
			antDelta(0, "text_delta", "text", " late") + antEnd("end_turn"),
	},
}

// respEvent is an event of a Responses stream, as the API writes it.
func respEvent(data string) string {
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(data), &t)
	return "event: " + t.Type + "\ndata: " + data + "\n\n"
}

const (
	respStart = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","status":"in_progress","model":"resp-x","output":[],"usage":null}}`
	respMsg   = `{"type":"response.output_item.added","sequence_number":1,"output_index":%d,"item":{"id":"msg_up","type":"message","status":"in_progress","content":[],"role":"assistant"}}`
	respPart  = `{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_up","output_index":%d,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`
)

// respText is a message item at index whose text comes in deltas.
func respText(index int, deltas ...string) string {
	s := respEvent(fmt.Sprintf(respMsg, index)) + respEvent(fmt.Sprintf(respPart, index))
	for _, d := range deltas {
		v, _ := json.Marshal(d)
		s += respEvent(fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_up","output_index":%d,"content_index":0,"delta":%s,"logprobs":[],"obfuscation":"Ab"}`, index, v))
	}
	return s
}

func respEnd(status string) string {
	return respEvent(`{"type":"response.` + status + `","sequence_number":50,"response":{"id":"resp_up","object":"response","status":"` + status + `","incomplete_details":{"reason":"max_output_tokens"},"output":[],"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":10},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":4}}}}`)
}

func init() {
	forwardShapes["responses"] = map[string]string{
		"text": respEvent(respStart) + respText(0, "Hello", ` "world"`+"\n\u00e9", "!") + respEnd("completed"),
		"tools": respEvent(respStart) + respText(0, "Checking", " now.") +
			respEvent(`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_up","type":"function_call","status":"in_progress","arguments":"","call_id":"{id}","name":"get_weather"}}`) +
			respEvent(`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"{\"city\":"}`) +
			respEvent(`{"type":"response.function_call_arguments.delta","item_id":"fc_up","output_index":1,"delta":"\"Paris\"}"}`) +
			respEvent(`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_up","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"{id}","name":"get_weather"}}`) +
			respEnd("completed"),
		"thinking": respEvent(respStart) +
			respEvent(`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[]}}`) +
			respEvent(`{"type":"response.reasoning_summary_part.added","item_id":"rs_up","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`) +
			respEvent(`{"type":"response.reasoning_summary_text.delta","item_id":"rs_up","output_index":0,"summary_index":0,"delta":"Let me"}`) +
			respEvent(`{"type":"response.reasoning_summary_text.delta","item_id":"rs_up","output_index":0,"summary_index":0,"delta":" think."}`) +
			respEvent(`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[],"encrypted_content":"c2lnbmF0dXJl"}}`) +
			respText(1, "Answer", " given.") + respEnd("incomplete"),
		"error": respEvent(respStart) + respText(0, "partial", " answer") +
			respEvent(`{"type":"error","code":"server_error","message":"key `+forwardKey+` is over quota"}`) + respText(0, "after"),
		"cut":  respEvent(respStart) + respText(0, "never", " finished"),
		"idle": respEvent(respStart) + respText(0, "slow", " start") + pause + respText(0, " late") + respEnd("completed"),
	}
}

var createdAt = regexp.MustCompile(`"created_at":\d+`)

var shapeName = regexp.MustCompile(`shape:(\w+)`)

// sentID is the tool-call id the gateway sent upstream for the client's.
var sentID = regexp.MustCompile(`"(?:id|tool_call_id|tool_use_id|call_id)":"((?:call_|toolu_)[0-9A-Za-z]{20,})"`)

// shapeUpstream serves the shape a request names, for its type, event by
// event.
func shapeUpstream(t *testing.T, typ string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := shapeName.FindSubmatch(body)
		if m == nil {
			http.Error(w, "no shape", http.StatusBadRequest)
			return
		}
		stream, ok := forwardShapes[typ][string(m[1])]
		if !ok {
			http.Error(w, "unknown shape", http.StatusBadRequest)
			return
		}
		id := sentID.FindSubmatch(body)
		if id == nil {
			http.Error(w, "the client's tool-call id was not rewritten", http.StatusBadRequest)
			return
		}
		stream = strings.ReplaceAll(stream, "{id}", string(id[1]))
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for part := range strings.SplitAfterSeq(stream, "\n\n") {
			for i, p := range strings.Split(part, pause) {
				if i > 0 {
					time.Sleep(400 * time.Millisecond)
				}
				io.WriteString(w, p)
				f.Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// recorded keeps the exchanges a gateway records.
type recorded struct {
	mu  sync.Mutex
	got []*gateway.Exchange
}

func (r *recorded) Record(_ context.Context, x *gateway.Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
}

// forwardGateway is a gateway before an OpenAI and an Anthropic upstream
// of the shapes, with prices, recording routes and a short idle timeout;
// forwarding on or off.
func forwardGateway(t *testing.T, forward bool, oai, ant, resp string) (*httptest.Server, *gateway.Gateway, *recorded, *memKeeper) {
	t.Setenv("CTXKIT_FORWARD_KEY", forwardKey)
	cfg := map[string]any{
		"providers": []map[string]any{
			{"name": "oai", "type": "openai", "base_url": oai + "/v1", "api_key_env": "CTXKIT_FORWARD_KEY", "models": []string{"gpt-x"}},
			{"name": "ant", "type": "anthropic", "base_url": ant, "api_key_env": "CTXKIT_FORWARD_KEY", "models": []string{"claude-x"}},
			{"name": "resp", "type": "openai", "api": "responses", "base_url": resp + "/v1", "api_key_env": "CTXKIT_FORWARD_KEY", "models": []string{"resp-x"}},
		},
		"routes": []map[string]any{
			{"model": "gpt-route", "targets": []map[string]any{{"provider": "oai", "model": "gpt-x"}}, "record": true},
			{"model": "claude-route", "targets": []map[string]any{{"provider": "ant", "model": "claude-x"}}, "record": true},
			{"model": "resp-route", "targets": []map[string]any{{"provider": "resp", "model": "resp-x"}}, "record": true},
		},
		"prices": []map[string]any{
			{"provider": "oai", "model": "gpt-x", "input": 1, "output": 2},
			{"provider": "ant", "model": "claude-x", "input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
			{"provider": "resp", "model": "resp-x", "input": 1, "output": 2},
		},
	}
	c, err := gateway.LoadConfig(writeConfig(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(c, gateway.Options{IdleTimeout: 200 * time.Millisecond})
	gateway.SetForwarding(g, forward)
	rec := &recorded{}
	g.SetRecorder(rec)
	keep := &memKeeper{kept: map[string][]byte{}}
	g.SetKeeper(keep)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", g.Messages)
	mux.HandleFunc("POST /v1/chat/completions", g.ChatCompletions)
	mux.HandleFunc("POST /v1/responses", g.Responses)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, g, rec, keep
}

// memKeeper keeps a gateway's stored responses in memory, in the order
// they came.
type memKeeper struct {
	mu    sync.Mutex
	kept  map[string][]byte
	order []string
}

func (k *memKeeper) Keep(_ context.Context, id string, record []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept[id] = bytes.Clone(record)
	k.order = append(k.order, id)
	return nil
}

func (k *memKeeper) Recall(_ context.Context, id string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r, ok := k.kept[id]; ok {
		return r, nil
	}
	return nil, gateway.ErrNotKept
}

func (k *memKeeper) Forget(_ context.Context, id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.kept[id]; !ok {
		return gateway.ErrNotKept
	}
	delete(k.kept, id)
	return nil
}

// records are the responses k kept, in order, each with its id's own
// part (which the items' ids repeat) made "ID" and its time 0.
func (k *memKeeper) records() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, id := range k.order {
		r := strings.ReplaceAll(string(k.kept[id]), strings.TrimPrefix(id, "resp_"), "ID")
		out = append(out, createdAt.ReplaceAllString(r, `"created_at":0`))
	}
	return out
}

// forwardRequest is a streamed request for shape, with a conversation
// whose tool-call id the upstream refuses.
func forwardRequest(dialect, model, shape string, usage bool) (path, body string) {
	if dialect == "anthropic" {
		return "/v1/messages", fmt.Sprintf(`{"model":%q,"max_tokens":100,"stream":true,"messages":[
			{"role":"user","content":"weather?"},
			{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"get_weather","input":{"city":"Oslo"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"cold"},{"type":"text","text":"shape:%s"}]}]}`,
			model, colonID, colonID, shape)
	}
	if dialect == "responses" {
		// usage stands for store: a kept response or not.
		return "/v1/responses", fmt.Sprintf(`{"model":%q,"stream":true,"store":%v,"input":[
			{"role":"user","content":"weather?"},
			{"type":"function_call","call_id":%q,"name":"get_weather","arguments":"{}"},
			{"type":"function_call_output","call_id":%q,"output":"cold"},
			{"role":"user","content":"shape:%s"}]}`, model, usage, longID, longID, shape)
	}
	opts := ""
	if usage {
		opts = `"stream_options":{"include_usage":true},`
	}
	return "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":true,%s"messages":[
		{"role":"user","content":"weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":%q,"content":"cold"},
		{"role":"user","content":"shape:%s"}]}`, model, opts, longID, longID, shape)
}

// clientReads is what a client of dialect reads of a stream body: its
// chunks, adjacent text joined (and reasoning, and a call's argument
// fragments), the decode error, and every event's id and model.
func clientReads(t *testing.T, dialect string, body []byte) (chunks []chat.Chunk, decodeErr string, ids, models []string) {
	t.Helper()
	decode := openai.DecodeStream
	switch dialect {
	case "anthropic":
		decode = anthropic.DecodeStream
	case "responses":
		decode = responses.DecodeStream
	}
	for c, err := range decode(bytes.NewReader(body)) {
		if err != nil {
			decodeErr = err.Error()
			break
		}
		if n := len(chunks); n > 0 && c.Type == chunks[n-1].Type && c.Signature == "" && c.Redacted == "" && chunks[n-1].Signature == "" {
			switch last := &chunks[n-1]; c.Type {
			case chat.ChunkText, chat.ChunkReasoning:
				last.Text += c.Text
				continue
			case chat.ChunkToolCallDelta:
				if c.Index == last.Index {
					last.Arguments += c.Arguments
					continue
				}
			}
		}
		chunks = append(chunks, c)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Message *struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			} `json:"message"`
			Response *struct {
				ID    string `json:"id"`
				Model string `json:"model"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if ev.Message != nil {
			ev.ID, ev.Model = ev.Message.ID, ev.Message.Model
		}
		if ev.Response != nil {
			ev.ID, ev.Model = ev.Response.ID, ev.Response.Model
		}
		if ev.ID != "" || ev.Model != "" {
			ids, models = append(ids, ev.ID), append(models, ev.Model)
		}
	}
	return chunks, decodeErr, ids, models
}

// metricTotals are a gateway's token and cost counters, summed by name
// and kind.
func metricTotals(t *testing.T, g *gateway.Gateway) map[string]float64 {
	reg := metrics.NewRegistry()
	reg.MustRegister(g.Collectors()...)
	out := map[string]float64{}
	for _, f := range reg.Gather() {
		for _, m := range f.Series {
			key := f.Name
			for _, l := range m.Labels {
				if l.Name == "kind" || l.Name == "outcome" {
					key += "/" + l.Value
				}
			}
			out[key] += m.Value
		}
	}
	return out
}

// TestForwardedStreamsMatchEncoded sends the same upstream streams (text,
// tool calls whose ids were rewritten on the way up, thinking, think
// tags, usage asked for or not, an error with the provider's key in it, a
// cut stream, an idle upstream) through a gateway that forwards
// same-dialect streams and one that decodes and encodes every event, and
// holds what the clients read, the records and the metrics of the one to
// the other's.
func TestForwardedStreamsMatchEncoded(t *testing.T) {
	oai, ant, resp := shapeUpstream(t, "openai"), shapeUpstream(t, "anthropic"), shapeUpstream(t, "responses")
	fwdSrv, fwdG, fwdRec, fwdKeep := forwardGateway(t, true, oai.URL, ant.URL, resp.URL)
	encSrv, encG, encRec, encKeep := forwardGateway(t, false, oai.URL, ant.URL, resp.URL)
	type call struct {
		dialect, model, shape string
		usage                 bool
	}
	var calls []call
	for _, d := range []struct{ dialect, upstream string }{{"openai", "openai"}, {"anthropic", "anthropic"}, {"responses", "responses"}} {
		for shape := range forwardShapes[d.upstream] {
			for _, model := range map[string][]string{"openai": {"gpt-x", "gpt-route"}, "anthropic": {"claude-x", "claude-route"}, "responses": {"resp-x", "resp-route"}}[d.dialect] {
				calls = append(calls, call{d.dialect, model, shape, false})
				if d.dialect != "anthropic" {
					calls = append(calls, call{d.dialect, model, shape, true})
				}
			}
		}
	}
	slices.SortFunc(calls, func(a, b call) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	forwarded := 0
	for _, c := range calls {
		t.Run(fmt.Sprintf("%s/%s/%s/usage=%v", c.dialect, c.model, c.shape, c.usage), func(t *testing.T) {
			path, body := forwardRequest(c.dialect, c.model, c.shape, c.usage)
			var got [2][]byte
			var status [2]int
			var ct [2]string
			for i, srv := range []*httptest.Server{fwdSrv, encSrv} {
				resp, b := post(t, srv.URL+path, body)
				got[i], status[i], ct[i] = b, resp.StatusCode, resp.Header.Get("Content-Type")
			}
			if status != [2]int{200, 200} || ct[0] != ct[1] {
				t.Fatalf("status %v, content types %q: %s", status, ct, got[0])
			}
			for i, b := range got {
				if bytes.Contains(b, []byte(forwardKey)) {
					t.Fatalf("path %d: the provider's key reached the client:\n%s", i, b)
				}
			}
			fc, fe, fids, fmodels := clientReads(t, c.dialect, got[0])
			ec, ee, eids, emodels := clientReads(t, c.dialect, got[1])
			fj, _ := json.Marshal(fc)
			ej, _ := json.Marshal(ec)
			if !bytes.Equal(fj, ej) || fe != ee {
				t.Fatalf("forwarded, the client reads\n%s (%s)\nencoded\n%s (%s)\nforwarded stream:\n%s\nencoded stream:\n%s", fj, fe, ej, ee, got[0], got[1])
			}
			for _, ids := range [][]string{fids, eids} {
				for _, id := range ids {
					if id != ids[0] || !strings.HasPrefix(id, map[string]string{"openai": "chatcmpl-", "anthropic": "msg_", "responses": "resp_"}[c.dialect]) {
						t.Fatalf("ids %q: not one id of the gateway's", ids)
					}
				}
			}
			for _, models := range [][]string{fmodels, emodels} {
				for _, m := range models {
					if m != c.model {
						t.Fatalf("models %q: the client asked for %s", models, c.model)
					}
				}
			}
			if c.shape == "tools" && !strings.Contains(string(fj), `"id":"`+map[string]string{"openai": longID, "anthropic": colonID, "responses": longID}[c.dialect]+`"`) {
				t.Fatalf("the client's own tool-call id is not in\n%s", fj)
			}
			if c.dialect == "openai" && strings.Contains(string(got[0]), "fp_up") {
				forwarded++
			}
		})
	}
	if forwarded == 0 {
		t.Fatal("no stream was forwarded: the upstream's system_fingerprint reached no client")
	}
	// The records: the same usage, excerpt and error class each.
	if len(fwdRec.got) != len(encRec.got) || len(fwdRec.got) == 0 {
		t.Fatalf("%d and %d exchanges recorded", len(fwdRec.got), len(encRec.got))
	}
	for i := range fwdRec.got {
		f, e := fwdRec.got[i], encRec.got[i]
		fu, _ := json.Marshal(f.Usage)
		eu, _ := json.Marshal(e.Usage)
		fc, _ := json.Marshal(f.CostUSD)
		ec, _ := json.Marshal(e.CostUSD)
		if string(fu) != string(eu) || f.LastMessage != e.LastMessage || f.ErrorClass != e.ErrorClass || f.Status != e.Status || string(fc) != string(ec) {
			t.Errorf("record %d: forwarded %s %q %q %d %s, encoded %s %q %q %d %s", i, fu, f.LastMessage, f.ErrorClass, f.Status, fc, eu, e.LastMessage, e.ErrorClass, e.Status, ec)
		}
	}
	// The kept responses: the same, but for their ids.
	if f, e := fwdKeep.records(), encKeep.records(); len(f) == 0 || !slices.Equal(f, e) {
		t.Errorf("kept responses: forwarded\n%s\nencoded\n%s", strings.Join(f, "\n"), strings.Join(e, "\n"))
	}
	if f, e := metricTotals(t, fwdG), metricTotals(t, encG); fmt.Sprint(f) != fmt.Sprint(e) {
		t.Errorf("metrics: forwarded %v, encoded %v", f, e)
	}
}
