package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/secret"
	"github.com/ctxkit/ctxkit/wire"
	"github.com/ctxkit/ctxkit/wire/providers"
)

// Provider types: the upstream's wire format, the name of its row in the
// provider table (wire/providers).
const (
	TypeOpenAI    = "openai"
	TypeAnthropic = "anthropic"
	TypeGemini    = "gemini"
	TypeBedrock   = "bedrock"
	TypeMistral   = "mistral"
	TypeDeepSeek  = "deepseek"
)

// types are the formats of the provider table that ctxkit can call.
var types = providers.Upstreams()

// Provider is one upstream.
type Provider struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// BaseURL is where the provider's API lives: for openai, deepseek and
	// mistral the URL that /chat/completions is appended to (including any
	// /v1); for anthropic the URL /v1/messages is appended to; for gemini
	// the URL /v1beta/models/{model}:streamGenerateContent is appended to;
	// for bedrock the runtime endpoint /model/{model}/converse-stream is
	// appended to.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the provider's API
	// key. The key is sent only to this provider (as its own header:
	// Authorization: Bearer for openai, deepseek, mistral and bedrock API
	// keys; x-api-key for anthropic; x-goog-api-key for gemini).
	APIKeyEnv string `json:"api_key_env"`
	// API chooses, for type openai, the API ctxkit calls: "chat" (the
	// default; POST {base}/chat/completions) or "responses" (POST
	// {base}/responses).
	API string `json:"api,omitempty"`
	// Models are the model names routed to this provider.
	Models []string `json:"models"`
	// Keys is a pool of keys used in turn by weighted round-robin, in
	// place of APIKeyEnv.
	Keys []Key `json:"keys,omitempty"`
	// KeyCooldown is how long a key that got 429 without a Retry-After
	// rests.
	KeyCooldown Duration `json:"key_cooldown,omitempty"`
	// Timeouts bound each request to this provider.
	Timeouts Timeouts `json:"timeouts,omitzero"`
	// Mock configures a provider of type mock, which answers in process.
	Mock *Mock `json:"mock,omitempty"`

	key    string
	redact func(string) string // takes key out of text
	row    wire.Provider       // the type's row of the provider table
	header http.Header         // of every streamed request: the key's, Accept, Content-Type
	unary  http.Header         // of every request not streamed; nil when the row has no Unary call
}

// Key is one key of a provider's pool, read from an environment
// variable or a file (one of the two).
type Key struct {
	ID     string `json:"id,omitempty"` // names the key in logs and metrics (never the key itself); default "key<N>"
	Env    string `json:"env,omitempty"`
	File   string `json:"file,omitempty"`
	Weight int    `json:"weight,omitempty"` // default 1
}

// Timeouts bound a request to one provider: connecting, the first byte of
// the answer, the silence between two events of a stream, the whole
// attempt. Zero takes the gateway's default.
type Timeouts struct {
	Connect   Duration `json:"connect,omitempty"`
	FirstByte Duration `json:"first_byte,omitempty"`
	Idle      Duration `json:"idle,omitempty"`
	Total     Duration `json:"total,omitempty"`
}

// Route maps a model name clients send to targets tried in order.
type Route struct {
	Model   string   `json:"model"`
	Targets []Target `json:"targets"`
	// MaxAttempts bounds the targets tried (default: every target once);
	// MaxTime the time all attempts together may take.
	MaxAttempts int      `json:"max_attempts,omitempty"`
	MaxTime     Duration `json:"max_time,omitempty"`
	// Record keeps every exchange of the route in the store.
	Record bool `json:"record,omitempty"`
}

// Target is one provider and model a route may send a request to.
type Target struct {
	Provider string `json:"provider"`
	Model    string `json:"model"` // the upstream's name of the model
	// Params override request parameters (temperature, max_tokens, ...)
	// for this target.
	Params map[string]json.RawMessage `json:"params,omitempty"`
}

// Price is what a provider charges for a model, in US dollars per million
// tokens of each kind.
type Price struct {
	Provider   string  `json:"provider"`
	Model      string  `json:"model"`
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read,omitempty"`
	CacheWrite float64 `json:"cache_write,omitempty"`
	Reasoning  float64 `json:"reasoning,omitempty"`
}

// Records tunes the traffic records of routes that keep them.
type Records struct {
	TTL   Duration `json:"ttl,omitempty"`   // how long a record is kept, default 7 days
	Queue int      `json:"queue,omitempty"` // records waiting to be written; past it they are dropped and counted
}

// Duration is a length of time in a configuration file, written as Go
// writes it ("30s", "1m30s", "250ms").
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration such as \"30s\"", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Config is the gateway's configuration file.
type Config struct {
	Providers []Provider `json:"providers"`
	Routes    []Route    `json:"routes,omitempty"`
	Prices    []Price    `json:"prices,omitempty"`
	Records   Records    `json:"records,omitzero"`
}

// LoadConfig reads a configuration file: JSON, or YAML (a file whose name
// ends in .yaml or .yml). Every provider needs a name, a known type, an
// http(s) base URL and at least one model; a model may be routed to one
// provider only; the API key variables must be set.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		if data, err = yamlToJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.check(os.Getenv); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

func (c *Config) check(getenv func(string) string) error {
	if len(c.Providers) == 0 {
		return fmt.Errorf("providers: none configured")
	}
	models := map[string]string{}
	names := map[string]bool{}
	for i := range c.Providers {
		p := &c.Providers[i]
		at := fmt.Sprintf("providers[%d]", i)
		if p.Name == "" {
			return fmt.Errorf("%s.name: required", at)
		}
		if names[p.Name] {
			return fmt.Errorf("%s.name: %q is used twice", at, p.Name)
		}
		names[p.Name] = true
		row, ok := providers.Lookup(p.Type)
		if !ok || row.Upstream == nil {
			return fmt.Errorf("%s.type: %q is not one of %s", at, p.Type, strings.Join(types, ", "))
		}
		switch {
		case p.API == "" || p.API == "chat" && p.Type == TypeOpenAI:
		case p.API == "responses" && p.Type == TypeOpenAI:
			// Newer OpenAI models are offered through the Responses API
			// only: the same provider, another row of the table.
			if row, ok = providers.Lookup("responses"); !ok {
				return fmt.Errorf("%s.api: the Responses API is not available in this build", at)
			}
		case p.Type != TypeOpenAI:
			return fmt.Errorf("%s.api: only a provider of type openai chooses its API", at)
		default:
			return fmt.Errorf("%s.api: %q is not one of chat, responses", at, p.API)
		}
		p.row = row
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s.base_url: %q is not an http(s) URL", at, p.BaseURL)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("%s.base_url: no query, fragment or credentials (ctxkit appends the API's path; keys go in api_key_env)", at)
		}
		p.BaseURL = strings.TrimRight(p.BaseURL, "/")
		if len(p.Models) == 0 {
			return fmt.Errorf("%s.models: at least one model", at)
		}
		for _, m := range p.Models {
			if m == "" {
				return fmt.Errorf("%s.models: an empty model name", at)
			}
			if other, ok := models[m]; ok {
				return fmt.Errorf("%s.models: %q is already routed to %s", at, m, other)
			}
			models[m] = p.Name
		}
		if p.APIKeyEnv == "" {
			return fmt.Errorf("%s.api_key_env: required (the variable holding the provider's key)", at)
		}
		if p.key = getenv(p.APIKeyEnv); p.key == "" {
			return fmt.Errorf("%s.api_key_env: %s is not set", at, p.APIKeyEnv)
		}
		if strings.ContainsFunc(p.key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("%s.api_key_env: %s holds control characters (a stray newline?)", at, p.APIKeyEnv)
		}
		p.redact = secret.New(p.key).Redact
		p.header = http.Header{"Content-Type": {"application/json"}}
		row.Upstream.SetHeader(p.header, p.key)
		if u := row.Upstream.Unary; u != nil {
			p.unary = http.Header{"Content-Type": {"application/json"}}
			u.SetHeader(p.unary, p.key)
		}
	}
	return c.checkRecords()
}
