package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/chat"
	"github.com/ctxkit/ctxkit/internal/upstream"
	"github.com/ctxkit/ctxkit/wire/providers"
)

func testPool(weights ...int) *keyPool {
	k := &keyPool{managed: true, cooldown: time.Minute}
	for i, w := range weights {
		k.keys = append(k.keys, &poolKey{id: string(rune('a' + i)), weight: w})
	}
	return k
}

// picks is the ids of the next n keys of k at now.
func picks(k *keyPool, n int, now time.Time) string {
	var b strings.Builder
	for range n {
		key, _ := k.pick(now)
		if key == nil {
			b.WriteByte('-')
			continue
		}
		b.WriteString(key.id)
	}
	return b.String()
}

// TestSmoothWeighted: keys are handed out in proportion to their weights,
// spread out, in the same order every time; a resting key is left out
// until its rest ends, a removed one for good.
func TestSmoothWeighted(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	if got := picks(testPool(5, 1, 1), 14, now); got != "aabacaaaabacaa" {
		t.Errorf("5,1,1: %s", got)
	}
	if got := picks(testPool(1, 1), 4, now); got != "abab" {
		t.Errorf("1,1: %s", got)
	}
	k := testPool(1, 1, 1)
	k.rest(k.keys[0], 10*time.Second, now)
	if got := picks(k, 4, now); strings.Contains(got, "a") || got != "bcbc" {
		t.Errorf("a resting: %s", got)
	}
	if got := picks(k, 6, now.Add(10*time.Second)); strings.Count(got, "a") != 2 {
		t.Errorf("a back: %s", got)
	}
	if !k.remove(k.keys[1]) || k.remove(k.keys[1]) {
		t.Error("remove reports whether the key was still in")
	}
	if got := picks(k, 4, now.Add(time.Minute)); strings.Contains(got, "b") {
		t.Errorf("b removed: %s", got)
	}
	now = now.Add(time.Minute)
	k.rest(k.keys[0], 5*time.Second, now)
	k.rest(k.keys[0], time.Second, now) // a shorter rest does not end a longer one
	k.rest(k.keys[2], 3*time.Hour, now) // capped at an hour
	if key, free := k.pick(now); key != nil || !free.Equal(now.Add(5*time.Second)) {
		t.Errorf("all resting: %v, free at %v", key, free)
	}
	k.rest(k.keys[0], time.Hour, now)
	if key, _ := k.pick(now.Add(time.Hour + time.Second)); key == nil {
		t.Error("a rest of 3h was not capped at 1h")
	}
	k.remove(k.keys[0])
	k.remove(k.keys[2])
	if key, free := k.pick(now.Add(2 * time.Hour)); key != nil || !free.IsZero() {
		t.Errorf("all removed: %v, free at %v", key, free)
	}
	// The one key of api_key_env is never rested or removed.
	single := &keyPool{keys: []*poolKey{{id: "key1", weight: 1}}}
	single.rest(single.keys[0], time.Hour, now)
	if single.remove(single.keys[0]) {
		t.Error("the key of api_key_env was removed")
	}
	if key, _ := single.pick(now); key == nil {
		t.Error("the key of api_key_env rested")
	}
}

// TestRetryAfter: seconds, milliseconds (retry-after-ms first) and HTTP
// dates are read, capped at an hour; anything else is no answer.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {" 7 "}}, 7 * time.Second, true},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"0"}}, 0, true},
		{http.Header{"Retry-After": {"999999999999999999999"}}, time.Hour, true},
		{http.Header{"Retry-After": {"Fri, 27 Nov 2026 08:00:30 GMT"}}, 30 * time.Second, true},
		{http.Header{"Retry-After": {"Fri, 27 Nov 2026 07:00:00 GMT"}}, 0, true},
		{http.Header{"Retry-After": {"Sat, 28 Nov 2026 08:00:00 GMT"}}, time.Hour, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"9"}}, 9 * time.Second, true},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{"Retry-After": {"1e3"}}, 0, false},
		{http.Header{"Retry-After": {"NaN"}}, 0, false},
		{http.Header{"Retry-After": {"tomorrow"}}, 0, false},
		{http.Header{"Retry-After": {strings.Repeat("9", 100)}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := retryAfter(c.h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%v: %v %v, want %v %v", c.h, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRetryAfter: any header value gives a duration that is never
// negative and never past an hour.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"2", "1.5", "0", "-1", "1e9", "Fri, 27 Nov 2026 08:00:30 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", ".", "..", "9.9.9", strings.Repeat("9", 64)} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		if ms != "" {
			h.Set("Retry-After-Ms", ms)
		}
		d, ok := retryAfter(h, now)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("%q %q: %v %v", ra, ms, d, ok)
		}
		if d > time.Hour {
			t.Fatalf("%q %q: %v past an hour", ra, ms, d)
		}
	})
}

// FuzzParams: any params object either loads or is refused naming its
// path, and what loads applies without panicking.
func FuzzParams(f *testing.F) {
	for _, s := range []string{`{"max_tokens":10}`, `{"stop":"x"}`, `{"stop":["a","b"]}`, `{"temperature":0.5,"top_p":1}`, `{"reasoning_effort":"low"}`, `{"seed":1}`, `{"max_tokens":"x"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		ps, err := compileParams(m, "p")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "p.") {
				t.Fatalf("%s: error %q does not name the path", s, err)
			}
			return
		}
		var req chat.Request
		ps.apply(&req)
	})
}

// providerOf is a provider of type typ, with its row, as LoadConfig makes
// one.
func providerOf(t testing.TB, typ string) *Provider {
	t.Helper()
	row, ok := providers.Lookup(typ)
	if !ok {
		t.Fatalf("no row %s", typ)
	}
	return &Provider{Name: "up", Type: typ, row: row}
}

// TestCredentialFault: which 403s and 400s name the credential, in each
// provider type's error shape; a 401 always does, a 403 about the request
// (a model, a region, a permission of the account) and a 400 that only
// quotes a key phrase never do.
func TestCredentialFault(t *testing.T) {
	for _, c := range []struct {
		typ    string
		status int
		header http.Header
		body   string
		want   bool
	}{
		{TypeOpenAI, 401, nil, `{"error":{"message":"no","type":"invalid_request_error","code":"invalid_api_key"}}`, true},
		{TypeOpenAI, 401, nil, `<html>401</html>`, true},
		{TypeOpenAI, 403, nil, `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","type":"request_forbidden"}}`, false},
		{TypeOpenAI, 403, nil, `{"error":{"message":"You have insufficient permissions for this operation. Missing scopes: model.request.","type":"invalid_request_error"}}`, true},
		{TypeOpenAI, 403, nil, `{"error":{"message":"You are not allowed to sample from this model","type":"invalid_request_error"}}`, false},
		{TypeOpenAI, 403, nil, `{"error":{"message":"x","type":"invalid_request_error","code":"invalid_api_key"}}`, true},
		{TypeOpenAI, 400, nil, `{"error":{"message":"messages[0]: invalid api key in the text","type":"invalid_request_error"}}`, false},
		{TypeOpenAI, 403, nil, `<html>Forbidden</html>`, false},
		{TypeAnthropic, 403, nil, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, false},
		{TypeAnthropic, 403, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, true},
		{TypeGemini, 403, nil, `{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}`, false},
		{TypeGemini, 403, nil, `[{"error":{"code":403,"message":"Your API key was reported as leaked. Please use another API key.","status":"PERMISSION_DENIED"}}]`, true},
		{TypeGemini, 400, nil, `{"error":{"code":400,"message":"API Key not found.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, true},
		{TypeGemini, 400, nil, `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}`, false},
		{TypeGemini, 403, nil, `{"error":{"code":403,"message":"Requests to this API are blocked.","status":"PERMISSION_DENIED","details":[{"reason":"API_KEY_SERVICE_BLOCKED"}]}}`, true},
		{TypeGemini, 403, nil, `{"error":{"code":403,"message":"Generative Language API has not been used in project 1 before or it is disabled.","status":"PERMISSION_DENIED","details":[{"reason":"SERVICE_DISABLED"}]}}`, true},
		{TypeGemini, 403, nil, `{"error":{"code":403,"message":"Your project has been denied access. Please contact support.","status":"PERMISSION_DENIED"}}`, true},
		{TypeBedrock, 403, http.Header{"X-Amzn-Errortype": {"AccessDeniedException:http://internal"}}, `{"message":"You don't have access to the model with the specified model ID."}`, false},
		{TypeBedrock, 403, http.Header{"X-Amzn-Errortype": {"AccessDeniedException:http://internal"}}, `{"message":"Authentication failed: Please make sure your API Key is valid."}`, true},
		{TypeBedrock, 403, http.Header{"X-Amzn-Errortype": {"UnrecognizedClientException:http://internal"}}, `{"message":"x"}`, true},
		{TypeBedrock, 403, nil, `{"__type":"com.amazon.coral.service#ExpiredTokenException","message":"x"}`, true},
		{TypeBedrock, 400, http.Header{"X-Amzn-Errortype": {"ValidationException:http://internal"}}, `{"message":"Malformed input request"}`, false},
		{TypeMistral, 403, nil, `{"message":"Forbidden","type":"invalid_request_error"}`, false},
		{TypeOpenAI, 429, nil, `{"error":{"code":"invalid_api_key"}}`, false},
		{TypeOpenAI, 500, nil, `{"error":{"code":"invalid_api_key"}}`, false},
	} {
		p := providerOf(t, c.typ)
		ue := &upstream.Error{Code: upstream.CodeStatus, StatusCode: c.status, Header: c.header, Body: []byte(c.body)}
		if c.header == nil {
			ue.Header = http.Header{}
		}
		if got := keyRefused(p, ue); got != c.want {
			t.Errorf("%s %d %s: %v, want %v", c.typ, c.status, c.body, got, c.want)
		}
	}
}

// FuzzCredentialFault: any error body of any status, in any provider
// type's reading, is judged without a panic, the same way twice; a 401 is
// always the key's fault, a 2xx or 5xx never.
func FuzzCredentialFault(f *testing.F) {
	for _, s := range []string{
		`{"error":{"code":403,"message":"x","status":"PERMISSION_DENIED","details":[{"reason":"API_KEY_INVALID"}]}}`,
		`[{"error":{"code":403,"message":"Your API key was reported as leaked."}}]`,
		`{"type":"error","error":{"type":"permission_error","message":"no"}}`,
		`{"__type":"x#UnrecognizedClientException"}`,
		`{"error":"text"}`, `[]`, `[1]`, `{"details":[{"reason":1}]}`, `null`, ``, `{`,
	} {
		f.Add(403, s)
		f.Add(400, s)
	}
	rows := []*Provider{providerOf(f, TypeOpenAI), providerOf(f, TypeAnthropic), providerOf(f, TypeGemini), providerOf(f, TypeBedrock)}
	f.Fuzz(func(t *testing.T, status int, body string) {
		for _, p := range rows {
			ue := &upstream.Error{Code: upstream.CodeStatus, StatusCode: status, Header: http.Header{}, Body: []byte(body)}
			got := keyRefused(p, ue)
			if got != keyRefused(p, ue) {
				t.Fatalf("%s %d %q: judged two ways", p.Type, status, body)
			}
			switch {
			case status == 401 && !got:
				t.Fatalf("%s: a 401 left the key in", p.Type)
			case (status < 300 || status >= 500) && got:
				t.Fatalf("%s %d %q: the key was blamed", p.Type, status, body)
			}
		}
	})
}

// TestCredentialFaultByProvider: for each provider, the structured error
// (type, code, Google's status and reasons, AWS's exception name) decides
// whether a refusal is the key's; a type that names the request decides
// too, whatever its message says; the message is read only for a 403
// whose structure says neither (the last resort), and never for a 400.
func TestCredentialFaultByProvider(t *testing.T) {
	amzn := func(typ string) http.Header {
		return http.Header{"X-Amzn-Errortype": {typ + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}}
	}
	type fault struct {
		status int
		header http.Header
		body   string
		want   bool
	}
	for typ, cases := range map[string][]fault{
		TypeAnthropic: {
			{401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, true},
			{403, nil, `{"type":"error","error":{"type":"authentication_error","message":"x"}}`, true},
			{403, nil, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, false},
			{403, nil, `{"type":"error","error":{"type":"permission_error","message":"invalid api key for this workspace's model"}}`, false},
			{403, nil, `<html>Forbidden</html>`, false},
			{400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"invalid api key quoted in messages[0]"}}`, false},
		},
		TypeOpenAI: {
			{401, nil, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, true},
			{403, nil, `{"error":{"message":"x","type":"invalid_request_error","code":"invalid_api_key"}}`, true},
			{403, nil, `{"error":{"message":"Country, region, or territory not supported; incorrect api key","type":"request_forbidden","code":"unsupported_country_region_territory"}}`, false},
			{403, nil, `{"error":{"message":"You have insufficient permissions for this operation. Missing scopes: model.request.","type":"invalid_request_error"}}`, true},
			{403, nil, `{"error":{"message":"You are not allowed to sample from this model","type":"invalid_request_error"}}`, false},
			{400, nil, `{"error":{"message":"invalid api key in the text","type":"invalid_request_error"}}`, false},
		},
		TypeGemini: {
			{400, nil, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, true},
			{400, nil, `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}`, false},
			{401, nil, `{"error":{"code":401,"message":"x","status":"UNAUTHENTICATED"}}`, true},
			{403, nil, `{"error":{"code":403,"message":"x","status":"PERMISSION_DENIED","details":[{"reason":"API_KEY_SERVICE_BLOCKED"}]}}`, true},
			{403, nil, `{"error":{"code":403,"message":"x","status":"PERMISSION_DENIED","details":[{"reason":"CONSUMER_SUSPENDED"}]}}`, true},
			{403, nil, `{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}`, false},
			{403, nil, `{"error":{"code":403,"message":"Your API key was reported as leaked. Please use another API key.","status":"PERMISSION_DENIED"}}`, true},
		},
		TypeBedrock: {
			{403, amzn("UnrecognizedClientException"), `{"message":"The security token included in the request is invalid."}`, true},
			{403, nil, `{"__type":"com.amazon.coral.service#ExpiredTokenException","message":"x"}`, true},
			{403, amzn("AccessDeniedException"), `{"message":"You don't have access to the model with the specified model ID."}`, false},
			{403, amzn("AccessDeniedException"), `{"message":"The security token included in the request is invalid."}`, true},
			{403, amzn("ValidationException"), `{"message":"authentication failed for the input's field"}`, false},
			{400, amzn("ValidationException"), `{"message":"Malformed input request"}`, false},
			{400, amzn("IncompleteSignature"), `{"message":"x"}`, true},
		},
		TypeMistral: {
			{401, nil, `{"message":"Unauthorized","request_id":"r"}`, true},
			{403, nil, `{"message":"Forbidden","type":"invalid_request_error"}`, false},
		},
	} {
		t.Run(typ, func(t *testing.T) {
			p := providerOf(t, typ)
			for _, c := range cases {
				h := c.header
				if h == nil {
					h = http.Header{}
				}
				ue := &upstream.Error{Code: upstream.CodeStatus, StatusCode: c.status, Header: h, Body: []byte(c.body)}
				if got := keyRefused(p, ue); got != c.want {
					t.Errorf("%d %v %s: %v, want %v", c.status, c.header, c.body, got, c.want)
				}
			}
		})
	}
}
