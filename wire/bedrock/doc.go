// Package bedrock converts a canonical request (package chat) to the body
// of Amazon Bedrock's Converse and ConverseStream calls, which take the
// same body. The model id goes in the URL (POST /model/{modelId}/converse
// or /converse-stream), so neither the model nor the stream switch appears
// in the body.
//
// # Mapping
//
//   - system: a list of text blocks [{"text":...}]; a string system prompt
//     is one block.
//   - messages: role user or assistant, content a list of blocks. String
//     content is one text block. Consecutive messages of one role are
//     merged into one message (Converse requires the roles to alternate);
//     nothing is lost, so this gives no warning. A conversation whose
//     first carried message is the assistant's gets a user message with
//     the text "(continued)" before it (warning): Converse requires the
//     user to speak first.
//   - text → {"text":...}.
//   - image with a base64 source → {"image":{"format":"png","source":
//     {"bytes":"<base64>"}}}; the base64 string is carried as it is.
//     Formats: png, jpeg (image/jpeg, image/jpg), gif, webp. A url source
//     whose URL starts with s3:// → {"source":{"s3Location":{"uri":...}}},
//     the format taken from the media type or the key's extension.
//   - document → {"document":{"format","name","source"}} with "context"
//     and "citations" (the citations config, e.g. {"enabled":true}) when
//     given. A base64 source → {"bytes":...}, the format from the media
//     type (application/pdf → pdf, text/csv → csv, application/msword →
//     doc, the OOXML word and sheet types → docx and xlsx,
//     application/vnd.ms-excel → xls, text/html → html, text/markdown →
//     md, any other text/* → txt); a text source → {"text":...} (format
//     txt unless the media type names csv, html or md); an s3:// url →
//     {"s3Location":...}. The name, which Bedrock requires, is the title
//     with every character Bedrock refuses replaced (letters and digits
//     of ASCII, hyphens, parentheses and square brackets are kept, a run
//     of whitespace becomes one space, anything else becomes a hyphen; at
//     most 200 bytes), or "document-N" for the Nth document the request
//     carries when there is no title; a name already used in the request gets
//     " (2)", " (3)", .... A title that changes gives a warning.
//   - tool_use → {"toolUse":{"toolUseId","name","input"}}.
//   - tool_result → {"toolResult":{"toolUseId","content":[...]}} with
//     "status":"error" when is_error. String content is one text block;
//     text, image and document blocks map as above; an empty result is
//     "content":[] (which Converse accepts).
//   - thinking → {"reasoningContent":{"reasoningText":{"text","signature"}}};
//     the signature is omitted when there is none (Claude models refuse
//     unsigned reasoning of their own turns; other models take it).
//     reasoning (plain reasoning text) → reasoningText without a signature.
//     redacted_thinking → {"reasoningContent":{"redactedContent":data}}:
//     Anthropic's data is base64, which is how the JSON carries bytes.
//     Redacted content ctxkit sealed for a client of another dialect
//     (wire.SealRedactedFor) is opened when Bedrock made it, in a
//     redacted_thinking block or a thinking block's signature.
//   - tools → toolConfig.tools [{"toolSpec":{"name","description",
//     "inputSchema":{"json":schema}}}].
//   - tool_choice auto, any, tool → toolConfig.toolChoice {"auto":{}},
//     {"any":{}}, {"tool":{"name"}}.
//   - max_tokens, temperature, top_p, stop_sequences → inferenceConfig
//     maxTokens, temperature, topP, stopSequences, and a reasoning budget
//     (thinking or reasoning_effort) → additionalModelRequestFields
//     {"thinking":{"type":"enabled","budget_tokens":N}}, Claude's field on
//     Bedrock; all resolved by chat.ResolveParams (max tokens 8192 when not
//     given; temperature and top_p dropped, with a warning, when reasoning).
//   - top_k (an extra top-level field) → additionalModelRequestFields.top_k.
//   - Format (structured output) → the forced tool wire.FormatToolName
//     whose input schema is the format's schema (wire.FormatAsTool), whose
//     call the gateway turns back into text (wire.ToolAsText). Converse's
//     own outputConfig.textFormat is not used: its wire form could not be
//     confirmed, and the tool works on every model that takes tools.
//
// Tool names and tool use ids must match [a-zA-Z0-9_-]{1,64}. One that
// does not has every other character replaced by "_"; when that is too
// long, or is already taken by another name or id of the request, it is
// cut and given "_" and eight hex digits of a hash of the original. The
// same original always maps to the same result within a request, and
// different originals to different results, so each toolUse keeps its
// toolResult. A renamed tool name gives a warning (the model sees names);
// a renamed id does not.
//
// # Fallbacks
//
// Every fallback gives a warning naming the place (messages[2].content[1]):
//
//   - An image Converse cannot carry (a URL other than s3://, a file
//     source, a media type other than the four formats) becomes the text
//     chat.ImageStub gives, "[Image: https://...]". A document it cannot
//     carry (a URL other than s3://, a file or content source, a media
//     type it has no format for) becomes the text chat.DocumentStub gives,
//     "[Document: <title, URL or media type>]". In a tool result the stub is a text item of the result.
//   - Blank text (empty or only whitespace), which Converse refuses, is
//     omitted, as are empty thinking and reasoning blocks, empty text in
//     tool results and documents without data. A message left with no
//     content is omitted.
//   - redacted_thinking whose data is not padded base64 cannot be bytes:
//     dropped; so is one whose data another provider's envelope holds.
//   - thought_signature blocks (Gemini's), message-level
//     reasoning_details, blocks of unknown types, and blocks other than
//     text, image and document inside a tool result: dropped.
//   - Citations on text blocks (Converse takes citations only in
//     responses) and fields ctxkit does not model on blocks, messages and
//     tools: dropped. So are metadata (Converse's requestMetadata tags
//     invocation logs; it is not the model's request metadata) and unknown
//     top-level fields other than top_k.
//   - Provider-defined tools (a tool with a type, e.g. web_search_20250305):
//     dropped; Converse's toolSpec takes custom tools only.
//   - tool_choice none: Converse has no such choice. Without tool blocks in
//     the messages, toolConfig is not sent (the model cannot call a tool it
//     is not given); with them, Converse requires toolConfig, so the tools
//     are sent with the default choice (auto).
//   - Tool blocks in the messages but no tools declared: Converse requires
//     toolConfig, so every tool name the messages call is declared with
//     the schema {"type":"object"}.
//   - disable_parallel_tool_use: Converse has no such switch; not sent.
//     tool_choice any or tool with no tools to send: not sent.
//
// Errors are kept for what cannot be expressed at all: a role other than
// user or assistant, an invalid tool_choice, invalid options.
//
// # Caching
//
// Converse marks the end of a prefix to cache with a block
// {"cachePoint":{"type":"default"}} in system, in a message's content or
// in toolConfig.tools. A model takes at most a number of points a request,
// each covering at least a number of tokens, in some of those fields. The
// built-in table is matched against the lower-cased model id
// (Options.Model, else the request's model), first match wins:
//
//	id contains        points  min tokens  fields
//	claude-opus-4-5    4       4096        tools, system, messages
//	claude-haiku-4-5   4       4096        tools, system, messages
//	claude-3-5-haiku   4       2048        tools, system, messages
//	claude-3-haiku     4       2048        tools, system, messages
//	claude             4       1024        tools, system, messages
//	nova               4       1000        system, messages
//	(any other)        1       2048        system, messages
//
// The default for an unknown model is deliberately conservative: one
// point, a minimum as high as any model's. Options.MaxPoints and
// Options.MinTokens override the table's numbers.
//
// Without a strategy (Options.Cache ""), each cache_control mark becomes a
// cache point right after its block (after the tool for a tool's mark,
// after the system block for a system block's). A cache_control "ttl" of
// "5m" or "1h" is carried as the point's ttl; another ttl is not sent
// (warning). A mark inside a tool result's content moves to just after
// the tool result, since Converse takes cache points only between a
// message's blocks (warning). When a block maps to nothing, its point
// follows the content before it. When the request carries more marks than
// the model's limit, the latest ones (in prompt order: tools, system,
// messages) are kept and each earlier one is dropped with a warning. A
// tool's mark counts only when toolConfig is sent.
//
// With the "bedrock" strategy (Options.Cache "bedrock") the converter
// places the points itself and the request's own marks are ignored (a
// warning for each). The prompt is read in the order tools, system,
// messages, and a point is placed only where the tokens since the previous
// point (or the start) reach the model's minimum:
//
//   - tools (when the model caches tools and toolConfig is sent): a point
//     after the last tool;
//   - system (when the model caches it): a point after the last system
//     block; tokens of an uncached field count toward the next point;
//   - messages, with the points left. A point follows a user message with
//     content (so the last point ends the prompt the next turn extends).
//     Without previous placements (the first call), the messages are split
//     into ranges, each closed at the first user message where its tokens
//     reach the minimum; the last range is extended to the last user
//     message; while there are more ranges than points, the two adjacent
//     ranges with the fewest combined tokens are merged (the earlier pair
//     on a tie). With previous placements (Options.State, which the caller
//     saves from Request.CacheState after each call), the placements are
//     kept, and the new messages (those after the last placement, up to
//     the last user message) get a point only when their tokens reach the
//     minimum: in a free point if there is one; otherwise the two adjacent
//     previous ranges with the fewest combined tokens are merged, freeing
//     a point, only when the new tokens are at least 1.2 times those
//     combined tokens; with a single point, it moves to the new messages
//     only when their tokens are at least 1.2 times its range's. Otherwise
//     the previous placements stay as they are. Previous placements that
//     do not fit the request (not ascending, not on a user message with
//     content, more than the free points, or a range whose tokens changed,
//     as when earlier messages were edited) are discarded with a warning
//     and the points are placed afresh.
//
// Request.CacheState lists the placements of the request (tools, system
// and messages; message indexes are those of the canonical request,
// before merging) with the tokens of the range each closes. Equal input
// gives equal placements.
//
// Tokens are estimated without a tokenizer, deterministically: a text
// (text, which counts nothing when blank, reasoning and thinking text, redacted data, system text, a text
// document, a tool call's name and input JSON, a tool's name, description
// and schema JSON, tool result text) counts its length in bytes divided by
// four, rounded up, JSON counted without its insignificant whitespace; an image or a binary document counts 1,600 (the cost
// of a full-size image on Claude models); an image or a document Converse
// cannot carry counts as the text stub sent in its place, and an empty
// document, which is omitted, as nothing; other blocks count nothing.
package bedrock
