package shellsafe

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds how deep wrappers and nested shells are followed
// (sh -c "sh -c '…'"); deeper nesting is reported as dynamic.
const maxDepth = 8

// maxLen is the longest command line parsed; a longer one is dynamic.
const maxLen = 1 << 20

// maxNesting bounds how deeply parentheses, braces and substitutions may
// nest in the text before it is parsed; maxCommands how many simple
// commands a line may hold. Beyond either the line is dynamic: checking
// it would cost more than any real command needs.
const (
	maxNesting  = 200
	maxCommands = 5000
)

// Script is everything a command line would run.
type Script struct {
	// Commands are the simple commands in source order, including those
	// inside substitutions, bodies and functions. Commands that a wrapper
	// runs hang off their wrapper's Inner; All lists those too.
	Commands []*Command
	// Redirects are the redirections on compound commands ({ …; } > f)
	// and bare redirections (> f). Redirections of a simple command are
	// on that command; AllRedirects lists every one.
	Redirects []Redirect
	// Dynamic is set when something in the line cannot be known without
	// running it; Reasons say what, one sentence each.
	Dynamic bool
	Reasons []string
	// Whole are the Reasons about the line as a whole (it does not parse,
	// it sets PATH), as opposed to those of single commands and words.
	Whole []string
}

// Command is one simple command.
type Command struct {
	// Args are the words the program receives, Args[0] being its name.
	Args []Word
	// Assigns are the NAME=value prefixes that apply to this command only.
	Assigns []Assign
	// Redirects are the redirections written on this command.
	Redirects []Redirect
	// Source is the command as written (for a command a wrapper runs,
	// its words joined).
	Source string
	// Via says how this command runs Inner; Inner is empty when Via is
	// NoWrapper.
	Via   Wrapper
	Inner []*Command
	// OpenArgs is set on a command run by xargs or find -exec: more
	// arguments are added at run time.
	OpenArgs bool
	// InSubst is set on a command that runs inside a substitution
	// ($(…), `…`, <(…), >(…)).
	InSubst bool
	// After is the simple command that must have succeeded for this one
	// to run (the one before "&&" in "cd src && make"), when there is one.
	After *Command
	// Repeats is set on a command that may run more than once, or at a
	// place other than where it is written: in a loop body or a function
	// body.
	Repeats bool
	// Dynamic is set when what the command does cannot be known: its name
	// is not fixed, or it runs text that is not fixed (eval, sh -c).
	// Reason says why. A dynamic argument is marked on the Word alone.
	Dynamic bool
	Reason  string
}

// Word is one argument as the program receives it.
type Word struct {
	// Value is the resolved text; for a dynamic word, the source text.
	Value string
	// Dynamic is set when the value is only known at run time:
	// parameter expansion, command substitution, arithmetic.
	Dynamic bool
	// Glob is set when unquoted pattern characters may make the shell
	// replace the word with file names.
	Glob bool
}

// Assign is one NAME=value prefix.
type Assign struct {
	Name, Value string
	Dynamic     bool
}

// Redirect is one redirection.
type Redirect struct {
	// Op is the operator as written: ">", ">>", "<", "&>", "<<", …
	Op string
	// Target is the file named, resolved like a word; empty for
	// here-documents, here-strings and file-descriptor duplication.
	Target string
	// Write is set when Target is opened for writing; Truncate when an
	// existing file would be emptied first (">", ">|", "&>").
	Write, Truncate bool
	// Dynamic is set when Target is not fixed.
	Dynamic bool
}

// Wrapper is how a command runs the commands in its Inner.
type Wrapper string

const (
	// NoWrapper: the command runs nothing else.
	NoWrapper Wrapper = ""
	// Transparent wrappers run Inner as it is, in the same privilege:
	// env, nice, nohup, timeout, stdbuf, time, command, builtin, exec.
	Transparent Wrapper = "transparent"
	// Privileged wrappers run Inner as another user: sudo, doas.
	Privileged Wrapper = "privileged"
	// Repeater wrappers run Inner with arguments found at run time:
	// xargs, find -exec.
	Repeater Wrapper = "repeater"
	// Shell wrappers run a script: eval, sh -c, bash -c, a shell reading
	// a here-document.
	Shell Wrapper = "shell"
)

// Parse reads src as a Bash command line. It never fails: input that does
// not parse gives a Script with Dynamic set and no commands.
//
// The Script and its commands are shared: Parse hands the same one to
// every caller of the same line for a while (a tool call's line is read
// by its read-only answer, its destructive answer and the permission
// check, one after the other), so callers must not change them. Parsing
// looks at nothing but src, so a shared Script is what parsing again
// would give.
func Parse(src string) *Script {
	if len(src) > maxMemo {
		return parseScript(src, 0)
	}
	if s := memo.get(src); s != nil {
		return s
	}
	s := parseScript(src, 0)
	memo.put(src, s)
	return s
}

// maxMemo is the longest line Parse remembers.
const maxMemo = 4096

// memo holds the last few lines parsed.
var memo parseMemo

type parseMemo struct {
	mu    sync.Mutex
	next  int
	lines [8]string
	trees [8]*Script
}

func (m *parseMemo) get(src string) *Script {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, l := range m.lines {
		if m.trees[i] != nil && l == src {
			return m.trees[i]
		}
	}
	return nil
}

func (m *parseMemo) put(src string, s *Script) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines[m.next], m.trees[m.next] = src, s
	m.next = (m.next + 1) % len(m.lines)
}

// parsers keeps Bash parsers for reuse (the package documents that a
// Parser can be reused once it is done); making one costs about a
// seventh of a check.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

func parseScript(src string, depth int) (s *Script) {
	s = &Script{}
	defer func() {
		if r := recover(); r != nil { // the parser must never take cairn down
			s = &Script{}
			s.addReason("the command line could not be read (%v)", r)
		}
		s.finish()
	}()
	if depth > maxDepth {
		s.addReason("commands are nested more than %d deep", maxDepth)
		return s
	}
	if len(src) > maxLen {
		s.addReason("the command line is longer than %d bytes", maxLen)
		return s
	}
	if strings.IndexByte(src, 0) >= 0 {
		s.addReason("the command line holds a NUL byte, which bash cannot be given")
		return s
	}
	if nesting(src) > maxNesting {
		s.addReason("the command line nests parentheses, braces or substitutions more than %d deep", maxNesting)
		return s
	}
	parser := parsers.Get().(*syntax.Parser)
	f, err := parser.Parse(strings.NewReader(src), "")
	parsers.Put(parser) // not reached when it panics: that one is dropped
	if err != nil {
		s.addReason("the command line does not parse as Bash: %v", err)
		return s
	}
	w := &walker{src: src, depth: depth, s: s}
	w.stmts(f.Stmts)
	return s
}

// nesting is how deeply ( { and ` nest in src, counted without regard to
// quoting: an upper bound of what the parser will recurse through.
func nesting(src string) int {
	depth, deepest, tick := 0, 0, false
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{':
			depth++
		case ')', '}':
			if depth > 0 {
				depth--
			}
		case '`':
			if tick = !tick; tick {
				depth++
			} else if depth > 0 {
				depth--
			}
		}
		deepest = max(deepest, depth)
	}
	return deepest
}

// addReason records a reason about the script as a whole.
func (s *Script) addReason(format string, args ...any) {
	r := fmt.Sprintf(format, args...)
	s.note(r)
	if !slices.Contains(s.Whole, r) {
		s.Whole = append(s.Whole, r)
	}
}

// note records a reason.
func (s *Script) note(r string) {
	s.Dynamic = true
	if !slices.Contains(s.Reasons, r) {
		s.Reasons = append(s.Reasons, r)
	}
}

// finish collects the reasons of dynamic words and commands into the
// script's.
func (s *Script) finish() {
	for _, c := range s.All() {
		if c.Dynamic {
			s.note(c.Reason)
		}
		for _, w := range c.Args {
			if w.Dynamic {
				s.note(w.Value + " is only known when the command runs")
			}
		}
		for _, a := range c.Assigns {
			if a.Dynamic {
				s.note("the value of " + a.Name + " is only known when the command runs")
			}
		}
	}
	for _, r := range s.AllRedirects() {
		if r.Dynamic {
			s.note("the redirection target " + r.Target + " is only known when the command runs")
		}
	}
}

// All returns every command of the script, wrappers before the commands
// they run.
func (s *Script) All() []*Command {
	var out []*Command
	var add func(cs []*Command)
	add = func(cs []*Command) {
		for _, c := range cs {
			out = append(out, c)
			add(c.Inner)
		}
	}
	add(s.Commands)
	return out
}

// AllRedirects returns every redirection of the script: on commands, on
// the commands they run, and on compound commands.
func (s *Script) AllRedirects() []Redirect {
	out := slices.Clone(s.Redirects)
	for _, c := range s.All() {
		out = append(out, c.Redirects...)
	}
	return out
}

// Name returns the command's name as written (a path stays a path), or ""
// when the command has no words.
func (c *Command) Name() string {
	if len(c.Args) == 0 {
		return ""
	}
	return c.Args[0].Value
}

// Argv returns the values of the words.
func (c *Command) Argv() []string {
	out := make([]string, len(c.Args))
	for i, w := range c.Args {
		out[i] = w.Value
	}
	return out
}

// FirstDynamic returns the index of the first dynamic word, or len(Args)
// when every word is fixed.
func (c *Command) FirstDynamic() int {
	for i, w := range c.Args {
		if w.Dynamic {
			return i
		}
	}
	return len(c.Args)
}

// Literal reports whether every word is fixed and the command itself is
// not dynamic.
func (c *Command) Literal() bool {
	return !c.Dynamic && c.FirstDynamic() == len(c.Args)
}

// Text returns the command's words quoted as a shell would need them,
// without assignments and redirections: the canonical form that
// permission rules are matched against.
func (c *Command) Text() string {
	parts := make([]string, len(c.Args))
	for i, w := range c.Args {
		if w.Dynamic || w.Glob {
			parts[i] = w.Value
		} else {
			parts[i] = Quote(w.Value)
		}
	}
	return strings.Join(parts, " ")
}

// Quote returns s quoted for the shell when it needs quoting.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if !strings.ContainsFunc(s, needsQuote) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func needsQuote(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./:=@%+,^~", r)
}

// Words splits s into the words of one simple command with fixed words,
// as the shell would; ok is false when s is anything else (an operator, an
// expansion, more than one command).
func Words(s string) (words []string, ok bool) {
	sc := Parse(s)
	if sc.Dynamic || len(sc.Commands) != 1 || len(sc.Redirects) > 0 {
		return nil, false
	}
	c := sc.Commands[0]
	if len(c.Assigns) > 0 || len(c.Redirects) > 0 || !c.Literal() {
		return nil, false
	}
	for _, w := range c.Args {
		if w.Glob {
			return nil, false
		}
	}
	return c.Argv(), true
}
