package bedrock

import "encoding/json"

// Request is the JSON body of a Converse or ConverseStream call (the two
// take the same body; the model id is in the URL, not the body).
type Request struct {
	Messages                     []Message            `json:"messages"`
	System                       []SystemContentBlock `json:"system,omitempty"`
	InferenceConfig              *InferenceConfig     `json:"inferenceConfig,omitempty"`
	ToolConfig                   *ToolConfig          `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields map[string]any       `json:"additionalModelRequestFields,omitempty"`

	// CacheState holds the cache point placements this request uses
	// under the "bedrock" caching strategy, to be passed back as
	// Options.State with the next turn of the conversation. It is not
	// part of the body. Without the strategy it is empty.
	CacheState CacheState `json:"-"`
}

// Message is one turn: role "user" or "assistant" and its content.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is a union: exactly one field is set.
type ContentBlock struct {
	Text             string                 `json:"text,omitempty"`
	Image            *ImageBlock            `json:"image,omitempty"`
	Document         *DocumentBlock         `json:"document,omitempty"`
	ToolUse          *ToolUseBlock          `json:"toolUse,omitempty"`
	ToolResult       *ToolResultBlock       `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContentBlock `json:"reasoningContent,omitempty"`
	CachePoint       *CachePointBlock       `json:"cachePoint,omitempty"`
}

// SystemContentBlock is a union of text and a cache point.
type SystemContentBlock struct {
	Text       string           `json:"text,omitempty"`
	CachePoint *CachePointBlock `json:"cachePoint,omitempty"`
}

// ImageBlock is {"format":"png","source":{"bytes":"<base64>"}}.
type ImageBlock struct {
	Format string      `json:"format"`
	Source ImageSource `json:"source"`
}

// ImageSource is a union: the image's bytes (base64 in JSON) or an S3
// location.
type ImageSource struct {
	Bytes      string      `json:"bytes,omitempty"`
	S3Location *S3Location `json:"s3Location,omitempty"`
}

// S3Location is an object in S3: "s3://bucket/key".
type S3Location struct {
	URI string `json:"uri"`
}

// DocumentBlock is a document with a format, a name and a source.
type DocumentBlock struct {
	Format    string          `json:"format,omitempty"`
	Name      string          `json:"name"`
	Source    DocumentSource  `json:"source"`
	Context   string          `json:"context,omitempty"`
	Citations json.RawMessage `json:"citations,omitempty"`
}

// DocumentSource is a union: bytes (base64 in JSON), text or an S3
// location.
type DocumentSource struct {
	Bytes      string      `json:"bytes,omitempty"`
	Text       string      `json:"text,omitempty"`
	S3Location *S3Location `json:"s3Location,omitempty"`
}

// ToolUseBlock is a tool call of the assistant.
type ToolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResultBlock is the result of a tool call. Status is "error" for a
// failed call and omitted otherwise.
type ToolResultBlock struct {
	ToolUseID string                   `json:"toolUseId"`
	Content   []ToolResultContentBlock `json:"content"`
	Status    string                   `json:"status,omitempty"`
}

// ToolResultContentBlock is a union of text, image and document.
type ToolResultContentBlock struct {
	Text     string         `json:"text,omitempty"`
	Image    *ImageBlock    `json:"image,omitempty"`
	Document *DocumentBlock `json:"document,omitempty"`
}

// ReasoningContentBlock is a union: reasoning text (with its signature)
// or redacted reasoning (base64 in JSON).
type ReasoningContentBlock struct {
	ReasoningText   *ReasoningTextBlock `json:"reasoningText,omitempty"`
	RedactedContent string              `json:"redactedContent,omitempty"`
}

// ReasoningTextBlock is reasoning text and the signature that lets the
// model verify it wrote it.
type ReasoningTextBlock struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// CachePointBlock marks the end of a prefix to cache: {"type":"default"},
// with an optional ttl ("5m" or "1h").
type CachePointBlock struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// InferenceConfig holds the generation parameters.
type InferenceConfig struct {
	MaxTokens     int      `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig holds the tools and the tool choice.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
}

// Tool is a union of a tool specification and a cache point.
type Tool struct {
	ToolSpec   *ToolSpecification `json:"toolSpec,omitempty"`
	CachePoint *CachePointBlock   `json:"cachePoint,omitempty"`
}

// ToolSpecification is a custom tool.
type ToolSpecification struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema ToolInputSchema `json:"inputSchema"`
}

// ToolInputSchema wraps the tool's JSON Schema: {"json": {...}}.
type ToolInputSchema struct {
	JSON json.RawMessage `json:"json"`
}

// ToolChoice is a union: {"auto":{}}, {"any":{}} or {"tool":{"name":...}}.
type ToolChoice struct {
	Auto *struct{}           `json:"auto,omitempty"`
	Any  *struct{}           `json:"any,omitempty"`
	Tool *SpecificToolChoice `json:"tool,omitempty"`
}

// SpecificToolChoice names the tool the model must call.
type SpecificToolChoice struct {
	Name string `json:"name"`
}

// ThinkingConfig is Claude's extended-thinking switch, sent in
// additionalModelRequestFields: {"type":"enabled","budget_tokens":N}.
type ThinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}
