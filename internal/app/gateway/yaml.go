package gateway

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// yamlToJSON turns a YAML configuration into JSON, so both go through the
// same strict decoding. Keys must be strings.
func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	v, err := jsonable(v, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func jsonable(v any, at string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			y, err := jsonable(x, at+"."+k)
			if err != nil {
				return nil, err
			}
			v[k] = y
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%s: key %v is not a string", at, k)
			}
			y, err := jsonable(x, at+"."+ks)
			if err != nil {
				return nil, err
			}
			out[ks] = y
		}
		return out, nil
	case []any:
		for i, x := range v {
			y, err := jsonable(x, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			v[i] = y
		}
		return v, nil
	}
	return v, nil
}
