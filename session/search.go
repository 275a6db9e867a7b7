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
	raw []byte
	// hint, for a query raw cannot be, is the longest run of the query's
	// ASCII characters that JSON text holds as they are, lower-cased, and
	// that match no other character (in a query that is not ASCII, k and s
	// also match K and ſ): text that holds the query holds the run, or an
	// escape (\u, \/) in its place.
	hint []byte
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
			return m
		}
	}
	unsafe := `"\<>&kKsS`
	if m.ascii { // matched byte for byte: k and s fold to nothing else
		unsafe = `"\<>&`
	}
	plain := func(c byte) bool {
		return c > ' ' && c < 0x7f && !strings.ContainsRune(unsafe, rune(c))
	}
	for i := 0; i < len(q); {
		j := i
		for j < len(q) && plain(q[j]) {
			j++
		}
		if j-i > len(m.hint) {
			m.hint = []byte(lowerASCII(q[i:j]))
		}
		i = j + 1
	}
	return m
}

// mayMatch reports whether a raw line, or the raw message of a decoded
// one, can contain the query at all.
func (m *matcher) mayMatch(line []byte) bool {
	switch {
	case m.raw != nil:
		return indexFold(line, m.raw) >= 0
	case len(m.hint) > 0:
		return indexFold(line, m.hint) >= 0 || bytes.Contains(line, []byte(`\u`)) || bytes.Contains(line, []byte(`\/`))
	}
	return true
}

// indexFold returns the offset of the first occurrence in s of lower, an
// ASCII string in lower case, with ASCII letters of either case; -1 when
// there is none. It looks for the rarest-looking byte of lower with
// bytes.IndexByte (both cases of a letter) and checks the rest around each
// hit, so it neither copies s nor folds each of its bytes.
func indexFold(s, lower []byte) int {
	n := len(lower)
	if n == 0 {
		return 0
	}
	k := 0
	for i := range lower {
		if byteRank(lower[i]) < byteRank(lower[k]) {
			k = i
		}
	}
	lo := lower[k]
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	nextLo, nextUp := -2, -2 // the next hit of each case at or after from; -2: not looked for
	for from := k; from <= len(s)-(n-k); {
		if nextLo != -1 && nextLo < from {
			if nextLo = bytes.IndexByte(s[from:], lo); nextLo >= 0 {
				nextLo += from
			}
		}
		if up == lo {
			nextUp = -1
		} else if nextUp != -1 && nextUp < from {
			if nextUp = bytes.IndexByte(s[from:], up); nextUp >= 0 {
				nextUp += from
			}
		}
		p := nextLo
		if p < 0 || (nextUp >= 0 && nextUp < p) {
			p = nextUp
		}
		if p < 0 {
			return -1
		}
		if start := p - k; start+n <= len(s) && equalFoldASCII(s[start:start+n], lower) {
			return start
		}
		from = p + 1
	}
	return -1
}

// byteRank orders bytes by how rare they are in transcripts, roughly:
// rarer first. Letters go by their frequency in English.
func byteRank(c byte) int {
	const letters = "zqjxkvbpgywfmculdrhsnioate" // rarest first
	switch {
	case 'a' <= c && c <= 'z':
		return 40 + strings.IndexByte(letters, c)
	case '0' <= c && c <= '9':
		return 30
	case c == ' ' || c == '/' || c == '.' || c == '_' || c == '-' || c == ':':
		return 80
	}
	return 20
}

// equalFoldASCII reports whether s is lower with ASCII letters of either
// case.
func equalFoldASCII(s, lower []byte) bool {
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// matchLine decodes a user or assistant line and looks for the query in
// its texts, tool results and tool inputs, in order. It decodes with the
// transcript loader's scanner, and only lines the raw bytes say may match:
// the line's, then its message's.
func (m *matcher) matchLine(line []byte) (Match, bool) {
	if !m.messageMayMatch(line) {
		return Match{}, false
	}
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
				// A copy: the entry's strings share its line's bytes,
				// which a match would otherwise keep whole.
				UUID:      strings.Clone(e.UUID),
				Timestamp: parseTime(e.Timestamp).UTC(),
				Snippet:   snippet(text, start, end),
			}, true
		}
	}
	return Match{}, false
}

// messageMayMatch reports whether the message of a raw line the raw
// filter passed can hold the query in its decoded text (see
// mayMatchMessage): the rest of a line (toolUseResult, cwd, …) is not
// searched, so a hit there alone needs no decoding. It finds the message
// with a loose scan, which reads a valid line as DecodeEntry does: a line
// it cannot read, or one with an escaped key (which may name the message),
// is left to DecodeEntry.
func (m *matcher) messageMayMatch(line []byte) bool {
	if m.raw == nil && len(m.hint) == 0 {
		return true
	}
	may := false
	err := jsonscan.LooseMembers(line, func(key []byte, f jsonscan.Flags, val []byte) error {
		// Keys match fields as encoding/json matches them: without regard
		// to case, the last of repeated keys counting. Every candidate is
		// looked at.
		if f&jsonscan.Escaped != 0 || (bytes.EqualFold(key[1:len(key)-1], patMessage) && m.mayMatchMessage(val)) {
			may = true
		}
		return nil
	})
	return err != nil || may
}

var patMessage = []byte("message")

// mayMatchMessage reports whether a raw message can hold the query in its
// decoded text: the query (or the hint) must be in it, or an escape that
// could stand for one of its characters.
func (m *matcher) mayMatchMessage(msg []byte) bool {
	return m.mayMatch(msg) || bytes.Contains(msg, []byte(`\u`)) || bytes.Contains(msg, []byte(`\/`))
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
