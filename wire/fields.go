package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/chat"
)

// The field policy: what becomes of each request field of each client
// dialect on the way to each upstream type. A field is carried (sent under
// its own name), mapped (sent in the upstream's own form), dropped with a
// warning (advisory fields only: user, metadata, service_tier where the
// upstream has none, ...), or refused: the gateway answers 400
// unsupported_field naming the field and the upstream. Nothing is dropped
// without a word.
//
// The policy is the table fieldRules, from which both CheckFields and the
// README's table (FieldTable) are made. A dialect's decoder keeps the
// fields it does not model in chat.Request.Extra under their own names;
// a row names such a field by its dialect and that key, so a new dialect's
// fields plug in as rows. A field of Extra that no row names is refused,
// but on the upstream of the dialect's own family where the encoder sends
// Extra as it came (Anthropic to Anthropic).

// Upstream types of the policy: the Name of a provider row that has an
// Upstream ("responses" is the OpenAI Responses API).
var PolicyUpstreams = []string{"openai", "responses", "anthropic", "gemini", "bedrock", "mistral", "deepseek"}

// Action is what becomes of a field on the way to an upstream.
type Action string

// Actions.
const (
	// Carried: sent under its own name, as it came.
	Carried Action = "carried"
	// Mapped: sent in the upstream's own form (Handling.How).
	Mapped Action = "mapped"
	// Dropped: not sent, and named in the response's x-ctxkit-warnings
	// header. Only advisory fields are dropped.
	Dropped Action = "dropped"
	// Refused: the request is answered with 400 unsupported_field.
	Refused Action = "refused"
)

// Handling is what becomes of one field on the way to one upstream.
type Handling struct {
	Action Action
	// How says where a Mapped field goes, or why a field is Dropped or
	// Refused.
	How string
}

// CodeUnsupportedField: the request has a field the upstream cannot
// take (Error.Path names it; Error.Msg names the upstream).
const CodeUnsupportedField Code = "unsupported_field"

// fieldRule is one row of the policy.
type fieldRule struct {
	dialect, field string
	// modelled: the dialect's decoder reads the field into chat.Request's
	// own fields (max_tokens, tools, ...): the encoders map it, and it is
	// never in Extra. Its row is documentation, but for the checks
	// CheckFields makes of the modelled fields it names (response_format,
	// metadata).
	modelled bool
	// consumed: the dialect's decoder has read the field's meaning into
	// chat.Request's own fields and kept it in Extra for its own
	// upstream's encoder too; where the field is Mapped, CheckFields
	// removes it from Extra without a word (the canonical fields carry
	// it).
	consumed bool
	// inert reports whether a value asks for nothing beyond the default
	// (n 1, logprobs false): such a field is removed without a word.
	inert func(v json.RawMessage) bool
	// def is the handling for the upstreams per does not name.
	def Handling
	per map[string]Handling
	// note says what the table's cells do not.
	note string
}

func (r *fieldRule) handling(upstream string) Handling {
	if h, ok := r.per[upstream]; ok {
		return h
	}
	return r.def
}

func carried() Handling                 { return Handling{Action: Carried} }
func mapped(how string) Handling        { return Handling{Action: Mapped, How: how} }
func dropped(why string) Handling       { return Handling{Action: Dropped, How: why} }
func refused(why string) Handling       { return Handling{Action: Refused, How: why} }
func only(u string) map[string]Handling { return map[string]Handling{u: carried()} }

// Inert values.
func isValue(want string) func(json.RawMessage) bool {
	return func(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == want }
}

func isTextOnly(v json.RawMessage) bool {
	var m []string
	return json.Unmarshal(v, &m) == nil && (len(m) == 0 || len(m) == 1 && m[0] == "text")
}

// Reasons shared by rows.
const (
	advisory    = "advisory"
	noReturn    = "the gateway returns no log probabilities"
	oneChoice   = "the gateway returns one choice"
	noAudio     = "the gateway returns text, not audio"
	noEquiv     = "no equivalent"
	legacyFuncs = "legacy function calling: use tools"
)

// modelledRow is a row of a field the dialect's decoder models.
func modelledRow(dialect, field, note string) fieldRule {
	return fieldRule{dialect: dialect, field: field, modelled: true, def: carried(), note: note}
}

// formatRow is the row of a dialect's structured-output field: every
// upstream has a mechanism for it (see FormatTool for the forced tool).
func formatRow(dialect, field, note string) fieldRule {
	return fieldRule{dialect: dialect, field: field, modelled: true, def: carried(), note: note,
		per: map[string]Handling{
			"openai":    mapped("response_format"),
			"responses": mapped("text.format"),
			"anthropic": mapped("output_config.format (json_object: a forced tool)"),
			"gemini":    mapped("generationConfig.responseMimeType + responseJsonSchema"),
			"bedrock":   mapped("a forced tool, answered as text"),
			"mistral":   mapped("response_format"),
			"deepseek":  mapped("response_format json_object; json_schema refused"),
		}}
}

// seedRow, penaltyRow and topKRow are the rows of fields several dialects
// share under the names the converters read.
func seedRow(dialect string) fieldRule {
	return fieldRule{dialect: dialect, field: "seed", def: refused(noEquiv), per: map[string]Handling{
		"openai": carried(), "gemini": mapped("generationConfig.seed"), "mistral": mapped("random_seed")}}
}

func penaltyRow(dialect, field, gemini string) fieldRule {
	return fieldRule{dialect: dialect, field: field, def: refused(noEquiv), per: map[string]Handling{
		"openai": carried(), "mistral": carried(), "deepseek": carried(), "gemini": mapped("generationConfig." + gemini)}}
}

func topKRow(dialect string) fieldRule {
	return fieldRule{dialect: dialect, field: "top_k", def: refused(noEquiv), per: map[string]Handling{
		"anthropic": carried(), "gemini": mapped("generationConfig.topK"), "bedrock": mapped("additionalModelRequestFields.top_k")}}
}

// onlyFormat: a text object that holds nothing but the format (which the
// decoder read into Format).
func onlyFormat(v json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return false
	}
	delete(m, "format")
	return len(m) == 0
}

// onlyEncryptedReasoning: an include list that asks for nothing but the
// encrypted reasoning, which the gateway gives back from any upstream
// that has it.
func onlyEncryptedReasoning(v json.RawMessage) bool {
	var l []string
	return json.Unmarshal(v, &l) == nil && !slices.ContainsFunc(l, func(s string) bool { return s != "reasoning.encrypted_content" })
}

// fieldRules is the policy. Keep the rows of a dialect together, in the
// order of its API reference.
var fieldRules = []fieldRule{
	// OpenAI Chat Completions (CreateChatCompletionRequest).
	modelledRow("openai", "messages", "system and developer messages become the system prompt"),
	modelledRow("openai", "model", ""),
	modelledRow("openai", "max_completion_tokens", "max tokens (max_tokens when absent)"),
	modelledRow("openai", "max_tokens", "max tokens"),
	modelledRow("openai", "temperature", ""),
	modelledRow("openai", "top_p", ""),
	modelledRow("openai", "stop", "stop sequences"),
	modelledRow("openai", "tools", "function tools"),
	modelledRow("openai", "tool_choice", ""),
	modelledRow("openai", "parallel_tool_calls", "false: no parallel calls where the upstream has the switch"),
	modelledRow("openai", "reasoning_effort", "each upstream's reasoning control"),
	modelledRow("openai", "reasoning", "OpenRouter's reasoning object: effort, max_tokens, enabled"),
	modelledRow("openai", "stream", ""),
	modelledRow("openai", "stream_options", "include_usage: the final usage chunk"),
	formatRow("openai", "response_format", "json_object, json_schema; text is no format"),
	{dialect: "openai", field: "n", inert: isValue("1"), def: refused(oneChoice), note: "1 is the default and passes"},
	seedRow("openai"),
	{dialect: "openai", field: "logprobs", inert: isValue("false"), def: refused(noReturn), note: "false passes"},
	{dialect: "openai", field: "top_logprobs", inert: isValue("0"), def: refused(noReturn), note: "0 passes"},
	penaltyRow("openai", "frequency_penalty", "frequencyPenalty"),
	penaltyRow("openai", "presence_penalty", "presencePenalty"),
	{dialect: "openai", field: "logit_bias", def: refused(noEquiv), per: only("openai")},
	{dialect: "openai", field: "user", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "safety_identifier", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "prompt_cache_key", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "prompt_cache_retention", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "metadata", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "store", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "service_tier", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "openai", field: "prediction", def: dropped("advisory: a latency hint"), per: only("openai")},
	{dialect: "openai", field: "verbosity", def: refused(noEquiv), per: only("openai")},
	{dialect: "openai", field: "web_search_options", def: refused("no web search"), per: only("openai")},
	{dialect: "openai", field: "modalities", inert: isTextOnly, def: refused(noAudio), note: `["text"] passes`},
	{dialect: "openai", field: "audio", def: refused(noAudio)},
	{dialect: "openai", field: "functions", def: refused(legacyFuncs)},
	{dialect: "openai", field: "function_call", def: refused(legacyFuncs)},

	// Anthropic Messages.
	modelledRow("anthropic", "model", ""),
	modelledRow("anthropic", "messages", ""),
	modelledRow("anthropic", "max_tokens", ""),
	modelledRow("anthropic", "system", ""),
	modelledRow("anthropic", "stop_sequences", ""),
	modelledRow("anthropic", "stream", ""),
	modelledRow("anthropic", "temperature", ""),
	modelledRow("anthropic", "top_p", ""),
	modelledRow("anthropic", "tools", "custom tools; server tools only to Anthropic"),
	modelledRow("anthropic", "tool_choice", ""),
	modelledRow("anthropic", "thinking", "each upstream's reasoning control"),
	formatRow("anthropic", "output_config.format", "json_schema; json_object (canonical)"),
	formatRow("anthropic", "output_format", "the structured-outputs beta's form of output_config.format"),
	{dialect: "anthropic", field: "metadata", modelled: true, def: dropped(advisory), per: only("anthropic")},
	topKRow("anthropic"),
	{dialect: "anthropic", field: "service_tier", def: dropped(advisory), per: only("anthropic")},
	{dialect: "anthropic", field: "output_config", def: dropped("advisory: effort"), per: only("anthropic"),
		note: "its members but format (effort)"},
	{dialect: "anthropic", field: "cache_control", def: dropped("advisory: automatic caching"), per: only("anthropic")},
	{dialect: "anthropic", field: "container", def: refused("Anthropic's code execution"), per: only("anthropic")},
	{dialect: "anthropic", field: "mcp_servers", def: refused("Anthropic's MCP connector"), per: only("anthropic")},
	{dialect: "anthropic", field: "context_management", def: refused("Anthropic's context editing"), per: only("anthropic")},
	{dialect: "anthropic", field: "inference_geo", def: refused("where inference runs is not the upstream's to choose"), per: only("anthropic")},

	// OpenAI Responses: the fields its decoder keeps in Extra (it refuses
	// background, conversation and top_logprobs itself).
	{dialect: "responses", field: "store", modelled: true, def: mapped("ctxkit keeps the response"), note: "the gateway's: never sent upstream"},
	{dialect: "responses", field: "previous_response_id", modelled: true, def: mapped("ctxkit's stored conversation"), note: "the gateway's: never sent upstream"},
	{dialect: "responses", field: "reasoning", consumed: true, def: mapped("the effort: each upstream's reasoning control"), per: only("responses"),
		note: "summary only to a Responses upstream"},
	{dialect: "responses", field: "text", inert: onlyFormat, def: dropped("advisory: verbosity"), per: only("responses"), note: "format: as response_format above"},
	{dialect: "responses", field: "include", inert: onlyEncryptedReasoning, def: dropped("advisory: extra output the gateway does not return"), per: only("responses"),
		note: `["reasoning.encrypted_content"] passes`},
	{dialect: "responses", field: "user", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "responses", field: "safety_identifier", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "responses", field: "prompt_cache_key", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "responses", field: "prompt_cache_retention", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "responses", field: "metadata", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "responses", field: "service_tier", def: dropped(advisory), per: map[string]Handling{"openai": carried(), "responses": carried()}},
	{dialect: "responses", field: "truncation", inert: isValue(`"disabled"`), def: refused(noEquiv), per: only("responses"), note: `"disabled" passes`},
	{dialect: "responses", field: "max_tool_calls", def: refused(noEquiv), per: only("responses")},
	{dialect: "responses", field: "prompt", def: refused("a prompt template stored at OpenAI"), per: only("responses")},

	// Gemini generateContent: the fields its decoder keeps in Extra (under
	// the converters' names for those it shares with other dialects).
	topKRow("gemini"),
	seedRow("gemini"),
	penaltyRow("gemini", "presence_penalty", "presencePenalty"),
	penaltyRow("gemini", "frequency_penalty", "frequencyPenalty"),
	{dialect: "gemini", field: "safetySettings", def: dropped("advisory: safety thresholds"), per: only("gemini")},
	{dialect: "gemini", field: "cachedContent", def: refused("a cache stored at Google"), per: only("gemini")},
	{dialect: "gemini", field: "labels", def: dropped(advisory), per: only("gemini")},
	{dialect: "gemini", field: "serviceTier", def: dropped(advisory), per: only("gemini")},
}

// passthrough are the (dialect, upstream) pairs whose encoder sends the
// fields of Extra as they came: there a field no row names is carried.
var passthrough = map[[2]string]bool{{"anthropic", "anthropic"}: true}

// ruleIndex finds a row by dialect and field.
var ruleIndex = func() map[[2]string]*fieldRule {
	m := make(map[[2]string]*fieldRule, len(fieldRules))
	for i := range fieldRules {
		r := &fieldRules[i]
		m[[2]string{r.dialect, r.field}] = r
	}
	return m
}()

// FieldHandling is what the policy does with field of dialect on the way
// to upstream; ok is false when no row names the field.
func FieldHandling(dialect, field, upstream string) (h Handling, ok bool) {
	r := ruleIndex[[2]string{dialect, field}]
	if r == nil {
		return Handling{}, false
	}
	return r.handling(upstream), true
}

// Carries reports whether the encoder of upstream sends field of
// chat.Request.Extra as it came: some row carries it there. An encoder
// sends these and names every other field of Extra in a warning.
func Carries(upstream, field string) bool {
	for i := range fieldRules {
		r := &fieldRules[i]
		if r.field == field && !r.modelled && r.handling(upstream).Action == Carried {
			return true
		}
	}
	return false
}

// CheckFields applies the policy to req, a request of dialect ("openai",
// "anthropic", "responses", "gemini") going to an upstream of the type
// named (a provider row's Name). A refused field is an *Error of
// CodeUnsupportedField whose Path is the field; otherwise the advisory
// fields the upstream does not take, and the inert ones, are removed from
// req (its Extra becomes a fresh map; the input's is not changed), and
// warnings names each field dropped, for the x-ctxkit-warnings header:
// "user: not sent to anthropic (advisory)". What is left the upstream's
// encoder carries or maps. A field a row says the dialect models but that
// its decoder also kept in Extra (for the gateway's own use) is removed
// without a word. CheckFields changes *req: call it on the request to be
// encoded, and keep the request as decoded for wire.Outgoing.
func CheckFields(dialect string, req *chat.Request, upstream string) (warnings []string, err error) {
	if err := checkFormat(dialect, req, upstream); err != nil {
		return nil, err
	}
	if len(req.Metadata) > 0 && dialect == "anthropic" {
		if h := ruleIndex[[2]string{dialect, "metadata"}].handling(upstream); h.Action == Dropped {
			warnings = append(warnings, dropWarning("metadata", upstream, h))
			req.Metadata = nil
		}
	}
	if len(req.Extra) == 0 {
		return warnings, nil
	}
	extra := maps.Clone(req.Extra)
	for _, k := range chat.SortedKeys(req.Extra) {
		r := ruleIndex[[2]string{dialect, k}]
		if r == nil {
			if passthrough[[2]string{dialect, upstream}] {
				continue
			}
			return nil, unsupported(k, upstream, "not a field ctxkit knows how to carry there")
		}
		h := r.handling(upstream)
		if r.modelled || r.inert != nil && r.inert(req.Extra[k]) || r.consumed && h.Action == Mapped {
			// A modelled field a decoder keeps in Extra too (for the
			// gateway's own use, as stream_options) is not the
			// upstream's; an inert value asks for nothing.
			delete(extra, k)
			continue
		}
		switch h.Action {
		case Dropped:
			warnings = append(warnings, dropWarning(k, upstream, h))
			delete(extra, k)
		case Refused:
			return nil, unsupported(k, upstream, h.How)
		}
	}
	req.Extra = extra
	if len(extra) == 0 {
		req.Extra = nil
	}
	return warnings, nil
}

// checkFormat refuses a structured-output format the upstream has no
// mechanism for.
func checkFormat(dialect string, req *chat.Request, upstream string) error {
	f := req.Format
	if f == nil {
		return nil
	}
	field := formatField(dialect)
	if upstream == "deepseek" && f.Type == "json_schema" {
		return unsupported(field, upstream, "DeepSeek takes JSON output (json_object) but no schema")
	}
	if !slices.Contains(PolicyUpstreams, upstream) {
		return unsupported(field, upstream, "no structured output")
	}
	if f.Type == "json_schema" && FormatTool(upstream, f) != "" && !objectSchema(f.Schema) {
		return unsupported(field, upstream, "its structured output is a tool call, whose input is an object: the schema must be of type object")
	}
	return nil
}

// formatField is the name of the structured-output field in dialect.
func formatField(dialect string) string {
	switch dialect {
	case "anthropic":
		return "output_config.format"
	case "responses":
		return "text.format"
	case "gemini":
		return "generationConfig.responseSchema"
	}
	return "response_format"
}

// objectSchema reports whether a JSON Schema is of type object.
func objectSchema(schema json.RawMessage) bool {
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	return string(bytes.TrimSpace(s.Type)) == `"object"`
}

func unsupported(field, upstream, why string) error {
	return &Error{Code: CodeUnsupportedField, Path: field,
		Msg: fmt.Sprintf("not supported by the %s upstream (%s)", upstream, why)}
}

func dropWarning(field, upstream string, h Handling) string {
	return fmt.Sprintf("%s: not sent to %s (%s)", field, upstream, h.How)
}

// maxWarningsHeader bounds the x-ctxkit-warnings value. A long
// conversation from another provider makes a warning per dropped block
// (each thinking block, each citation), and HTTP clients refuse a response
// whose headers are too large (Node's, under the TypeScript SDKs, at 16 KiB
// in all): past the bound the warnings are counted, not listed.
const maxWarningsHeader = 4 << 10

// WarningsHeader is the x-ctxkit-warnings header of a response: the
// warnings joined with "; ", control characters and non-ASCII replaced so
// that the value is a valid header; past 4 KiB the rest are counted
// ("and N more").
func WarningsHeader(warnings []string) string {
	var b strings.Builder
	for i, w := range warnings {
		sep := "; "
		if i == 0 {
			sep = ""
		}
		// Room is kept after each warning for the count of those left,
		// so that the count always fits once one does not.
		tail := 0
		if rest := len(warnings) - i - 1; rest > 0 {
			tail = len(fmt.Sprintf("; and %d more", rest))
		}
		if b.Len()+len(sep)+len(w)+tail > maxWarningsHeader {
			if i == 0 {
				fmt.Fprintf(&b, "warnings: %d, too long to list", len(warnings))
			} else {
				fmt.Fprintf(&b, "; and %d more", len(warnings)-i)
			}
			break
		}
		b.WriteString(sep)
		b.WriteString(w)
	}
	s := b.String()
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return '?'
		}
		return r
	}, s)
}

// FieldTable is the policy as a Markdown table, one per dialect, for the
// README: each field's handling on each upstream type.
func FieldTable() string {
	var b strings.Builder
	dialect := ""
	for i := range fieldRules {
		r := &fieldRules[i]
		if r.dialect != dialect {
			if dialect != "" {
				b.WriteString("\n")
			}
			dialect = r.dialect
			fmt.Fprintf(&b, "%s:\n\n| field | %s | note |\n|---|", dialectTitle(dialect), strings.Join(PolicyUpstreams, " | "))
			b.WriteString(strings.Repeat("---|", len(PolicyUpstreams)+1))
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "| `%s` |", r.field)
		for _, u := range PolicyUpstreams {
			fmt.Fprintf(&b, " %s |", cell(r.handling(u)))
		}
		note := r.note
		if a := r.def.Action; (a == Refused || a == Dropped) && r.def.How != "" {
			note = strings.TrimPrefix(note+"; "+string(a)+": "+r.def.How, "; ")
		}
		fmt.Fprintf(&b, " %s |\n", note)
	}
	b.WriteString("\nA field no row names is refused (400 `unsupported_field`), except from the Anthropic dialect to an Anthropic upstream, where it is carried as it came. Dropped fields are named in the response's `x-ctxkit-warnings` header.\n")
	return b.String()
}

func dialectTitle(d string) string {
	switch d {
	case "openai":
		return "OpenAI Chat Completions dialect (`POST /v1/chat/completions`)"
	case "anthropic":
		return "Anthropic Messages dialect (`POST /v1/messages`)"
	case "responses":
		return "OpenAI Responses dialect (`POST /v1/responses`), its fields beyond the canonical ones"
	case "gemini":
		return "Gemini dialect (`generateContent`), its fields beyond the canonical ones"
	}
	return d
}

func cell(h Handling) string {
	switch h.Action {
	case Carried:
		return "carried"
	case Mapped:
		return "→ " + h.How
	case Dropped:
		return "dropped, warned"
	}
	return "refused"
}

// SplitCarried splits the fields of a request's Extra into those the
// encoder of upstream sends as they came (Carries) and the rest, which it
// maps or names in warnings. Either map is nil when empty; the values are
// shared with extra.
func SplitCarried(upstream string, extra map[string]json.RawMessage) (carried, rest map[string]json.RawMessage) {
	for k, v := range extra {
		m := &rest
		if Carries(upstream, k) {
			m = &carried
		}
		if *m == nil {
			*m = map[string]json.RawMessage{}
		}
		(*m)[k] = v
	}
	return carried, rest
}
