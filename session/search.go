package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// DefaultMaxSearchLine bounds the memory one transcript line may take while
// searching; longer lines are skipped with a warning.
const DefaultMaxSearchLine = 16 << 20

// snippetRunes is about how long a search snippet is.
const snippetRunes = 80

// Match is one transcript line that contains the query.
type Match struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	// UUID is the line's uuid: `cairn sessions rewind --to` takes it.
	UUID string `json:"uuid"`
	// Timestamp is the line's; the zero time when it has none.
	Timestamp time.Time `json:"timestamp"`
	// Snippet is about 80 characters of the text around the match, on one
	// line, with "…" where it was cut.
	Snippet string `json:"snippet"`
}

// SearchOptions say what Search looks for and where.
type SearchOptions struct {
	// Query is matched case-insensitively against the text of user and
	// assistant messages, tool results and the string values of tool
	// inputs.
	Query string
	// Cwd picks the project searched; All searches every project.
	Cwd string
	All bool
	// MaxLineBytes bounds the memory of one line; 0 means
	// DefaultMaxSearchLine.
	MaxLineBytes int
	// Warn receives skipped lines and unreadable files; nil drops them.
	Warn func(string)
}

// ErrEmptyQuery is returned by Search for a query with nothing to match.
var ErrEmptyQuery = errors.New("empty search query")

// Search streams the transcripts of a project (or all) line by line and
// returns every user or assistant line that contains the query: sessions
// newest first, lines in file order. Memory stays bounded by
// MaxLineBytes per transcript read at once, whatever the file sizes.
// Subagent transcripts are left out, as List leaves them out. Cancelling
// ctx stops the search and returns ctx.Err().
func Search(ctx context.Context, home Home, opts SearchOptions) ([]Match, error) {
	if strings.TrimSpace(opts.Query) == "" {
		return nil, ErrEmptyQuery
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxSearchLine
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	dirs, err := projectDirs(home, opts.Cwd, opts.All)
	if err != nil {
		return nil, err
	}
	files, err := transcriptsIn(dirs...)
	if err != nil {
		return nil, err
	}
	sortFiles(files)
	found := make([][]Match, len(files))
	warnings := make([][]string, len(files))
	err = forEach(ctx, len(files), func() func(int) {
		m := newMatcher(opts.Query)
		return func(i int) {
			w := func(s string) { warnings[i] = append(warnings[i], s) }
			var err error
			found[i], err = searchFile(ctx, files[i], m, opts.MaxLineBytes, w)
			if err != nil && ctx.Err() == nil {
				w(fmt.Sprintf("skipped %s: %v", files[i].path, err))
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []Match{}
	for i := range files {
		for _, s := range warnings[i] {
			warn(s)
		}
		out = append(out, found[i]...)
	}
	return out, nil
}

// searchFile returns the matches in one transcript.
func searchFile(ctx context.Context, f sessionFile, m *matcher, maxLine int, warn func(string)) ([]Match, error) {
	src, err := transcript.OpenFile(f.path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	lr := &lineReader{br: bufio.NewReaderSize(io.NewSectionReader(src, 0, src.Size()), 64<<10), max: maxLine}
	var (
		out       []Match
		sideKnown bool
	)
	for {
		line, skipped, err := lr.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if skipped {
			warn(fmt.Sprintf("%s: line %d is longer than %d bytes; skipped it", f.path, lr.no, maxLine))
			continue
		}
		if lr.no%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !sideKnown && bytes.Contains(line, patSidechain) {
			var ll liteLine
			if json.Unmarshal(line, &ll) == nil {
				if ll.IsSidechain {
					return nil, nil
				}
				sideKnown = true
			}
		}
		if !m.mayMatch(line) {
			continue
		}
		if hit, ok := m.matchLine(line); ok {
			hit.SessionID, hit.Path = f.id(), f.path
			out = append(out, hit)
		}
	}
}

// lineReader yields the lines of a stream without their newline, holding
// at most max bytes of one line; a longer line is read past and reported
// as skipped.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
	no  int // number of the line last returned
}

// next returns the next line, valid until the following call. skipped is
// set (and line nil) for a line over the limit. The error is io.EOF at the
// end.
func (r *lineReader) next() (line []byte, skipped bool, err error) {
	r.buf = r.buf[:0]
	over := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err == nil || err == io.EOF {
			if len(chunk) == 0 && len(r.buf) == 0 && !over && err == io.EOF {
				return nil, false, io.EOF
			}
			r.no++
			if over || len(r.buf)+len(chunk) > r.max+1 {
				return nil, true, nil
			}
			if len(r.buf) == 0 {
				return bytes.TrimSuffix(chunk, []byte("\n")), false, nil
			}
			r.buf = append(r.buf, chunk...)
			return bytes.TrimSuffix(r.buf, []byte("\n")), false, nil
		}
		if err != bufio.ErrBufferFull {
			return nil, false, err
		}
		if over || len(r.buf)+len(chunk) > r.max {
			over, r.buf = true, r.buf[:0]
			continue
		}
		r.buf = append(r.buf, chunk...)
	}
}

// matcher finds a query in transcript lines, case-insensitively.
type matcher struct {
	query string
	ascii bool // the query is ASCII: fold bytes, not runes
	lower string
	// raw is the lower-cased query as it appears inside JSON text when it
	// needs no escaping there, so raw lines can be filtered before they
	// are decoded; nil when a raw search could miss a match.
	raw     []byte
	scratch []byte
}

func newMatcher(q string) *matcher {
	m := &matcher{query: q, ascii: true}
	for i := 0; i < len(q); i++ {
		if q[i] >= utf8.RuneSelf {
			m.ascii = false
		}
	}
	if m.ascii {
		m.lower = lowerASCII(q)
		if !strings.ContainsFunc(q, func(r rune) bool { return r < ' ' || r == 0x7f || strings.ContainsRune(`"\<>&`, r) }) {
			m.raw = []byte(m.lower)
		}
	}
	return m
}

// mayMatch reports whether a raw line can contain the query at all.
func (m *matcher) mayMatch(line []byte) bool {
	if m.raw == nil {
		return true
	}
	m.scratch = append(m.scratch[:0], line...)
	for i, c := range m.scratch {
		if 'A' <= c && c <= 'Z' {
			m.scratch[i] = c + 'a' - 'A'
		}
	}
	return bytes.Contains(m.scratch, m.raw)
}

// matchLine decodes a user or assistant line and looks for the query in
// its texts, tool results and tool inputs, in order. It decodes with the
// transcript loader's scanner, and only lines the raw bytes say may match.
func (m *matcher) matchLine(line []byte) (Match, bool) {
	e, err := transcript.DecodeEntry(line)
	if err != nil || e.UUID == "" || e.Message == nil || (e.Type != transcript.TypeUser && e.Type != transcript.TypeAssistant) {
		return Match{}, false
	}
	msg, ok, err := e.DecodeMessage()
	if err != nil || !ok {
		return Match{}, false
	}
	blocks := msg.Content
	for _, b := range blocks {
		var text string
		switch b.Type {
		case model.BlockText:
			text = b.Text
		case model.BlockToolResult:
			text = b.ResultText()
		case model.BlockToolUse:
			text = inputText(b.Input)
		default:
			continue
		}
		if start, end, ok := m.find(text); ok {
			return Match{
				UUID:      e.UUID,
				Timestamp: parseTime(e.Timestamp).UTC(),
				Snippet:   snippet(text, start, end),
			}, true
		}
	}
	return Match{}, false
}

// inputText joins the string values of a tool input, in the order the
// input has them, so a search finds a command or a path but not the
// input's field names, and the same input always gives the same snippet.
// An input that is not valid JSON has no text.
func inputText(raw json.RawMessage) string {
	if !jsonscan.Valid(raw) {
		return ""
	}
	var parts []string
	var walk func(v []byte) error
	walk = func(v []byte) error {
		switch v[0] {
		case '"':
			if s, err := jsonscan.Unquote(v, jsonscan.StringFlags(v)); err == nil {
				parts = append(parts, s)
			}
		case '[':
			return jsonscan.TrustedElements(v, walk)
		case '{':
			return jsonscan.TrustedMembers(v, func(_ []byte, _ jsonscan.Flags, val []byte) error { return walk(val) })
		}
		return nil
	}
	_ = walk(bytes.TrimSpace(raw))
	return strings.Join(parts, " ")
}

// find returns the byte span of the first case-insensitive occurrence of
// the query in s.
func (m *matcher) find(s string) (start, end int, ok bool) {
	if m.ascii {
		i := strings.Index(lowerASCII(s), m.lower)
		return i, i + len(m.lower), i >= 0
	}
	for i := 0; i < len(s); {
		if n := prefixFold(s[i:], m.query); n >= 0 {
			return i, i + n, true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return 0, 0, false
}

// prefixFold returns the length of the prefix of s that equals q under
// Unicode simple case folding, or -1.
func prefixFold(s, q string) int {
	i := 0
	for _, qr := range q {
		if i >= len(s) {
			return -1
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !equalFold(r, qr) {
			return -1
		}
		i += size
	}
	return i
}

func equalFold(a, b rune) bool {
	if a == b {
		return true
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// snippet returns about snippetRunes characters of s around s[start:end],
// white space runs turned into single spaces, with "…" where it was cut.
func snippet(s string, start, end int) string {
	if utf8.RuneCountInString(s[start:end]) > snippetRunes {
		end = runesForward(s, start, snippetRunes)
	}
	room := snippetRunes - utf8.RuneCountInString(s[start:end])
	// Split the room evenly, giving what one side lacks to the other.
	nb := utf8.RuneCountInString(s[runesBack(s, start, room):start])
	na := utf8.RuneCountInString(s[end:runesForward(s, end, room)])
	before := min(nb, max(room/2, room-na))
	after := min(na, room-before)
	from, to := runesBack(s, start, before), runesForward(s, end, after)
	out := strings.Join(strings.Fields(s[from:to]), " ")
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

// runesBack returns the offset n runes before i in s (or 0).
func runesBack(s string, i, n int) int {
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return i
}

// runesForward returns the offset n runes after i in s (or len(s)).
func runesForward(s string, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
