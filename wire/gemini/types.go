package gemini

import (
	"encoding/json"
	"strings"
)

// Request is the body of a Gemini generateContent (or
// streamGenerateContent) request.
type Request struct {
	// Model and Stream are not part of the body: they choose the endpoint
	// (see Path).
	Model  string `json:"-"`
	Stream bool   `json:"-"`

	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	// SafetySettings and CachedContent are carried as they came from a
	// Gemini client (the field policy: wire.Carries).
	SafetySettings json.RawMessage `json:"safetySettings,omitempty"`
	CachedContent  json.RawMessage `json:"cachedContent,omitempty"`
	Labels         json.RawMessage `json:"labels,omitempty"`
	ServiceTier    json.RawMessage `json:"serviceTier,omitempty"`
}

// Path is the endpoint of the request relative to the API version root
// (https://generativelanguage.googleapis.com/v1beta/):
// "models/{model}:generateContent", or
// "models/{model}:streamGenerateContent?alt=sse" when Stream is set. A model
// name that already holds a slash ("models/x", "tunedModels/y") is used as
// it is.
func (r *Request) Path() string {
	model := r.Model
	if !strings.Contains(model, "/") {
		model = "models/" + model
	}
	if r.Stream {
		return model + ":streamGenerateContent?alt=sse"
	}
	return model + ":generateContent"
}

// Content is one turn of contents[] (role "user" or "model"), or the
// system instruction (no role).
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one part of a turn. Exactly one of Text, InlineData, FileData,
// FunctionCall and FunctionResponse is its data; a part with none of the
// others is a text part and is written with "text" even when the text is
// empty (a part that only carries a thought signature). Thought marks a
// thought (reasoning) part; ThoughtSignature may ride on any part.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// Blob is inline base64 data: {"mimeType","data"}.
type Blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData is data referred to by URI: {"mimeType","fileUri"}.
type FileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// FunctionCall is a call the model made: {"name","args"} (and "id" with
// Options.CallIDs).
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// FunctionResponse is the result of a call: {"name","response"} (and "id"
// with Options.CallIDs). Response is a JSON object.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool holds the function declarations.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
}

// FunctionDeclaration is one function the model may call. Parameters (the
// OpenAPI subset) and ParametersJSONSchema (JSON Schema) are exclusive.
type FunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// ToolConfig is {"functionCallingConfig":{...}}.
type ToolConfig struct {
	FunctionCallingConfig FunctionCallingConfig `json:"functionCallingConfig"`
}

// FunctionCallingConfig is the mode (AUTO, ANY, NONE) and the functions an
// ANY call may choose from.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// GenerationConfig holds the generation parameters.
type GenerationConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"topP,omitempty"`
	TopK            *int64          `json:"topK,omitempty"`
	StopSequences   []string        `json:"stopSequences,omitempty"`
	ThinkingConfig  *ThinkingConfig `json:"thinkingConfig,omitempty"`
	// Seed and the penalties are mapped from OpenAI's seed,
	// presence_penalty and frequency_penalty.
	Seed             *int64   `json:"seed,omitempty"`
	PresencePenalty  *float64 `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequencyPenalty,omitempty"`
	// ResponseMimeType is "application/json" for structured output, with
	// the schema in ResponseJSONSchema (JSON Schema) or ResponseSchema
	// (Gemini's OpenAPI subset, Options.Schema "openapi").
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
}

// ThinkingConfig is the reasoning control: a budget in tokens (0 turns
// thinking off) or a level (Gemini 3), and whether thought summaries come
// back.
type ThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}
