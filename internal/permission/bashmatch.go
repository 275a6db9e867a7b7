package permission

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/shellsafe"
)

// match is a three-way answer: a rule may match a command whose words
// are only known at run time.
type match int

const (
	no match = iota
	maybe
	yes
)

// bashPattern is a Bash rule's specifier, compiled. Claude Code's forms:
//
//	npm run build       exactly that command
//	npm run test:*      that command, or it followed by more words
//	git commit *        the same (a single trailing " *")
//	git * main, ls*     * matches any text, spaces included
//
// Words are compared as the shell reads them, so quoting does not matter:
// Bash(git status) matches 'git' status.
type bashPattern struct {
	all    bool
	words  []string       // exact and prefix: the words
	prefix bool           // the words may be followed by more
	raw    string         // exact: the text as written
	re     *regexp.Regexp // wildcard
	lit    string         // wildcard: the text before the first *
}

func compileBash(spec string) bashPattern {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "" || spec == "*":
		return bashPattern{all: true}
	case strings.HasSuffix(spec, ":*"):
		return wordsPattern(strings.TrimSuffix(spec, ":*"), true)
	case strings.HasSuffix(spec, " *") && stars(spec) == 1:
		return wordsPattern(strings.TrimSuffix(spec, " *"), true)
	case stars(spec) > 0:
		lit, _, _ := strings.Cut(spec, "*")
		return bashPattern{re: wildcard(spec), lit: lit}
	}
	p := wordsPattern(spec, false)
	p.raw = spec
	return p
}

// stars counts the unescaped * of a pattern.
func stars(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*':
			n++
		}
	}
	return n
}

func wordsPattern(text string, prefix bool) bashPattern {
	words, ok := shellsafe.Words(text)
	if !ok {
		words = strings.Fields(text)
	}
	return bashPattern{words: words, prefix: prefix, raw: text}
}

// match matches a command. For an allow rule (strict) only a sure match
// counts, and a command whose assignments could change what runs
// (PATH=… cmd) never matches.
func (bp bashPattern) match(c *shellsafe.Command, strict bool) match {
	if bp.all {
		return yes
	}
	if strict {
		if len(c.Args) == 0 || c.Args[0].Dynamic || c.Args[0].Glob || riskyAssigns(c) {
			return no
		}
		if m := bp.matchWords(c.Argv(), c.FirstDynamic(), c); m == yes {
			return yes
		}
		return no
	}
	argv := c.Argv()
	m := bp.matchWords(argv, c.FirstDynamic(), c)
	if m != yes && len(argv) > 0 && path.Base(argv[0]) != argv[0] {
		// A deny rule for rm also catches /bin/rm.
		short := slices.Clone(argv)
		short[0] = path.Base(argv[0])
		m = max(m, bp.matchWords(short, c.FirstDynamic(), c))
	}
	return m
}

// matchWords matches the words of a command; the words from index k on
// are only known at run time, and a command with OpenArgs gets more words.
func (bp bashPattern) matchWords(argv []string, k int, c *shellsafe.Command) match {
	if bp.re != nil {
		return bp.matchWildcard(argv, k, c)
	}
	n := len(bp.words)
	switch {
	case n == 0:
		return no
	case k >= n && len(argv) >= n && slices.Equal(argv[:n], bp.words):
		if bp.prefix || (len(argv) == n && !c.OpenArgs) {
			return yes
		}
		if c.OpenArgs || k < len(argv) {
			return maybe
		}
		return no
	case !bp.prefix && bp.raw != "" && strings.TrimSpace(c.Source) == bp.raw && !c.OpenArgs:
		return yes // the rule was written for exactly this text
	case k < n && k <= len(argv) && slices.Equal(argv[:k], bp.words[:k]):
		return maybe // the unknown words may complete the rule's
	case c.OpenArgs && len(argv) < n && slices.Equal(argv, bp.words[:len(argv)]):
		return maybe
	}
	return no
}

func (bp bashPattern) matchWildcard(argv []string, k int, c *shellsafe.Command) match {
	text := c.Text()
	if k < len(argv) || c.OpenArgs {
		known := strings.Join(argv[:min(k, len(argv))], " ")
		if k == len(argv) && bp.re.MatchString(text) {
			return yes
		}
		if strings.HasPrefix(known, bp.lit) || strings.HasPrefix(bp.lit, known) {
			return maybe
		}
		return no
	}
	if bp.re.MatchString(text) || bp.re.MatchString(strings.TrimSpace(c.Source)) {
		return yes
	}
	return no
}

// riskyAssigns reports whether a command's assignments could change what
// it runs or are unknown.
func riskyAssigns(c *shellsafe.Command) bool {
	for _, a := range c.Assigns {
		if a.Dynamic || shellsafe.RiskyVar(a.Name) {
			return true
		}
	}
	return false
}
