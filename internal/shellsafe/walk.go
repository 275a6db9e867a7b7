package shellsafe

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxBraceWords bounds brace expansion ({a,b}{c,d} …); a word that would
// expand to more is dynamic.
const maxBraceWords = 256

// walker turns a syntax tree into a Script.
type walker struct {
	src     string // the text parsed, for Source
	depth   int
	s       *Script
	inSubst bool
	repeats bool // inside a loop or function body
}

func (w *walker) stmts(sts []*syntax.Stmt) {
	for _, st := range sts {
		if len(w.s.Commands) >= maxCommands {
			// Not followed further: the line asks as a whole.
			w.s.addReason("the command line runs more than %d commands", maxCommands)
			return
		}
		w.stmt(st)
	}
}

func (w *walker) stmt(st *syntax.Stmt) {
	if st == nil {
		return
	}
	if call, ok := st.Cmd.(*syntax.CallExpr); ok {
		w.call(st, call)
		return
	}
	w.s.Redirects = append(w.s.Redirects, w.redirects(st.Redirs)...)
	switch c := st.Cmd.(type) {
	case nil: // only redirections: "> file"
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.BinaryCmd:
		w.stmt(c.X)
		var last *Command
		if n := len(w.s.Commands); n > 0 && c.Op == syntax.AndStmt && endsInCall(c.X) {
			last = w.s.Commands[n-1]
		}
		w.stmt(c.Y)
		if _, ok := c.Y.Cmd.(*syntax.CallExpr); ok && last != nil && len(w.s.Commands) > 0 {
			if y := w.s.Commands[len(w.s.Commands)-1]; y != last {
				y.After = last
			}
		}
	case *syntax.IfClause:
		for cl := c; cl != nil; cl = cl.Else {
			w.stmts(cl.Cond)
			w.stmts(cl.Then)
		}
	case *syntax.WhileClause:
		w.repeated(func(w *walker) { w.stmts(c.Cond); w.stmts(c.Do) })
	case *syntax.ForClause:
		w.substs(c.Loop)
		w.repeated(func(w *walker) { w.stmts(c.Do) })
	case *syntax.CaseClause:
		w.substs(c.Word)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.substs(p)
			}
			w.stmts(it.Stmts)
		}
	case *syntax.FuncDecl:
		// The body may run whenever, and as often as, the function is called.
		w.repeated(func(w *walker) { w.stmt(c.Body) })
	case *syntax.TimeClause:
		w.stmt(c.Stmt)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt)
	case *syntax.DeclClause:
		w.decl(st, c)
	case *syntax.ArithmCmd, *syntax.LetClause, *syntax.TestClause:
		w.substs(c)
	case *syntax.TestDecl:
		w.substs(c.Description)
		w.stmt(c.Body)
	default:
		w.s.addReason("the shell construct %T is not understood", c)
	}
}

// substs finds the command and process substitutions inside node and
// walks the commands they run.
func (w *walker) substs(node syntax.Node) {
	if node == nil {
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			w.subst(x.Stmts)
			return false
		case *syntax.ProcSubst:
			w.subst(x.Stmts)
			return false
		}
		return true
	})
}

// repeated walks what may run more than once.
func (w *walker) repeated(walk func(w *walker)) {
	inner := *w
	inner.repeats = true
	walk(&inner)
}

func (w *walker) subst(sts []*syntax.Stmt) {
	inner := *w
	inner.inSubst = true
	inner.stmts(sts)
}

// call records one simple command.
func (w *walker) call(st *syntax.Stmt, c *syntax.CallExpr) {
	w.substs(c)
	redirs := w.redirects(st.Redirs)
	assigns := w.assigns(c.Assigns)
	if len(c.Args) == 0 {
		// NAME=value alone sets a shell variable for the rest of the line.
		for _, a := range assigns {
			if RiskyVar(a.Name) {
				w.s.addReason("the line sets %s, which changes what later commands run", a.Name)
			}
		}
		w.s.Redirects = append(w.s.Redirects, redirs...)
		return
	}
	cmd := &Command{
		Args:      w.words(c.Args),
		Assigns:   assigns,
		Redirects: redirs,
		Source:    w.slice(st.Pos(), callEnd(c, st.Redirs)),
		InSubst:   w.inSubst,
	}
	stdin, hasStdin := w.heredoc(st.Redirs)
	w.unwrap(cmd, stdin, hasStdin, w.depth)
	if w.repeats {
		markRepeats([]*Command{cmd})
	}
	w.s.Commands = append(w.s.Commands, cmd)
}

// endsInCall reports whether the last command a statement runs is a
// simple command of its own (a, or a && b), so that what follows an
// "&&" runs only when that command succeeded.
func endsInCall(st *syntax.Stmt) bool {
	if st.Background || st.Negated || st.Coprocess {
		return false
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		return len(c.Args) > 0
	case *syntax.BinaryCmd:
		return c.Op == syntax.AndStmt && endsInCall(c.Y)
	}
	return false
}

// markRepeats sets Repeats on commands and the commands they run.
func markRepeats(cs []*Command) {
	for _, c := range cs {
		c.Repeats = true
		markRepeats(c.Inner)
	}
}

// callEnd is where a simple command's text ends: after its words and
// redirections, before any ';' and here-document body.
func callEnd(c *syntax.CallExpr, rs []*syntax.Redirect) syntax.Pos {
	end := c.End()
	for _, r := range rs {
		if r.Word != nil && r.Word.End().After(end) {
			end = r.Word.End()
		}
	}
	return end
}

// decl records export, local, declare, readonly and typeset as commands
// whose words are their assignments.
func (w *walker) decl(st *syntax.Stmt, d *syntax.DeclClause) {
	w.substs(d)
	cmd := &Command{
		Args:    []Word{{Value: d.Variant.Value}},
		Source:  w.slice(st.Pos(), d.End()),
		InSubst: w.inSubst,
	}
	for _, a := range d.Args {
		switch {
		case a.Naked && a.Name == nil: // export $x: the name itself is dynamic
			cmd.Args = append(cmd.Args, w.word(a.Value))
		case a.Naked:
			cmd.Args = append(cmd.Args, Word{Value: a.Name.Value})
		default:
			v := w.assign(a)
			if RiskyVar(v.Name) {
				w.s.addReason("the line sets %s, which changes what later commands run", v.Name)
			}
			cmd.Args = append(cmd.Args, Word{Value: v.Name + "=" + v.Value, Dynamic: v.Dynamic})
		}
	}
	cmd.Redirects = w.redirects(st.Redirs)
	w.s.Commands = append(w.s.Commands, cmd)
}

func (w *walker) assigns(as []*syntax.Assign) []Assign {
	var out []Assign
	for _, a := range as {
		out = append(out, w.assign(a))
	}
	return out
}

func (w *walker) assign(a *syntax.Assign) Assign {
	out := Assign{}
	if a.Name != nil {
		out.Name = a.Name.Value
	}
	switch {
	case a.Array != nil || a.Index != nil:
		out.Value, out.Dynamic = w.slice(a.Pos(), a.End()), true
	case a.Value != nil:
		v := w.word(a.Value)
		out.Value, out.Dynamic = v.Value, v.Dynamic
	}
	return out
}

// words resolves a command's words, brace expansion included.
func (w *walker) words(ws []*syntax.Word) []Word {
	var out []Word
	for _, x := range ws {
		out = append(out, w.expandBraces(x)...)
	}
	return out
}

func (w *walker) expandBraces(x *syntax.Word) []Word {
	src := w.slice(x.Pos(), x.End())
	if !syntax.SplitBraces(x) {
		return []Word{w.word(x)}
	}
	var out []Word
	for bw, err := range expand.BracesSeq(nil, x) {
		if err != nil || len(out) == maxBraceWords {
			return []Word{{Value: src, Dynamic: true}}
		}
		v := w.word(bw)
		if v.Dynamic {
			v.Value = src
		}
		out = append(out, v)
	}
	return out
}

// word resolves one word to the string the program receives.
func (w *walker) word(x *syntax.Word) Word {
	if x == nil {
		return Word{}
	}
	var b strings.Builder
	out := Word{}
	for _, part := range x.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if unquoted(&b, p.Value) {
				out.Glob = true
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					doubleQuoted(&b, lit.Value)
				} else {
					out.Dynamic = true
				}
			}
		case *syntax.ExtGlob:
			// An extended pattern may hold expansions of its own.
			out.Glob, out.Dynamic = true, true
		case *syntax.ProcSubst:
			// The word becomes a /dev/fd path; its commands are walked
			// by substs.
			b.WriteString(w.slice(p.Pos(), p.End()))
		default: // parameter expansion, command substitution, arithmetic
			out.Dynamic = true
		}
	}
	out.Value = b.String()
	if out.Dynamic {
		out.Value = w.slice(x.Pos(), x.End())
	}
	return out
}

// unquoted writes an unquoted literal with its backslash escapes removed;
// it reports whether unescaped pattern characters were seen.
func unquoted(b *strings.Builder, v string) (glob bool) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			if v[i] != '\n' { // backslash-newline joins lines
				b.WriteByte(v[i])
			}
			continue
		case c == '*' || c == '?':
			glob = true
		case c == '[' && strings.IndexByte(v[i+1:], ']') >= 0:
			glob = true
		}
		b.WriteByte(c)
	}
	return glob
}

// doubleQuoted writes a literal from inside double quotes, where a
// backslash escapes only $ ` " \ and newline.
func doubleQuoted(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(c)
	}
}

// redirects resolves redirections and walks the substitutions in them.
func (w *walker) redirects(rs []*syntax.Redirect) []Redirect {
	var out []Redirect
	for _, r := range rs {
		w.substs(r)
		out = append(out, w.redirect(r))
	}
	return out
}

func (w *walker) redirect(r *syntax.Redirect) Redirect {
	out := Redirect{Op: r.Op.String()}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return out
	case syntax.DplIn, syntax.DplOut:
		if v := w.word(r.Word); !v.Dynamic && isFD(v.Value) {
			return out // >&2, <&0, >&-: duplicating a descriptor
		}
	}
	v := w.word(r.Word)
	out.Target, out.Dynamic = v.Value, v.Dynamic || v.Glob
	switch r.Op {
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrAllClob, syntax.DplOut:
		out.Write, out.Truncate = true, true
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		out.Write = true
	}
	return out
}

func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// heredoc returns the text a command reads on standard input from a
// here-document or here-string, when that text is fixed.
func (w *walker) heredoc(rs []*syntax.Redirect) (string, bool) {
	for _, r := range rs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			return heredocBody(r)
		case syntax.WordHdoc:
			v := w.word(r.Word)
			return v.Value, !v.Dynamic
		}
	}
	return "", false
}

// heredocBody returns a here-document's text when it is fixed: taken as
// written under a quoted delimiter, with \$ \` \\ and backslash-newline
// undone under a bare one.
func heredocBody(r *syntax.Redirect) (string, bool) {
	if r.Hdoc == nil {
		return "", true
	}
	quoted := false
	for _, p := range r.Word.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			quoted = true
		case *syntax.Lit:
			quoted = quoted || strings.Contains(p.Value, "\\")
		}
	}
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		if quoted {
			b.WriteString(lit.Value)
		} else {
			heredocText(&b, lit.Value)
		}
	}
	return b.String(), true
}

func heredocText(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && strings.IndexByte("$`\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(c)
	}
}

// slice returns the source between two positions, or "" when they do not
// point into it (synthesized nodes).
func (w *walker) slice(from, to syntax.Pos) string {
	if !from.IsValid() || !to.IsValid() {
		return ""
	}
	a, b := int(from.Offset()), int(to.Offset())
	if a < 0 || b > len(w.src) || a > b {
		return ""
	}
	return strings.TrimSpace(w.src[a:b])
}

// RiskyVar reports whether setting the variable changes which program a
// later word runs or how words are read, or makes a reading command run
// another program (a pager, an editor, git's external diff or ssh).
func RiskyVar(name string) bool {
	switch name {
	case "PATH", "IFS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4",
		"PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "BASH_FUNC",
		"PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE",
		"SSH_ASKPASS", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "PYTHONSTARTUP":
		return true
	}
	for _, prefix := range []string{"LD_", "DYLD_", "GIT_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// ansiC decodes the escapes of a $'…' string.
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'x':
			n, k := hexDigits(s[i+1:], 2)
			if k == 0 {
				b.WriteString(`\x`)
				continue
			}
			b.WriteByte(byte(n))
			i += k
		case 'u', 'U':
			max := 4
			if c == 'U' {
				max = 8
			}
			n, k := hexDigits(s[i+1:], max)
			if k == 0 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			b.WriteRune(rune(n))
			i += k
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		default:
			if c >= '0' && c <= '7' {
				n, k := 0, 0
				for k < 3 && i+k < len(s) && s[i+k] >= '0' && s[i+k] <= '7' {
					n = n*8 + int(s[i+k]-'0')
					k++
				}
				b.WriteByte(byte(n))
				i += k - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	v, _, _ := strings.Cut(b.String(), "\x00") // bash stops at a NUL
	return v
}

func hexDigits(s string, max int) (n, k int) {
	for k < max && k < len(s) {
		var d int
		switch c := s[k]; {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return n, k
		}
		n = n*16 + d
		k++
	}
	return n, k
}

// errorf formats a reason.
func errorf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
