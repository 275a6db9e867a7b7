package instructions

import (
	"iter"
	"path/filepath"
	"strings"
)

// includes returns the @-references of a file's text, in the order
// written: a token starting with @ at the start of a line or after white
// space, up to the next unescaped white space ("\ " is a space). Fenced
// code blocks, indented code and inline code spans are skipped, so an
// example written in a file is not loaded as an include.
func includes(text string) []string {
	var out []string
	for line, code := range lines(text) {
		if !code {
			out = append(out, refsIn(stripCodeSpans(line))...)
		}
	}
	return out
}

// lines yields the lines of a Markdown text, each with whether it is code:
// a fenced block with its fences, or an indented line.
func lines(text string) iter.Seq2[string, bool] {
	return func(yield func(string, bool) bool) {
		fence := "" // the fence of the open code block, "" outside one
		for line := range strings.SplitSeq(text, "\n") {
			trimmed := strings.TrimLeft(line, " ")
			if f := fenceOf(trimmed); f != "" && len(line)-len(trimmed) < 4 {
				switch {
				case fence == "":
					fence = f
				case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence) && strings.TrimSpace(strings.TrimLeft(trimmed, f[:1])) == "":
					fence = ""
				}
				if !yield(line, true) {
					return
				}
				continue
			}
			code := fence != "" || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
			if !yield(line, code) {
				return
			}
		}
	}
}

// fenceOf returns the run of ` or ~ (three or more) a line starts with.
func fenceOf(line string) string {
	if line == "" || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return line[:n]
}

// stripCodeSpans blanks out inline code: a run of backticks up to the next
// run of the same length.
func stripCodeSpans(line string) string {
	if !strings.Contains(line, "`") {
		return line
	}
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		closeAt := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(b) && b[j+m] == '`' {
				m++
			}
			if m == n {
				closeAt = j + m
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n
			continue
		}
		for k := i; k < closeAt; k++ {
			b[k] = ' '
		}
		i = closeAt
	}
	return string(b)
}

// refsIn returns the @-tokens of one line.
func refsIn(line string) []string {
	var out []string
	for i := 0; i < len(line); i++ {
		if line[i] != '@' || (i > 0 && !isSpace(line[i-1])) {
			continue
		}
		var tok strings.Builder
		j := i + 1
		for j < len(line) {
			c := line[j]
			if c == '\\' && j+1 < len(line) && line[j+1] == ' ' {
				tok.WriteByte(' ')
				j += 2
				continue
			}
			if isSpace(c) {
				break
			}
			tok.WriteByte(c)
			j++
		}
		if t := tok.String(); plausible(t) {
			out = append(out, t)
		}
		i = j
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// plausible reports whether an @-token can name a file: @./x, @~/x,
// @/abs, or a relative name starting with a letter, digit, '.', '_' or
// '-' (not an @-mention of a person followed by punctuation only).
func plausible(t string) bool {
	if t == "" || t == "~" {
		return false
	}
	if strings.HasPrefix(t, "~/") || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") {
		return true
	}
	c := t[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// resolve turns an @-token of the file at from into candidate absolute
// paths, most literal first: as written, then without trailing sentence
// punctuation. A #fragment is dropped.
func resolve(tok, from, home string) []string {
	if i := strings.IndexByte(tok, '#'); i > 0 {
		tok = tok[:i]
	}
	toks := []string{tok}
	if t := strings.TrimRight(tok, ".,;:!?)]}'\""); t != tok && t != "" {
		toks = append(toks, t)
	}
	var out []string
	for _, t := range toks {
		switch {
		case strings.HasPrefix(t, "~/"):
			if home != "" {
				out = append(out, filepath.Join(home, t[2:]))
			}
		case filepath.IsAbs(t):
			out = append(out, filepath.Clean(t))
		default:
			out = append(out, filepath.Join(filepath.Dir(from), t))
		}
	}
	return out
}

// looksLikeFile reports whether a token that names nothing was probably
// meant as a file (worth a warning) rather than an @-mention.
func looksLikeFile(tok string) bool {
	return strings.ContainsAny(tok, "/.")
}
