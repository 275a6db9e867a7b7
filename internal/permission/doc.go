// Package permission decides whether a tool call may run, ask first, or
// not run at all (SPEC G2, G4), the way Claude Code decides it, so that a
// team's Claude Code settings work unchanged.
//
// Rules come from every settings file (rule lists are concatenated
// across files) and from --allowedTools / --disallowedTools, in Claude
// Code's syntax: Tool or Tool(specifier).
//
//   - Bash(npm run build) matches exactly that command; Bash(npm run
//     test:*) and Bash(npm run test *) match it followed by more words
//     (at a word boundary); * elsewhere matches any text. Words are
//     compared as the shell reads them, so quoting does not matter.
//   - A Bash line is split by package shellsafe into every simple command
//     it would run, and each must be allowed on its own: Bash(git
//     status:*) does not allow `git status; rm -rf ~`. A deny rule that
//     matches any of them denies the whole line.
//   - Read and Edit rules take gitignore-style paths: //abs/path, ~/path,
//     /path (from the settings file's project), path or ./path (from the
//     working directory). Edit rules cover Write, MultiEdit and
//     NotebookEdit; Read rules cover Grep, Glob and LS. For Bash, Read and
//     Edit deny rules also apply to the files a line redirects to and to
//     the operands of commands that read or write files.
//   - WebFetch(domain:example.com) matches that host only;
//     WebFetch(domain:*.example.com) its subdomains.
//   - mcp__server__tool is one MCP tool; mcp__server every tool of the
//     server.
//
// Deny beats ask beats allow. When no rule decides, the mode does:
// default allows read-only tools inside the project and asks for the
// rest; acceptEdits also allows file edits inside the project and its
// additional directories; plan allows only read-only tools and denies
// the rest; bypassPermissions allows everything no deny rule denies.
// Whatever the mode (bypass aside), these ask unless a rule allows them:
// writes outside the project, reads outside it, destructive actions,
// network access, MCP tools, and Bash lines with redirections or cd
// leaving the project, eval or sh -c of text that is not fixed, or any
// word only known at run time. In headless mode, and in Claude Code's
// dontAsk mode, what would ask is denied with a reason that says which
// rule or mode would allow it.
//
// [Checker] is the entry point the agent and `cairn permissions check`
// share; [Decide] is the pure function underneath. [Decision.Record] is
// the shape a decision takes in the transcript.
package permission
