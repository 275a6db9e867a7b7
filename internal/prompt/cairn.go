package prompt

import (
	"context"
	"fmt"
	"runtime"
	"strings"
)

// Identity and working rules: the static part of cairn's system prompt.
const identity = `You are cairn, a coding agent working in the user's terminal on their software projects. You read code, run commands, and change files with the tools you are given, and you report what you did plainly.`

const workingRules = `# How to work
- Understand before changing: read the relevant files and search the code base before editing. Prefer the project's own conventions, libraries and tests over your defaults.
- Keep changes to what the task needs. Do not reformat, rename or "improve" code you were not asked to touch.
- Verify your work: run the tests or the program when you can, and read the output. Say honestly when something fails or could not be checked.
- Never claim to have done something you did not do. If you are unsure, say so and say what would settle it.
- Destructive actions (deleting files, discarding changes, force-pushing, rewriting history) need the user's clear request. When in doubt, ask.
- Do not commit, push or open pull requests unless the user asks.

# Using tools
- Use Read to read files, Edit to change them, Write to create them, Glob to find files by name and Grep to search their contents; use Bash for commands such as builds, tests and git, not for reading or searching files.
- A file must be read before it is edited. Edits match text exactly, including indentation.
- When several independent calls are needed (reading a few files, running separate searches), make them in one response: they run in parallel.
- Tool results may be long; the important part is often near the end of command output.

# Talking to the user
- Be brief and direct. Lead with the answer or the result, then the detail that matters.
- Refer to code as path:line so the user can jump to it.
- Use Markdown sparingly; the terminal renders it.`

// Options are the facts the dynamic sections report.
type Options struct {
	Cwd        string
	IsGitRepo  bool
	ModelName  string
	OSVersion  string
	AppendText string // --append-system-prompt
	// Memory computes the long-term memory section (its instructions and
	// index), once a session; nil leaves it out.
	Memory func(ctx context.Context) (string, error)
	// TokenBudgets adds the section explaining token budgets (SPEC K4).
	TokenBudgets bool
	// MCPInstructions is the section of the MCP servers' instructions
	// (SPEC G5), fixed for the session; "" leaves it out.
	MCPInstructions string
	// OutputStyle is the text of the output style in force ("" for the
	// default); DropCodingRules leaves cairn's working rules out, for a
	// style that replaces them.
	OutputStyle     string
	DropCodingRules bool
	// SystemPrompt, when set, replaces cairn's own identity, working
	// rules and output style (--system-prompt); the facts of the session
	// (environment, memory, MCP servers) stay.
	SystemPrompt string
}

// Cairn returns the sections of cairn's system prompt.
func Cairn(o Options) []Section {
	ident, rules := identity, workingRules
	if o.DropCodingRules {
		rules = ""
	}
	if o.SystemPrompt != "" {
		ident, rules, o.OutputStyle = "", "", ""
	}
	return []Section{
		Fixed("custom", false, o.SystemPrompt),
		Fixed("identity", true, ident),
		Fixed("rules", true, rules),
		Fixed("output_style", false, o.OutputStyle),
		{Key: "environment", Text: func(context.Context) (string, error) { return environment(o), nil }},
		MemorySection(o.Memory),
		TokenBudgetSection(o.TokenBudgets),
		Fixed(MCPKey, false, o.MCPInstructions),
		Fixed("append", false, o.AppendText),
	}
}

func environment(o Options) string {
	var b strings.Builder
	b.WriteString("# Environment\n")
	fmt.Fprintf(&b, "Working directory: %s\n", o.Cwd)
	fmt.Fprintf(&b, "Is a git repository: %v\n", o.IsGitRepo)
	fmt.Fprintf(&b, "Platform: %s/%s", runtime.GOOS, runtime.GOARCH)
	if o.OSVersion != "" {
		fmt.Fprintf(&b, " (%s)", o.OSVersion)
	}
	if o.ModelName != "" {
		fmt.Fprintf(&b, "\nModel: %s", o.ModelName)
	}
	return b.String()
}
