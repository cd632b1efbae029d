package gateway

import (
	"encoding/json"
	"fmt"
	"io"
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
	// Type is the name of a row of the provider table that ctxkit can
	// call (types), or TypeMock.
	Type string `json:"type"`
	// BaseURL is where the provider's API lives: for openai, deepseek and
	// mistral the URL that /chat/completions is appended to (including any
	// /v1); for anthropic the URL /v1/messages is appended to; for gemini
	// the URL /v1beta/models/{model}:streamGenerateContent is appended to;
	// for bedrock the runtime endpoint /model/{model}/converse-stream is
	// appended to; none for a mock.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the provider's API
	// key. The key is sent only to this provider (as its own header:
	// Authorization: Bearer for openai, deepseek, mistral and bedrock API
	// keys; x-api-key for anthropic; x-goog-api-key for gemini). A
	// provider has either APIKeyEnv or Keys.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// API chooses, for type openai, the API ctxkit calls: "chat" (the
	// default; POST {base}/chat/completions) or "responses" (POST
	// {base}/responses).
	API string `json:"api,omitempty"`
	// Models are the model names routed to this provider.
	Models []string `json:"models"`
	// Keys is a pool of keys used in turn by smooth weighted round-robin,
	// in place of APIKeyEnv. A key that gets 429 rests for the answer's
	// Retry-After (at most an hour) or else KeyCooldown; one that gets 401,
	// or a 403 whose error names the key (invalid, expired, leaked,
	// suspended), is taken out until the gateway restarts (and logged by
	// id). Any other 403 is about the request (a model the account may
	// not use, a region): the client gets it and the key stays.
	Keys []Key `json:"keys,omitempty"`
	// KeyCooldown is how long a key of Keys that got 429 without a
	// Retry-After rests (default 60s).
	KeyCooldown Duration `json:"key_cooldown,omitempty"`
	// Timeouts bound each request to this provider.
	Timeouts Timeouts `json:"timeouts,omitzero"`
	// Mock configures a provider of type mock, which answers in process.
	Mock *Mock `json:"mock,omitempty"`

	keys   *keyPool
	redact func(string) string // takes every key of the pool out of text
	row    wire.Provider       // the type's row of the provider table
	mock   *mockTransport      // the upstream of a provider of type mock; nil for the others
}

// checkModels checks p's models, at path at, and notes them in models
// (model name → provider name).
func (p *Provider) checkModels(at string, models map[string]string) error {
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
	return nil
}

// Key is one key of a provider's pool, read from an environment
// variable or a file (one of the two; a file is read once, at start, and
// trimmed).
type Key struct {
	// ID names the key in logs and metrics (never the key itself):
	// letters, digits, '_', '.', '-'; default "key<N>", N counting from 1.
	ID     string `json:"id,omitempty"`
	Env    string `json:"env,omitempty"`
	File   string `json:"file,omitempty"`
	Weight int    `json:"weight,omitempty"` // its share of the requests, 1 to 1000; default 1
}

// Timeouts bound a request to one provider: connecting (default 10s), the
// answer's headers and first byte (default 60s), the silence between two
// reads of a stream (default: the gateway's IdleTimeout, 10m), the whole
// attempt, its answer included (default: the gateway's MaxDuration, 1h).
// Zero takes the default.
type Timeouts struct {
	Connect   Duration `json:"connect,omitempty"`
	FirstByte Duration `json:"first_byte,omitempty"`
	Idle      Duration `json:"idle,omitempty"`
	Total     Duration `json:"total,omitempty"`
}

// Route maps a model name clients send to targets tried in order. The
// next target is tried when one fails to connect, sends no first byte in
// time, or answers 429, 500, 502, 503, 504 or 529 — and only while the
// client has got nothing. A target whose keys all rest is skipped. When
// every target failed the client gets the last one's failure.
type Route struct {
	Model   string   `json:"model"`
	Targets []Target `json:"targets"`
	// MaxAttempts bounds the requests sent upstream (default: one per
	// target; at most the number of targets); MaxTime the time until an
	// attempt answers, all attempts together: no attempt starts past it,
	// and one still waiting for its first byte then is cut. An answer
	// that has begun is bounded by its provider's timeouts.
	MaxAttempts int      `json:"max_attempts,omitempty"`
	MaxTime     Duration `json:"max_time,omitempty"`
	// Record keeps every exchange of the route in the store.
	Record bool `json:"record,omitempty"`
}

// Target is one provider and model a route may send a request to.
type Target struct {
	Provider string `json:"provider"`
	Model    string `json:"model"` // the upstream's name of the model
	// Params override request parameters for this target: max_tokens,
	// temperature (0 to 2), top_p (0 to 1), stop (a string or up to 16),
	// reasoning_effort (minimal, low, medium, high).
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
	// LongContext, when set, prices every token of a request whose prompt
	// is longer than its AboveTokens, as Google and Anthropic bill their
	// long-context models.
	LongContext *LongContext `json:"long_context,omitempty"`
}

// LongContext is a price for requests with a long prompt: more than
// AboveTokens input tokens, cached ones included.
type LongContext struct {
	AboveTokens int64   `json:"above_tokens"`
	Input       float64 `json:"input"`
	Output      float64 `json:"output"`
	CacheRead   float64 `json:"cache_read,omitempty"`
	CacheWrite  float64 `json:"cache_write,omitempty"`
	Reasoning   float64 `json:"reasoning,omitempty"`
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

	prices prices            // Prices by provider name, once checked
	routes map[string]*route // by client model name: Routes and every provider model
}

// LoadConfig reads a configuration file: JSON, or YAML (a file whose name
// ends in .yaml or .yml), of at most 4 MiB. Every provider needs a name, a
// known type, an http(s) base URL and at least one model (a mock provider
// needs no URL); a model may be routed to one provider only; the API key
// variables must be set. A field the configuration does not define, a key
// given twice and a value of the wrong type are errors. Every error is a
// *ConfigError naming the file, the line and column of the field at fault
// and its path: "gateway.yaml:7:5: providers[0].base_url: ...".
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	format := formatJSON
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		format = formatYAML
	}
	return parseConfig(path, data, format, os.Getenv)
}

func (c *Config) check(getenv func(string) string) error {
	if len(c.Providers) == 0 {
		return fmt.Errorf("providers: none configured")
	}
	models := map[string]string{}
	names := map[string]bool{}
	byName := map[string]*Provider{}
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
		if p.Mock != nil && p.Type != TypeMock {
			return fmt.Errorf("%s.mock: only a provider of type mock takes mock settings", at)
		}
		if p.Type == TypeMock {
			// The mock answers as a Chat Completions server does.
			row, _ := providers.Lookup(TypeOpenAI)
			if err := p.checkMock(at, row); err != nil {
				return err
			}
			if err := p.checkModels(at, models); err != nil {
				return err
			}
			if err := p.checkTimeouts(at); err != nil {
				return err
			}
			// A route may fall back to a mock, or from one: fallbacks
			// can be tried offline.
			byName[p.Name] = p
			continue
		}
		row, ok := providers.Lookup(p.Type)
		if !ok || row.Upstream == nil {
			return fmt.Errorf("%s.type: %q is not one of %s", at, p.Type, strings.Join(append(types[:len(types):len(types)], TypeMock), ", "))
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
		if err := p.checkModels(at, models); err != nil {
			return err
		}
		if err := p.checkKeys(at, getenv); err != nil {
			return err
		}
		byName[p.Name] = p
	}
	routes, err := compileRoutes(c, byName, models)
	if err != nil {
		return err
	}
	c.routes = routes
	if err := c.checkPrices(names); err != nil {
		return err
	}
	return c.checkRecords()
}

// maxKeys bounds a provider's pool; maxKeyFile the size of a key file.
const (
	maxKeys    = 64
	maxKeyFile = 64 << 10
)

// checkKeys reads p's key (api_key_env) or keys, checks its key_cooldown
// and timeouts, and builds its pool and redactor.
func (p *Provider) checkKeys(at string, getenv func(string) string) error {
	switch {
	case p.APIKeyEnv != "" && len(p.Keys) > 0:
		return fmt.Errorf("%s.keys: either api_key_env or keys, not both", at)
	case p.APIKeyEnv == "" && len(p.Keys) == 0:
		return fmt.Errorf("%s.api_key_env: required (the variable holding the provider's key), or keys", at)
	case len(p.Keys) > maxKeys:
		return fmt.Errorf("%s.keys: at most %d keys", at, maxKeys)
	case p.KeyCooldown != 0 && len(p.Keys) == 0:
		return fmt.Errorf("%s.key_cooldown: only for a pool of keys", at)
	case p.KeyCooldown != 0 && time.Duration(p.KeyCooldown) < time.Second || time.Duration(p.KeyCooldown) > maxKeyCooldown:
		return fmt.Errorf("%s.key_cooldown: from 1s to %v", at, maxKeyCooldown)
	}
	if err := p.checkTimeouts(at); err != nil {
		return err
	}
	pool := &keyPool{managed: len(p.Keys) > 0, cooldown: time.Duration(p.KeyCooldown)}
	if pool.cooldown == 0 {
		pool.cooldown = defaultKeyCooldown
	}
	var redactors []*secret.Redactor
	add := func(id, key string, weight int) {
		pool.keys = append(pool.keys, newPoolKey(p.row, id, key, weight))
		redactors = append(redactors, secret.New(key))
	}
	if p.APIKeyEnv != "" {
		key := getenv(p.APIKeyEnv)
		if key == "" {
			return fmt.Errorf("%s.api_key_env: %s is not set", at, p.APIKeyEnv)
		}
		if controls(key) {
			return fmt.Errorf("%s.api_key_env: %s holds control characters (a stray newline?)", at, p.APIKeyEnv)
		}
		add("key1", key, 1)
	}
	ids := map[string]bool{}
	for j, kc := range p.Keys {
		kat := fmt.Sprintf("%s.keys[%d]", at, j)
		id := kc.ID
		if id == "" {
			id = fmt.Sprintf("key%d", j+1)
		} else if !keyID().MatchString(id) {
			return fmt.Errorf("%s.id: %q is not an id of letters, digits, '_', '.' and '-' (at most 64)", kat, id)
		}
		if ids[id] {
			return fmt.Errorf("%s.id: %q is used twice", kat, id)
		}
		ids[id] = true
		if kc.Weight < 0 || kc.Weight > 1000 {
			return fmt.Errorf("%s.weight: from 1 to 1000", kat)
		}
		var key string
		switch {
		case kc.Env != "" && kc.File != "":
			return fmt.Errorf("%s: either env or file, not both", kat)
		case kc.Env != "":
			if key = getenv(kc.Env); key == "" {
				return fmt.Errorf("%s.env: %s is not set", kat, kc.Env)
			}
			if controls(key) {
				return fmt.Errorf("%s.env: %s holds control characters (a stray newline?)", kat, kc.Env)
			}
		case kc.File != "":
			data, err := readKeyFile(kc.File)
			if err != nil {
				return fmt.Errorf("%s.file: %w", kat, err)
			}
			if key = strings.TrimSpace(string(data)); key == "" {
				return fmt.Errorf("%s.file: %s is empty", kat, kc.File)
			}
			if controls(key) {
				return fmt.Errorf("%s.file: %s holds control characters (more than one line?)", kat, kc.File)
			}
		default:
			return fmt.Errorf("%s: env or file required (where the key is)", kat)
		}
		add(id, key, max(kc.Weight, 1))
	}
	p.keys = pool
	if len(redactors) == 1 {
		p.redact = redactors[0].Redact
	} else {
		p.redact = func(s string) string {
			for _, r := range redactors {
				s = r.Redact(s)
			}
			return s
		}
	}
	return nil
}

// checkTimeouts checks p's timeouts: each at least 1ms, or none.
func (p *Provider) checkTimeouts(at string) error {
	for _, t := range []struct {
		name string
		d    Duration
	}{{"connect", p.Timeouts.Connect}, {"first_byte", p.Timeouts.FirstByte}, {"idle", p.Timeouts.Idle}, {"total", p.Timeouts.Total}} {
		if t.d != 0 && time.Duration(t.d) < time.Millisecond {
			return fmt.Errorf("%s.timeouts.%s: at least 1ms (0 or none: the default)", at, t.name)
		}
	}
	return nil
}

// newPoolKey is key, named id, with the headers row sends it in.
func newPoolKey(row wire.Provider, id, key string, weight int) *poolKey {
	k := &poolKey{id: id, weight: weight, header: http.Header{"Content-Type": {"application/json"}}}
	row.Upstream.SetHeader(k.header, key)
	if u := row.Upstream.Unary; u != nil {
		k.unary = http.Header{"Content-Type": {"application/json"}}
		u.SetHeader(k.unary, key)
	}
	return k
}

// readKeyFile reads a key file of at most maxKeyFile bytes.
func readKeyFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a key", name, maxKeyFile)
	}
	return data, nil
}

// controls reports whether key holds a control character (a header value
// cannot).
func controls(key string) bool {
	return strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
