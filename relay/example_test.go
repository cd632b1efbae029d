package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxkit/ctxkit/relay"
)

// A parent agent hands a security audit to a sub-agent: the pipeline
// injects the delegation, keeps the security prompts only and redacts the
// token one of them carries. The parent's prompts are never changed.
func Example() {
	p, err := relay.ParsePipeline(strings.NewReader(`
transformers:
  - type: context_injector
  - type: scope_narrower
    keywords: [security]
  - type: redactor
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rc := &relay.Context{
		SourceAgent: "Orchestrator",
		TargetAgent: "SecurityAnalyzer",
		Task:        "Audit the login handler",
		Prompts: []relay.Prompt{
			{ID: "role", Position: relay.SystemPrefix, Content: "You review Go code for security problems."},
			{ID: "style", Content: "House style: tabs, short functions."},
			{ID: "creds", Content: "Staging security token: sk-test-4f9a8b7c6d5e4f3a2b1c0d9e"},
		},
	}
	prompts, _, err := p.Run(context.Background(), rc)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, pr := range prompts {
		fmt.Printf("%s: %s\n", pr.ID, strings.SplitN(pr.Content, "\n", 2)[0])
	}
	fmt.Println(rc.Prompts[2].Content)
	// Output:
	// relay:Orchestrator>SecurityAnalyzer: Delegated by: Orchestrator
	// role: You review Go code for security problems.
	// creds: Staging security token: [REDACTED:api_key]
	// Staging security token: sk-test-4f9a8b7c6d5e4f3a2b1c0d9e
}

// A relay error names the place at fault and carries a stable code.
func ExampleDecodeContext() {
	_, err := relay.DecodeContext([]byte(`{"task":"t","prompts":[{"id":"a","content":"x","position":"middle"}]}`), relay.Limits{})
	var re *relay.Error
	if errors.As(err, &re) {
		fmt.Println(re.Code, re.Path)
	}
	fmt.Println(err)
	// Output:
	// RELAY_INVALID_PROMPT prompts[0].position
	// prompts[0].position: unknown position "middle" (use one of system_prefix, system, system_suffix, context, tools, plugins, agents, constraints, examples, user_prefix, user, user_suffix)
}
