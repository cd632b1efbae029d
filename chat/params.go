package chat

// Format names a wire format.
type Format string

// Formats ctxkit converts to.
const (
	FormatAnthropic Format = "anthropic"
	FormatOpenAI    Format = "openai"
	FormatDeepSeek  Format = "deepseek"
	FormatMistral   Format = "mistral"
	FormatGemini    Format = "gemini"
	FormatBedrock   Format = "bedrock"
	FormatVSCodeLM  Format = "vscodelm"
	FormatSimple    Format = "simple"
)

// Parameter defaults: see the package documentation.
const (
	DefaultMaxTokens   = 8192
	MinReasoningBudget = 1024
)

// Params are a request's generation parameters resolved for a format.
type Params struct {
	MaxTokens       int // 0: not sent
	Temperature     *float64
	TopP            *float64
	Stop            []string
	Reasoning       bool
	ReasoningBudget int    // tokens, when Reasoning
	ReasoningEffort string // minimal, low, medium or high, when Reasoning
}

// ResolveParams applies the table above.
func ResolveParams(r Request, f Format) (Params, []Warning) {
	p := Params{MaxTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP, Stop: r.StopSequences}
	var warns []Warning
	needsMax := f == FormatAnthropic || f == FormatBedrock || f == FormatGemini
	if p.MaxTokens == 0 && needsMax {
		p.MaxTokens = DefaultMaxTokens
	}
	p.Reasoning = r.ReasoningRequested() && (r.Thinking == nil || r.Thinking.Type != "disabled")
	if f == FormatVSCodeLM || f == FormatSimple {
		// No reasoning control at all: the converter reports it.
		p.Reasoning = false
	}
	if !p.Reasoning {
		return p, warns
	}
	max := p.MaxTokens
	if max == 0 {
		max = DefaultMaxTokens
	}
	budget := 0
	if r.Thinking != nil {
		budget = r.Thinking.BudgetTokens
	}
	effort := r.ReasoningEffort
	if budget == 0 {
		budget = effortBudget(effort, max)
	}
	if effort == "" {
		effort = budgetEffort(budget, max)
	}
	if max*8/10 < MinReasoningBudget {
		raised := MinReasoningBudget * 10 / 8
		if p.MaxTokens != 0 || needsMax {
			warns = append(warns, Warnf("max_tokens", "%d leaves no room for a %d-token reasoning budget: raised to %d", max, MinReasoningBudget, raised))
			p.MaxTokens = raised
		}
		max = raised
	}
	if c := clampBudget(budget, max); c != budget {
		if r.Thinking != nil && r.Thinking.BudgetTokens != 0 {
			warns = append(warns, Warnf("thinking.budget_tokens", "%d clamped to %d (between %d and 80%% of max_tokens)", budget, c, MinReasoningBudget))
		}
		budget = c
	}
	p.ReasoningBudget, p.ReasoningEffort = budget, effort
	switch f {
	case FormatAnthropic, FormatBedrock, FormatOpenAI, FormatDeepSeek:
		if p.Temperature != nil || p.TopP != nil {
			field := "temperature"
			if p.Temperature == nil {
				field = "top_p"
			}
			warns = append(warns, Warnf(field, "%s does not take temperature or top_p with reasoning: dropped", f))
			p.Temperature, p.TopP = nil, nil
		}
	}
	switch f {
	case FormatDeepSeek:
		warns = append(warns, Warnf("thinking", "deepseek has no reasoning budget or effort (the model decides): not sent"))
	case FormatMistral:
		warns = append(warns, Warnf("thinking", "mistral has no reasoning control in this format: not sent"))
	}
	return p, warns
}

func effortBudget(effort string, max int) int {
	switch effort {
	case "minimal":
		return MinReasoningBudget
	case "low":
		return max * 2 / 10
	case "high":
		return max * 8 / 10
	default:
		return max / 2
	}
}

func budgetEffort(budget, max int) string {
	switch {
	case budget*4 <= max:
		return "low"
	case budget*2 <= max:
		return "medium"
	default:
		return "high"
	}
}

func clampBudget(budget, max int) int {
	if hi := max * 8 / 10; budget > hi {
		budget = hi
	}
	if budget < MinReasoningBudget {
		budget = MinReasoningBudget
	}
	return budget
}
