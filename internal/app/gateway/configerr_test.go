package gateway_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/app/gateway"
)

// TestConfigErrorsNameTheLine: every fault of a configuration file, JSON
// or YAML, names the file, the line and column of the field at fault and
// its path: a bad value, a missing field (the place of its object), an
// unknown field, a value of the wrong type, a key given twice, bad
// syntax.
func TestConfigErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CTXKIT_TEST_KEY", "k")
	const goodYAML = `# a gateway
providers:
  - name: demo
    type: mock
    models: [demo-model]
  - name: up
    type: openai
    base_url: http://127.0.0.1:1/v1
    api_key_env: CTXKIT_TEST_KEY
    models:
      - m1
      - m2
`
	for _, c := range []struct {
		name, file, body, want string
	}{
		{"bad url", "g.yaml", strings.Replace(goodYAML, "http://127.0.0.1:1/v1", "ftp://x", 1),
			`g.yaml:8:5: providers[1].base_url: "ftp://x" is not an http(s) URL`},
		{"bad url json", "g.json", "{\n  \"providers\": [\n    {\"name\": \"a\", \"type\": \"openai\",\n     \"base_url\": \"ftp://x\", \"api_key_env\": \"CTXKIT_TEST_KEY\", \"models\": [\"m\"]}\n  ]\n}\n",
			`g.json:4:6: providers[0].base_url: "ftp://x" is not an http(s) URL`},
		{"missing name", "g.yaml", strings.Replace(goodYAML, "  - name: up\n    type", "  - type", 1),
			`g.yaml:6:5: providers[1].name: required`},
		{"missing name json", "g.json", `{"providers": [{"type": "mock", "models": ["m"]}]}`,
			`g.json:1:16: providers[0].name: required`},
		{"unknown field", "g.yaml", strings.Replace(goodYAML, "    models: [demo-model]\n", "    models: [demo-model]\n    mokc: {}\n", 1),
			`g.yaml:6:5: providers[0].mokc: unknown field "mokc" (known fields: name, type, base_url, api_key_env, api, models, keys, key_cooldown, timeouts, mock)`},
		{"unknown nested field", "g.yaml", strings.Replace(goodYAML, "    models: [demo-model]\n", "    models: [demo-model]\n    mock:\n      errors:\n        - {status: 429, onn: 2}\n", 1),
			`g.yaml:8:25: providers[0].mock.errors[0].onn: unknown field "onn"`},
		{"unknown field json", "g.json", "{\"providers\": [{\"name\": \"a\", \"type\": \"mock\", \"models\": [\"m\"],\n \"extra\": 1}]}",
			`g.json:2:2: providers[0].extra: unknown field "extra"`},
		{"unknown top field", "g.yaml", goodYAML + "route:\n  - model: x\n",
			`g.yaml:13:1: route: unknown field "route" (known fields: providers, routes, prices, records)`},
		{"wrong type", "g.yaml", strings.Replace(goodYAML, "models: [demo-model]", "models: demo-model", 1),
			`g.yaml:5:5: providers[0].models: must be an array, not "demo-model"`},
		{"wrong element type", "g.yaml", strings.Replace(goodYAML, "      - m2", "      - {name: m2}", 1),
			`g.yaml:12:9: providers[1].models[1]: must be a string, not an object`},
		{"wrong number", "g.json", `{"providers": [{"name": "a", "type": "mock", "models": ["m"], "mock": {"chunk_words": 2.5}}]}`,
			`g.json:1:72: providers[0].mock.chunk_words: 2.5 is not an integer of 64 bits`},
		{"bad duration", "g.yaml", strings.Replace(goodYAML, "    models: [demo-model]\n", "    models: [demo-model]\n    mock: {latency: soon}\n", 1),
			`g.yaml:6:12: providers[0].mock.latency: "soon" is not a duration such as "30s"`},
		{"duplicate key json", "g.json", "{\"providers\": [{\"name\": \"a\", \"type\": \"mock\",\n \"name\": \"b\", \"models\": [\"m\"]}]}",
			`g.json:1:17: providers[0].name: `},
		{"duplicate key yaml", "g.yaml", strings.Replace(goodYAML, "    type: mock\n", "    type: mock\n    name: again\n", 1),
			`g.yaml:5: mapping key "name" already defined at line 3`},
		{"yaml syntax", "g.yaml", "providers:\n  - name: [a\n    type: mock\n",
			`g.yaml: yaml: line 1: did not find expected ',' or ']'`},
		{"json syntax", "g.json", "{\"providers\": [\n  {\"name\": \"a\",, \"type\": \"mock\"}]}",
			`g.json:2:16: invalid character ','`},
		{"no providers", "g.yaml", "providers: []\n", `g.yaml:1:1: providers: none configured`},
		{"empty file", "g.json", "", `g.json: empty input`},
		{"mock text", "g.yaml", strings.Replace(goodYAML, "    models: [demo-model]\n", "    models: [demo-model]\n    mock:\n      tools: maybe\n", 1),
			`g.yaml:7:7: providers[0].mock.tools: "maybe" is not one of call, never`},
		{"non-string key", "g.yaml", "providers:\n  - name: a\n    1: x\n", `g.yaml:2:5: providers[0]: key 1 is not a string`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := gateway.LoadConfig(path)
			var ce *gateway.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v (%T), want a *ConfigError", err, err)
			}
			got := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("\n got %s\nwant %s…", got, c.want)
			}
		})
	}
}

// TestConfigYAMLAliases: a field reached through a merge key or an alias
// is placed where it is written.
func TestConfigYAMLAliases(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{"providers:\n  - <<: &base {type: mock, mock: {tools: maybe}}\n    name: demo\n    models: [m]\n",
			`g.yaml:2:35: providers[0].mock.tools: "maybe"`},
		{"providers:\n  - name: demo\n    type: mock\n    models: &ms [m]\n  - name: again\n    type: mock\n    models: *ms\n",
			`g.yaml:7:5: providers[1].models: "m" is already routed to demo`},
	} {
		path := filepath.Join(dir, "g.yaml")
		os.WriteFile(path, []byte(c.body), 0o600)
		_, err := gateway.LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// TestConfigLimits: a configuration past its bounds is refused, naming
// the bound.
func TestConfigLimits(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, body, want string }{
		{"too large", `{"providers":[` + strings.Repeat(" ", 5<<20) + `]}`, "more than 4194304"},
		{"too deep", `{"providers":[{"name":"a","type":"mock","models":["m"],"mock":{"errors":[{"message":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}]}}]}`, "deeper than 64"},
	} {
		path := filepath.Join(dir, "g.json")
		os.WriteFile(path, []byte(c.body), 0o600)
		if _, err := gateway.LoadConfig(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
