package openai

import "encoding/json"

// parseChunk decodes data, a stream event's JSON, into c (zeroed), as
// json.Unmarshal would.
func parseChunk(data []byte, c *streamChunk) error {
	return json.Unmarshal(data, c)
}
