package shellsafe

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Expand resolves a word whose value depends on variables the caller
// knows, as the shell would: "$HOME/.config", ${PWD}/x, ~/x. lookup
// returns a variable's value and whether it is known. A fixed word is
// returned as it is. ok is false when anything else in the word is only
// known at run time (a command substitution, an unknown variable, a
// parameter expansion with an operator such as ${x:-y}), or when an
// unquoted expansion could be split into several words or globbed.
//
// A tilde is not expanded: the caller resolves ~ as it resolves paths.
func Expand(w Word, lookup func(name string) (string, bool)) (value string, ok bool) {
	if !w.Dynamic {
		return w.Value, true
	}
	if len(w.Value) > 4096 {
		return "", false
	}
	parser := parsers.Get().(*syntax.Parser)
	f, err := parser.Parse(strings.NewReader(": "+w.Value), "")
	parsers.Put(parser)
	if err != nil || len(f.Stmts) != 1 {
		return "", false
	}
	call, isCall := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !isCall || len(call.Args) != 2 || len(f.Stmts[0].Redirs) > 0 {
		return "", false
	}
	var b strings.Builder
	param := func(p *syntax.ParamExp, quoted bool) bool {
		if p.Excl || p.Length || p.Width || p.Param == nil || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
			return false
		}
		v, known := lookup(p.Param.Value)
		if !known || (!quoted && strings.ContainsAny(v, " \t\n*?[")) {
			return false
		}
		b.WriteString(v)
		return true
	}
	for _, part := range call.Args[1].Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if unquoted(&b, p.Value) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					doubleQuoted(&b, q.Value)
				case *syntax.ParamExp:
					if !param(q, true) {
						return "", false
					}
				default:
					return "", false
				}
			}
		case *syntax.ParamExp:
			if !param(p, false) {
				return "", false
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
