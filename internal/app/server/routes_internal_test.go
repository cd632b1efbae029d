package server

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// TestRouteTable: the mux serves exactly the table's routes, and
// /openapi.json documents exactly them, each with the table's summary and
// statuses; a route without an OpenAPI entry, or an entry naming a schema
// or parameter the components lack, fails here. With and without the
// gateway, whose routes exist only when it is configured.
func TestRouteTable(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	for _, g := range []*gateway.Gateway{nil, gateway.New(&gateway.Config{}, gateway.Options{})} {
		s := New(Options{Key: key, Gateway: g})
		rows := s.routeTable()

		// The mux holds the table's patterns and the catch-all, nothing else.
		want := map[string]bool{"/": true}
		for i := range rows {
			want[rows[i].pattern()] = true
		}
		for p := range s.mux.patterns {
			if !want[p] {
				t.Errorf("%s is routed outside the route table", p)
			}
		}
		for p := range want {
			if !s.mux.patterns[p] {
				t.Errorf("%s is in the route table but not routed", p)
			}
		}

		for i := range rows {
			rt := &rows[i]
			name := rt.method + " " + rt.path
			switch rt.auth {
			case authNone:
				// Only liveness, the API's description and the console (its
				// assets and the exchange of a login code) answer without a token.
				if !slices.Contains([]string{"GET /health", "GET /openapi.json", "GET /ui/", "POST /console/login"}, name) || rt.plain == nil || rt.role != "" {
					t.Errorf("%s: unauthenticated", name)
				}
			case authGateway:
				if !strings.HasPrefix(rt.path, "/v1/") && !strings.HasPrefix(rt.path, "/v1beta/") || rt.plain == nil || rt.role != "" {
					t.Errorf("%s: a gateway route must be under /v1/ (/v1beta/ for Gemini) with a plain handler and no role", name)
				}
			default:
				if rt.serve == nil || rt.plain != nil {
					t.Errorf("%s: a token route needs serve and no plain handler", name)
				}
				if rt.role != "" && !slices.Contains([]string{RoleCurator, RoleEmitter, RoleSubscriber}, rt.role) {
					t.Errorf("%s: role %q is not a role", name, rt.role)
				}
			}
			if !slices.ContainsFunc(rt.doc.Responses, func(r reply) bool { return r.Status/100 == 2 }) {
				t.Errorf("%s: its OpenAPI entry has no success reply", name)
			}
		}

		rec := httptest.NewRecorder()
		s.mux.ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("GET /openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
		}
		body := rec.Body.Bytes()
		var doc struct {
			OpenAPI    string `json:"openapi"`
			Components struct {
				Parameters map[string]json.RawMessage `json:"parameters"`
				Schemas    map[string]json.RawMessage `json:"schemas"`
				Responses  map[string]json.RawMessage `json:"responses"`
			} `json:"components"`
			Paths map[string]map[string]struct {
				Summary   string                     `json:"summary"`
				Responses map[string]json.RawMessage `json:"responses"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.OpenAPI != "3.1.0" {
			t.Errorf("openapi %q", doc.OpenAPI)
		}
		ops := 0
		for _, item := range doc.Paths {
			ops += len(item)
		}
		if ops != len(rows) {
			t.Errorf("the document has %d operations, the table %d routes", ops, len(rows))
		}
		for i := range rows {
			rt := &rows[i]
			op, ok := doc.Paths[rt.path][strings.ToLower(rt.method)]
			if !ok {
				t.Errorf("%s %s is not documented", rt.method, rt.path)
				continue
			}
			if op.Summary != rt.doc.Summary {
				t.Errorf("%s %s: summary %q, the table says %q", rt.method, rt.path, op.Summary, rt.doc.Summary)
			}
			var statuses []string
			for _, r := range rt.doc.Responses {
				statuses = append(statuses, strconv.Itoa(r.Status))
			}
			var documented []string
			for st := range op.Responses {
				documented = append(documented, st)
			}
			slices.Sort(statuses)
			slices.Sort(documented)
			if !slices.Equal(statuses, documented) {
				t.Errorf("%s %s: statuses %v, the table says %v", rt.method, rt.path, documented, statuses)
			}
		}

		// Every reference resolves, and every component is referenced:
		// none is left behind when a route goes.
		used := map[string]bool{}
		for _, m := range regexp.MustCompile(`"\$ref": "#/components/([A-Za-z]+)/([A-Za-z]+)"`).FindAllSubmatch(body, -1) {
			used[string(m[1])+"/"+string(m[2])] = true
		}
		kinds := map[string]map[string]json.RawMessage{"parameters": doc.Components.Parameters, "schemas": doc.Components.Schemas, "responses": doc.Components.Responses}
		for ref := range used {
			kind, name, _ := strings.Cut(ref, "/")
			if _, ok := kinds[kind][name]; !ok {
				t.Errorf("#/components/%s does not resolve", ref)
			}
		}
		if g != nil {
			for kind, names := range kinds {
				for name := range names {
					if !used[kind+"/"+name] {
						t.Errorf("components/%s/%s: no route refers to it", kind, name)
					}
				}
			}
		}
	}
}

// TestOpenAPIDocumentRefusesGaps: a route with no OpenAPI entry, or one
// naming a schema or parameter the components lack, is a build fault the
// document refuses.
func TestOpenAPIDocumentRefusesGaps(t *testing.T) {
	okReply := []reply{{Status: 200, Desc: "ok"}}
	for _, rt := range []route{
		{method: "GET", path: "/x"},
		{method: "GET", path: "/x", doc: operation{Summary: "x"}},
		{method: "GET", path: "/x", doc: operation{Responses: okReply}},
		{method: "GET", path: "/x", doc: operation{Summary: "x", Body: "Nothing", Responses: okReply}},
		{method: "GET", path: "/x", doc: operation{Summary: "x", Params: []string{"nothing"}, Responses: okReply}},
		{method: "GET", path: "/x", doc: operation{Summary: "x", Responses: []reply{{Status: 200, Desc: "ok", Schema: "Nothing"}}}},
		{method: "GET", path: "/x", doc: operation{Summary: "x", Responses: []reply{{Status: 200, Desc: "ok"}, {Status: 200}}}},
		{method: "GET", path: "/x", doc: operation{Summary: "x", Responses: []reply{{Status: 299, Desc: "ok"}}}},
	} {
		if _, err := openAPIDocument([]route{rt}); err == nil {
			t.Errorf("%+v: documented", rt.doc)
		}
	}
	for _, rp := range []reply{
		{Status: 200, Desc: "ok", Headers: []string{"X-Nothing"}},
		{Status: 200, Headers: []string{gateway.UpstreamHeader}},
		{Status: 200, Record: true, Headers: []string{gateway.UpstreamHeader}},
	} {
		if _, err := openAPIDocument([]route{{method: "GET", path: "/x", doc: operation{Summary: "x", Responses: []reply{rp}}}}); err == nil {
			t.Errorf("%+v: documented", rp)
		}
	}
	row := route{method: "GET", path: "/x", doc: operation{Summary: "x", Responses: okReply}}
	if _, err := openAPIDocument([]route{row, row}); err == nil {
		t.Error("a route twice: documented")
	}
	if _, err := openAPIDocument([]route{row}); err != nil {
		t.Errorf("a complete entry: %v", err)
	}
}
