package prompt

import "context"

// MemorySection is the long-term memory section (SPEC M3): computed once
// a session and kept, so memories written during the session do not
// change the prompt's bytes (they reach the model through recall, the
// prompt after the next compaction — see Builder.Forget — and the next
// session's prompt). A nil text leaves the section out.
func MemorySection(text func(ctx context.Context) (string, error)) Section {
	if text == nil {
		return Fixed(MemoryKey, false, "")
	}
	return Section{Key: MemoryKey, Text: text}
}

// MemoryKey is the memory section's key.
const MemoryKey = "memory"

// tokenBudgetText tells the model what a token budget in a prompt means;
// the budget itself travels with the prompt that sets it, so this text
// never changes.
const tokenBudgetText = `# Token budgets
A user may give a request a token budget, such as "+500k" or "spend 2M tokens". It is the amount of output the user wants you to put into the request: keep working — checking, extending, testing and improving the result — until the budget is used up or the work is truly complete, rather than stopping at a first answer. You will be told how much of the budget is spent when you stop early. When the work is complete, say so plainly and stop.`

// TokenBudgetSection is the section explaining token budgets, when on.
func TokenBudgetSection(on bool) Section {
	if !on {
		return Fixed("token_budget", false, "")
	}
	return Fixed("token_budget", false, tokenBudgetText)
}
