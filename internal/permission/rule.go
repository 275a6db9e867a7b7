package permission

import (
	"fmt"
	"regexp"
	"strings"
)

// Rule is one permission rule: a tool name, and optionally a specifier
// that narrows it to some calls — Bash(npm test:*), Read(./src/**),
// WebFetch(domain:example.com). Claude Code's syntax.
type Rule struct {
	Tool string
	// Specifier is the text between the parentheses; "" when the rule
	// names the whole tool.
	Specifier string
	// Source says where the rule was written: a settings file's path,
	// "--allowedTools" or "--disallowedTools".
	Source string
	// Root is the folder a "/path" specifier is relative to: the project
	// of the settings file the rule came from.
	Root string
	// Line is where in Source the rule is written, from 1; 0 when not
	// known.
	Line int
	// Broken, when not empty, says why the rule as written (kept in
	// Specifier) cannot be read. A broken deny or ask rule is kept rather
	// than dropped, so that a typo never lets through what it was meant
	// to stop: it covers every call of the tool it names (Tool), or of
	// every tool when even the name cannot be told (Tool is then "").
	Broken string
}

// String returns the rule as written in settings.
func (r Rule) String() string {
	if r.Specifier == "" || r.Broken != "" {
		return r.Specifier + r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// broken keeps a rule that does not parse, as Rule.Broken describes.
func broken(text string, err error) Rule {
	r := Rule{Specifier: strings.TrimSpace(text), Broken: err.Error()}
	name, _, _ := strings.Cut(r.Specifier, "(")
	if name = strings.TrimSpace(name); toolName.MatchString(name) {
		r.Tool = name
	}
	return r
}

// whole reports whether the rule covers every call of its tool.
func (r Rule) whole() bool {
	return r.Specifier == "" || r.Broken != "" || (r.Tool == "Bash" && strings.TrimSpace(r.Specifier) == "*")
}

// coversCall reports whether the rule is about calls of tool at all; k
// says what the call does to files (an edit, a read), as its tool told.
func (r Rule) coversCall(tool string, k kind) bool {
	if r.Broken != "" && r.Tool == "" {
		return true
	}
	return coversTool(r.Tool, tool, k)
}

// Rules are the rules of every settings file and flag, by what they do.
type Rules struct {
	Allow, Ask, Deny []Rule
	// compiled holds the Bash specifiers compiled (which parses them as
	// shell words); it is built by Compile and only read after, so copies
	// of Rules share it safely. A specifier missing from it is compiled
	// when used.
	compiled map[string]bashPattern
}

// Compile returns the rules with their Bash specifiers compiled once,
// so that checking a command does not parse them again. Rules are
// matched the same either way; Checker compiles its own.
func (rs Rules) Compile() Rules {
	rs.compiled = make(map[string]bashPattern)
	for _, list := range [][]Rule{rs.Allow, rs.Ask, rs.Deny} {
		for _, r := range list {
			if r.Tool == "Bash" && !r.whole() {
				rs.compiled[r.Specifier] = compileBash(r.Specifier)
			}
		}
	}
	return rs
}

// pattern returns a Bash specifier compiled.
func (rs Rules) pattern(spec string) bashPattern {
	if p, ok := rs.compiled[spec]; ok {
		return p
	}
	return compileBash(spec)
}

var toolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_\-*]*$`)

// ParseRule reads one rule such as Bash(git diff:*) or mcp__github.
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	tool, spec := s, ""
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return Rule{}, fmt.Errorf("permission rule %q has no closing parenthesis; write Tool or Tool(specifier)", s)
		}
		tool, spec = s[:i], s[i+1:len(s)-1]
	}
	tool = strings.TrimSpace(tool)
	if !toolName.MatchString(tool) {
		return Rule{}, fmt.Errorf("permission rule %q does not start with a tool name; write Tool or Tool(specifier), e.g. Bash(npm test:*)", s)
	}
	return Rule{Tool: tool, Specifier: spec}, nil
}

// SplitRules splits a flag value holding several rules, separated by
// commas or spaces outside parentheses: "Bash(git log:*) Edit,Read".
func SplitRules(s string) []string {
	var out []string
	depth, start := 0, -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, s[start:end])
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(s))
	return out
}

// coversTool reports whether a rule naming ruleTool applies to a call of
// tool that does k to files. Edit rules apply to every call that edits
// files, Read rules to every call that only reads them, whatever its tool
// is called: the tool says which (tool.PathToucher, Request.Paths).
func coversTool(ruleTool, tool string, k kind) bool {
	switch {
	case ruleTool == tool:
		return true
	case ruleTool == "Edit":
		return k == kindEdit
	case ruleTool == "Read":
		return k == kindRead
	case strings.HasPrefix(ruleTool, "mcp__") && strings.HasPrefix(tool, "mcp__"):
		return coversMCP(ruleTool, tool)
	}
	return false
}

// coversMCP: mcp__server covers every tool of the server; a * in the
// tool part is a wildcard (mcp__github__get_*).
func coversMCP(ruleTool, tool string) bool {
	server, name, hasName := strings.Cut(strings.TrimPrefix(ruleTool, "mcp__"), "__")
	tServer, tName, _ := strings.Cut(strings.TrimPrefix(tool, "mcp__"), "__")
	if server != tServer {
		return false
	}
	if !hasName || name == "*" {
		return true
	}
	return wildcard(name).MatchString(tName)
}

// wildcard compiles a pattern where * matches any text (\* a star).
func wildcard(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	escaped := false
	for _, r := range p {
		switch {
		case escaped:
			b.WriteString(regexp.QuoteMeta(string(r)))
			escaped = false
		case r == '\\':
			escaped = true
		case r == '*':
			b.WriteString(`.*`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if escaped {
		b.WriteString(`\\`)
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}
