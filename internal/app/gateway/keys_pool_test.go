package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// refusal is an error answer of an upstream, in its type's own shape.
type refusal struct {
	status int
	header map[string]string
	body   string // "%s" is replaced by the key the request was sent with
}

// forbidden are 403s about the request, as each provider type answers
// them: a region, a model the account may not use, a permission of the
// account. They are the same whatever key of a pool is sent.
var forbidden = map[string]refusal{
	gateway.TypeOpenAI:    {403, nil, `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported (sent with %s)","param":null,"type":"request_forbidden"}}`},
	gateway.TypeAnthropic: {403, nil, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`},
	gateway.TypeGemini:    {403, nil, `{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}`},
	gateway.TypeBedrock: {403, map[string]string{"X-Amzn-ErrorType": "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
		`{"message":"You don't have access to the model with the specified model ID."}`},
}

// refusedKeys are answers that name the key as the fault, by provider
// type: a revoked or unknown key (401, or Gemini's 400), a leaked one,
// a bad bearer token or AWS credential (403).
var refusedKeys = map[string][]refusal{
	gateway.TypeOpenAI:    {{401, nil, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}},
	gateway.TypeAnthropic: {{401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}},
	gateway.TypeGemini: {
		{403, nil, `{"error":{"code":403,"message":"Your API key was reported as leaked. Please use another API key.","status":"PERMISSION_DENIED"}}`},
		{400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`},
		{403, nil, `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:%s' has been suspended.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CONSUMER_SUSPENDED"}]}}`},
	},
	gateway.TypeBedrock: {
		{403, map[string]string{"X-Amzn-ErrorType": "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
			`{"message":"Authentication failed: Please make sure your API Key is valid."}`},
		{403, map[string]string{"X-Amzn-ErrorType": "UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/"},
			`{"message":"The security token included in the request is invalid."}`},
	},
}

// refuser is an upstream of one provider type on loopback: a request for
// a model named "forbidden" gets the type's 403 about the request, a
// request sent with a key of byKey that key's answer, any other the
// type's answer.
type refuser struct {
	srv   *httptest.Server
	mu    sync.Mutex
	keys  []string // the key of every request, in order
	byKey map[string]refusal
}

// keyOf is the key a request of a provider type carries.
func keyOf(r *http.Request) string {
	if k := r.Header.Get("x-api-key"); k != "" {
		return k
	}
	if k := r.Header.Get("x-goog-api-key"); k != "" {
		return k
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func newRefuser(t *testing.T, typ string) *refuser {
	f := &refuser{byKey: map[string]refusal{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := keyOf(r)
		f.mu.Lock()
		f.keys = append(f.keys, key)
		ref, refused := f.byKey[key]
		f.mu.Unlock()
		if !refused && (strings.Contains(r.URL.Path, "forbidden") || bytes.Contains(body, []byte(`"forbidden"`))) {
			ref, refused = forbidden[typ], true
		}
		if refused {
			for k, v := range ref.header {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ref.status)
			io.WriteString(w, strings.ReplaceAll(ref.body, "%s", key))
			return
		}
		if r.Header.Get("Accept") == "application/json" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, wholes[typ])
			return
		}
		w.Header().Set("Content-Type", streams[typ].contentType)
		io.WriteString(w, streams[typ].body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// sent is the keys of the requests from the n-th on.
func (f *refuser) sent(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys[n:]...)
}

func (f *refuser) refuse(key string, ref refusal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byKey[key] = ref
}

// poolKeys are the keys of a pool of three, set in the environment.
var poolKeys = []string{"pool-key-one-0123456789", "pool-key-two-0123456789", "pool-key-three-012345678"}

// threeKeys is a provider of type typ at url with the keys k1, k2 and k3
// and the models "forbidden" and "allowed".
func threeKeys(t *testing.T, typ, url string) string {
	for i, k := range poolKeys {
		t.Setenv(fmt.Sprintf("CTXKIT_TEST_POOL%d", i+1), k)
	}
	return fmt.Sprintf(`{"providers":[{"name":"up","type":%q,"base_url":%q,"models":["forbidden","allowed"],
		"keys":[{"id":"k1","env":"CTXKIT_TEST_POOL1"},{"id":"k2","env":"CTXKIT_TEST_POOL2"},{"id":"k3","env":"CTXKIT_TEST_POOL3"}]}]}`, typ, url)
}

// distinct is how many different values vs has.
func distinct(vs []string) int {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v] = true
	}
	return len(seen)
}

// TestForbiddenModelKeepsPool: an upstream that forbids a model (a 403
// about the request, in each provider type's shape) answers the client
// with that 403 — its message, type permission_error, not a 502 — every
// time, in both client dialects, streamed or not; no key leaves the pool
// of three, and requests for another model are served by all three keys.
func TestForbiddenModelKeepsPool(t *testing.T) {
	for _, typ := range []string{gateway.TypeOpenAI, gateway.TypeAnthropic, gateway.TypeGemini, gateway.TypeBedrock} {
		t.Run(typ, func(t *testing.T) {
			up := newRefuser(t, typ)
			srv, reg, logs := routed(t, threeKeys(t, typ, up.srv.URL))
			for round := range 3 {
				for _, cl := range calls("forbidden") {
					resp, body := post(t, srv.URL+cl.path, cl.body)
					var e struct {
						Type  string
						Error struct{ Type, Message string }
					}
					json.Unmarshal(body, &e)
					if resp.StatusCode != 403 || e.Error.Type != "permission_error" || !strings.Contains(e.Error.Message, "upstream up: ") {
						t.Fatalf("round %d %s: %d %s", round, cl.name, resp.StatusCode, body)
					}
					for _, k := range poolKeys {
						if strings.Contains(string(body), k) {
							t.Fatalf("%s: the answer holds a key: %s", cl.name, body)
						}
					}
				}
			}
			if n := attempts(t, reg, "up", "forbidden", "client_error", "k1") + attempts(t, reg, "up", "forbidden", "client_error", "k2") +
				attempts(t, reg, "up", "forbidden", "client_error", "k3"); n != 12 {
				t.Errorf("client_error attempts = %v, want 12", n)
			}
			if strings.Contains(logs.String(), "out of use") {
				t.Errorf("a key was taken out: %s", logs)
			}
			before := len(up.sent(0))
			for _, cl := range calls("allowed") {
				if resp, body := post(t, srv.URL+cl.path, cl.body); resp.StatusCode != 200 {
					t.Fatalf("allowed %s: %d %s", cl.name, resp.StatusCode, body)
				}
			}
			if used := up.sent(before); distinct(used) != 3 {
				t.Fatalf("after the 403s the pool serves with %d keys, want 3 (%v)", distinct(used), used)
			}
		})
	}
}

// TestRefusedKeyLeavesPool: an answer that names the key as the fault (a
// revoked key's 401, a leaked, suspended or unknown key's 403 or 400, a
// bad AWS credential) takes that key out, logged by id and never by
// value; the client gets a 502 that blames the gateway's credentials, and
// the other two keys serve from then on.
func TestRefusedKeyLeavesPool(t *testing.T) {
	for _, typ := range []string{gateway.TypeOpenAI, gateway.TypeAnthropic, gateway.TypeGemini, gateway.TypeBedrock} {
		for i, ref := range refusedKeys[typ] {
			t.Run(fmt.Sprintf("%s/%d-%d", typ, i, ref.status), func(t *testing.T) {
				up := newRefuser(t, typ)
				up.refuse(poolKeys[0], ref)
				srv, reg, logs := routed(t, threeKeys(t, typ, up.srv.URL))
				cl := calls("allowed")[2]
				resp, body := post(t, srv.URL+cl.path, cl.body)
				if resp.StatusCode != 502 || !strings.Contains(string(body), "refused the gateway's credentials") || strings.Contains(string(body), poolKeys[0]) {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				for _, cl := range calls("allowed") {
					if resp, body := post(t, srv.URL+cl.path, cl.body); resp.StatusCode != 200 {
						t.Fatalf("%s: %d %s", cl.name, resp.StatusCode, body)
					}
				}
				used := up.sent(1)
				if distinct(used) != 2 || strings.Contains(strings.Join(used, ","), poolKeys[0]) {
					t.Fatalf("after the refusal the keys used are %v", used)
				}
				log := logs.String()
				if !strings.Contains(log, "key=k1") || strings.Contains(log, poolKeys[0]) {
					t.Errorf("log: %s", log)
				}
				if n := attempts(t, reg, "up", "allowed", "auth_error", "k1"); n != 1 {
					t.Errorf("auth_error{k1} = %v", n)
				}
			})
		}
	}
}
