package pgstore

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
)

// The full-text index is built here rather than by the server's parser:
// to_tsvector was most of the cost of sending a session (its parser
// recognises URLs, paths, numbers, … in every tool output), while the
// server takes a ready tsvector, sent in binary, for little. A word is a run of
// letters and digits, lowercased; a query is split by the same rule
// (tsqueryOf), so what is indexed and what is asked always agree,
// whatever the server's locale.

const (
	maxWordBytes = 255   // longer runs (hashes, base64) are not words
	maxPositions = 255   // the server keeps at most 256 a lexeme
	maxPosition  = 16383 // the server's largest position
)

// words calls fn with each word of s, lowercased, in order.
func words(s string, fn func(w string)) {
	start := -1
	ascii := true
	emit := func(end int) {
		if end-start <= maxWordBytes {
			w := s[start:end]
			if !ascii || hasUpper(w) {
				w = strings.ToLower(w)
			}
			fn(w)
		}
		start, ascii = -1, true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' {
				if start < 0 {
					start = i
				}
			} else if start >= 0 {
				emit(i)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			ascii = false
		} else if start >= 0 {
			emit(i)
		}
		i += n
	}
	if start >= 0 {
		emit(len(s))
	}
}

func hasUpper(w string) bool {
	for i := 0; i < len(w); i++ {
		if 'A' <= w[i] && w[i] <= 'Z' {
			return true
		}
	}
	return false
}

// tsvectorOf is the tsvector of s: each word once, in the server's order
// (by bytes), with its positions. It goes to the server in binary, which
// the server reads without parsing.
func tsvectorOf(s string) pgtype.TSVector {
	idx := map[string]int{}
	var lex []pgtype.TSVectorLexeme
	n := 0
	words(s, func(w string) {
		n++
		p := uint16(min(n, maxPosition))
		i, ok := idx[w]
		if !ok {
			i = len(lex)
			idx[w] = i
			lex = append(lex, pgtype.TSVectorLexeme{Word: w})
		}
		pos := lex[i].Positions
		if len(pos) < maxPositions && (len(pos) == 0 || pos[len(pos)-1].Position != p) {
			lex[i].Positions = append(pos, pgtype.TSVectorPosition{Position: p})
		}
	})
	slices.SortFunc(lex, func(a, b pgtype.TSVectorLexeme) int { return strings.Compare(a.Word, b.Word) })
	return pgtype.TSVector{Lexemes: lex, Valid: true}
}

// tsqueryOf turns a search in web-search syntax (words, "a phrase",
// -not, or) into the text of a tsquery with the index's words. A term
// with several words ("foo.bar") is the phrase of them. ok is false when
// the search has no words.
func tsqueryOf(q string) (string, bool) {
	var terms []string // each: a tsquery operand, or "|" for or
	for len(q) > 0 {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		if q == "" {
			break
		}
		neg := false
		if q[0] == '-' {
			neg, q = true, q[1:]
		}
		var raw string
		if strings.HasPrefix(q, `"`) {
			end := strings.IndexByte(q[1:], '"')
			if end < 0 {
				raw, q = q[1:], ""
			} else {
				raw, q = q[1:end+1], q[end+2:]
			}
		} else {
			end := strings.IndexFunc(q, unicode.IsSpace)
			if end < 0 {
				end = len(q)
			}
			raw, q = q[:end], q[end:]
			if !neg && strings.EqualFold(raw, "or") {
				terms = append(terms, "|")
				continue
			}
		}
		var ws []string
		words(raw, func(w string) { ws = append(ws, "'"+w+"'") })
		if len(ws) == 0 {
			continue
		}
		t := strings.Join(ws, " <-> ")
		if len(ws) > 1 {
			t = "(" + t + ")"
		}
		if neg {
			t = "!" + t
		}
		terms = append(terms, t)
	}
	var b strings.Builder
	op := ""
	for _, t := range terms {
		if t == "|" {
			if b.Len() > 0 {
				op = " | "
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteString(cmp.Or(op, " & "))
		}
		b.WriteString(t)
		op = ""
	}
	return b.String(), b.Len() > 0
}
