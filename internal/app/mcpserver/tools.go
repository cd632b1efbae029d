package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ctxkit/ctxkit/envelope"
)

// outputSchema is every tool's output: an envelope.
const outputSchema = `{
  "type": "object",
  "required": ["meta", "items"],
  "properties": {
    "meta": {
      "type": "object",
      "required": ["status", "source", "freshness_state", "index_status"],
      "properties": {
        "status": {"enum": ["OK", "FALLBACK", "ERROR"]},
        "error_code": {"type": "string"},
        "message": {"type": "string"},
        "source": {"type": "string", "description": "RAG_GRAPH, LOCAL_FALLBACK, NONE, STORE or VIEW"},
        "freshness_state": {"enum": ["FRESH", "STALE", "UNKNOWN"]},
        "index_status": {
          "type": ["object", "null"],
          "properties": {
            "repo": {"type": "string"},
            "index_state": {"enum": ["fresh", "stale", "rebuilding", "error"]},
            "last_indexed_at": {"type": "string"},
            "last_indexed_commit": {"type": "string"},
            "schema_version": {"type": "integer"},
            "last_error": {"type": "string"}
          }
        }
      }
    },
    "items": {"type": "array", "items": {"type": "object"}}
  }
}`

type getArgs struct {
	ID string `json:"id"`
}

type searchArgs struct {
	Q          string   `json:"q"`
	Tags       []string `json:"tags"`
	SchemaName string   `json:"schema_name"`
	Limit      int      `json:"limit"`
}

type listArgs struct {
	Tags       []string `json:"tags"`
	SchemaName string   `json:"schema_name"`
	Limit      int      `json:"limit"`
	Cursor     string   `json:"cursor"`
}

type createArgs struct {
	Title           string          `json:"title"`
	Description     string          `json:"description,omitempty"`
	SemanticVersion string          `json:"semantic_version,omitempty"`
	Context         json.RawMessage `json:"context"`
	Tags            []string        `json:"tags,omitempty"`
	SchemaName      string          `json:"schema_name,omitempty"`
	LLMHints        json.RawMessage `json:"llm_hints,omitempty"`
	Visibility      string          `json:"visibility,omitempty"`
	Sensitivity     string          `json:"sensitivity,omitempty"`
	TTL             string          `json:"ttl,omitempty"`
}

type updateArgs struct {
	ID              string          `json:"id"`
	ExpectedVersion int64           `json:"expected_version"`
	Title           *string         `json:"title,omitempty"`
	Description     *string         `json:"description,omitempty"`
	SemanticVersion *string         `json:"semantic_version,omitempty"`
	Context         json.RawMessage `json:"context,omitempty"`
	Tags            *[]string       `json:"tags,omitempty"`
	SchemaName      *string         `json:"schema_name,omitempty"`
	LLMHints        json.RawMessage `json:"llm_hints,omitempty"`
	Visibility      *string         `json:"visibility,omitempty"`
	Sensitivity     *string         `json:"sensitivity,omitempty"`
}

type workspaceArgs struct {
	Repo  string `json:"repo"`
	Q     string `json:"q"`
	Limit int    `json:"limit"`
}

func needID(id string) error {
	if id == "" {
		return errors.New("id: required")
	}
	return nil
}

func limitQuery(v url.Values, limit int) {
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
}

var tools = []tool{
	{
		name:        "breadcrumb_get",
		description: "Get a breadcrumb's LLM view: its context as its llm_hints shape it for a model. Counts as a read.",
		input:       `{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","description":"breadcrumb id"}}}`,
		readOnly:    true,
		args:        func() any { return &getArgs{} },
		call: func(a any) (Call, error) {
			g := a.(*getArgs)
			if err := needID(g.ID); err != nil {
				return Call{}, err
			}
			return Call{Method: "GET", Path: "/breadcrumbs/" + url.PathEscape(g.ID)}, nil
		},
		wrap: viewReply,
	},
	{
		name: "breadcrumb_search",
		description: `Full-text search over breadcrumbs (title, tags, description and the view's text), best first. ` +
			`Syntax: words (all must match), "quoted phrases", OR between terms, -word to exclude, prefix*.`,
		input: `{"type":"object","additionalProperties":false,"required":["q"],"properties":{
"q":{"type":"string","description":"the query"},
"tags":{"type":"array","items":{"type":"string"},"description":"only breadcrumbs with all these tags"},
"schema_name":{"type":"string"},
"limit":{"type":"integer","minimum":1,"maximum":100}}}`,
		readOnly: true,
		args:     func() any { return &searchArgs{} },
		call: func(a any) (Call, error) {
			s := a.(*searchArgs)
			v := url.Values{"q": {s.Q}, "tag": s.Tags}
			if s.SchemaName != "" {
				v.Set("schema_name", s.SchemaName)
			}
			limitQuery(v, s.Limit)
			return Call{Method: "GET", Path: "/breadcrumbs/search", Query: v}, nil
		},
		wrap: passThrough,
	},
	{
		name:        "breadcrumb_list",
		description: "List breadcrumbs, newest first, without their context. The message holds the cursor of the next page, if any.",
		input: `{"type":"object","additionalProperties":false,"properties":{
"tags":{"type":"array","items":{"type":"string"}},
"schema_name":{"type":"string"},
"limit":{"type":"integer","minimum":1,"maximum":500},
"cursor":{"type":"string","description":"from the previous page's message"}}}`,
		readOnly: true,
		args:     func() any { return &listArgs{} },
		call: func(a any) (Call, error) {
			l := a.(*listArgs)
			v := url.Values{"tag": l.Tags}
			if l.SchemaName != "" {
				v.Set("schema_name", l.SchemaName)
			}
			if l.Cursor != "" {
				v.Set("cursor", l.Cursor)
			}
			limitQuery(v, l.Limit)
			return Call{Method: "GET", Path: "/breadcrumbs", Query: v}, nil
		},
		wrap: func(body []byte) ([]byte, error) {
			var page struct {
				Items      []json.RawMessage `json:"items"`
				NextCursor string            `json:"next_cursor"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				return nil, err
			}
			opts := []envelope.Option{envelope.WithSource(envelope.SourceStore)}
			if page.NextCursor != "" {
				opts = append(opts, envelope.WithMessage("next_cursor: "+page.NextCursor))
			}
			return json.Marshal(envelope.OK(page.Items, opts...))
		},
	},
	{
		name:        "breadcrumb_create",
		description: "Create a breadcrumb: a JSON context record with a title, tags and optional llm_hints. Returns its id and version.",
		input: `{"type":"object","additionalProperties":false,"required":["title","context"],"properties":{
"title":{"type":"string"},"description":{"type":"string"},"semantic_version":{"type":"string"},
"context":{"type":"object"},"tags":{"type":"array","items":{"type":"string"}},"schema_name":{"type":"string"},
"llm_hints":{"type":"object"},"visibility":{"enum":["team","private","public"]},
"sensitivity":{"enum":["low","pii","secret"]},"ttl":{"type":"string","description":"a duration such as 2h, or an RFC 3339 time"}}}`,
		args: func() any { return &createArgs{} },
		call: func(a any) (Call, error) {
			c := a.(*createArgs)
			if c.Title == "" {
				return Call{}, errors.New("title: required")
			}
			if len(c.Context) == 0 {
				return Call{}, errors.New("context: required, a JSON object")
			}
			body, err := json.Marshal(c)
			return Call{Method: "POST", Path: "/breadcrumbs", Body: body}, err
		},
		wrap: one(envelope.SourceStore),
	},
	{
		name: "breadcrumb_update",
		description: "Update a breadcrumb's fields (absent fields stay). expected_version makes it conditional: " +
			"the update fails with version_mismatch if the breadcrumb changed since. Returns its id and new version.",
		input: `{"type":"object","additionalProperties":false,"required":["id","expected_version"],"properties":{
"id":{"type":"string"},"expected_version":{"type":"integer","minimum":1},
"title":{"type":"string"},"description":{"type":"string"},"semantic_version":{"type":"string"},
"context":{"type":"object"},"tags":{"type":"array","items":{"type":"string"}},"schema_name":{"type":"string"},
"llm_hints":{"type":["object","null"]},"visibility":{"enum":["team","private","public"]},
"sensitivity":{"enum":["low","pii","secret"]}}}`,
		args: func() any { return &updateArgs{} },
		call: func(a any) (Call, error) {
			u := a.(*updateArgs)
			if err := needID(u.ID); err != nil {
				return Call{}, err
			}
			if u.ExpectedVersion < 1 {
				return Call{}, errors.New("expected_version: required, the version the update applies to")
			}
			patch := map[string]any{}
			set := func(k string, v any, present bool) {
				if present {
					patch[k] = v
				}
			}
			set("title", u.Title, u.Title != nil)
			set("description", u.Description, u.Description != nil)
			set("semantic_version", u.SemanticVersion, u.SemanticVersion != nil)
			set("context", u.Context, u.Context != nil)
			set("tags", u.Tags, u.Tags != nil)
			set("schema_name", u.SchemaName, u.SchemaName != nil)
			set("llm_hints", u.LLMHints, u.LLMHints != nil)
			set("visibility", u.Visibility, u.Visibility != nil)
			set("sensitivity", u.Sensitivity, u.Sensitivity != nil)
			body, err := json.Marshal(patch)
			return Call{Method: "PATCH", Path: "/breadcrumbs/" + url.PathEscape(u.ID), Body: body,
				Header: http.Header{"If-Match": {strconv.FormatInt(u.ExpectedVersion, 10)}}}, err
		},
		wrap: func(body []byte) ([]byte, error) {
			var b struct {
				ID      string `json:"id"`
				Version int64  `json:"version"`
			}
			if err := json.Unmarshal(body, &b); err != nil {
				return nil, err
			}
			return json.Marshal(envelope.OK([]any{b}, envelope.WithSource(envelope.SourceStore)))
		},
	},
	{
		name: "workspace_search",
		description: "Search the files of a repository the server may read. Answers from the index when it is fresh " +
			"(FRESH), else from disk (FALLBACK, with freshness STALE or UNKNOWN).",
		input: `{"type":"object","additionalProperties":false,"required":["repo","q"],"properties":{
"repo":{"type":"string","description":"the repository's name"},
"q":{"type":"string","description":"the query, in breadcrumb_search's syntax"},
"limit":{"type":"integer","minimum":1,"maximum":100}}}`,
		readOnly: true,
		args:     func() any { return &workspaceArgs{} },
		call: func(a any) (Call, error) {
			w := a.(*workspaceArgs)
			v := url.Values{"repo": {w.Repo}, "q": {w.Q}}
			limitQuery(v, w.Limit)
			return Call{Method: "GET", Path: "/workspace/search", Query: v}, nil
		},
		wrap: passThrough,
	},
}

// viewReply wraps a view (GET /breadcrumbs/{id}): OK with source VIEW when
// every rule ran; FALLBACK (source LOCAL_FALLBACK, as every fallback) when
// a rule failed and the item is the filtered context instead, with the
// reason. The breadcrumb itself is the current version either way: FRESH.
func viewReply(body []byte) ([]byte, error) {
	var v struct {
		ID   string `json:"id"`
		Meta struct {
			Status  envelope.Status `json:"status"`
			Message string          `json:"message"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	items := []json.RawMessage{bytes.TrimSpace(body)}
	if v.Meta.Status == envelope.StatusFallback {
		return json.Marshal(envelope.Fallback(items, envelope.WithFreshness(envelope.Fresh),
			envelope.WithMessage("the view of "+v.ID+" fell back to its filtered context: "+v.Meta.Message)))
	}
	return json.Marshal(envelope.OK(items, envelope.WithSource(envelope.SourceView)))
}
