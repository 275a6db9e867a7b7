package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// Reference defaults of the snip nudge.
const (
	// DefaultNudgeAt is the share of the auto-compaction threshold above
	// which the model is reminded that it can snip.
	DefaultNudgeAt = 0.7
	// DefaultNudgeEvery is the fewest requests between two reminders.
	DefaultNudgeEvery = 10
	// nudgeList is how many of the largest snippable messages a reminder
	// names; nudgeMinTokens the smallest worth naming.
	nudgeList      = 5
	nudgeMinTokens = 200
)

// SnipConfig configures the snip layer and its tool.
type SnipConfig struct {
	// Transcript records snip boundaries. Required by the tool.
	Transcript Transcript
	// History returns the conversation as the engine holds it at the
	// moment of the call; the tool resolves ids against it (the response
	// calling Snip included). Nil resolves against the history of the
	// last request prepared.
	History func() []model.Message
	// KeepHistory keeps snipped messages in the engine's history, for a
	// view that scrolls back over them; requests still leave them out.
	// By default (headless) the history drops them.
	KeepHistory bool
	// Pins are the session's pins, which are never snipped. May be nil.
	Pins *Pins
	// NudgeAt is the share of the auto-compaction threshold from which
	// the model is reminded that it can snip; 0 is DefaultNudgeAt,
	// negative turns the reminder off.
	NudgeAt float64
	// NudgeEvery is the fewest requests between two reminders; 0 is
	// DefaultNudgeEvery.
	NudgeEvery int
}

// Snip is the snip layer (SPEC C1). Every user message sent carries a
// tag, [id:xxxxxx], derived from its first transcript uuid, so the model
// can name it; the Snip tool (see Tool) removes the messages the model
// names, and from the next request on they are left out. It is a
// projection: what a request carries changes, the transcript keeps every
// line (a snip_boundary line lists what was removed, which a resume
// applies), and the engine's history drops the snipped messages unless
// KeepHistory is set. Near the auto-compaction threshold it reminds the
// model, now and then, that snipping frees room.
//
// Tags are appended to the message's last text of its own (not to the
// reminders the harness attached) or, for tool results, as a text block
// of their own; they depend only on the message, so the bytes of a
// message are the same in every request and the prompt cache holds.
//
// Apply runs on the engine's goroutine and the tool on a tool goroutine;
// one mutex guards the state they share.
type Snip struct {
	cfg SnipConfig

	mu      sync.Mutex
	removed map[string]bool // uuids snipped, until a compaction drops them
	fresh   bool            // a snip since the last request was prepared
	since   int             // requests since the last reminder
	last    []model.Message // the history of the last request prepared
}

// NewSnip returns the snip layer.
func NewSnip(cfg SnipConfig) *Snip {
	if cfg.NudgeAt == 0 {
		cfg.NudgeAt = DefaultNudgeAt
	}
	if cfg.NudgeEvery <= 0 {
		cfg.NudgeEvery = DefaultNudgeEvery
	}
	return &Snip{cfg: cfg, removed: map[string]bool{}, since: cfg.NudgeEvery}
}

// Name implements Layer.
func (s *Snip) Name() string { return "snip" }

// Reset implements Resetter: a compaction reads the history back without
// the snipped messages, and starts the reminders afresh.
func (s *Snip) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.removed)
	s.fresh, s.since = false, s.cfg.NudgeEvery
	s.last = nil // the history before the compaction, which may be long
}

// Apply implements Layer: it leaves snipped messages out of the request
// (and, headless, out of the history), tags the user messages, and adds
// the reminder when it is due. It reports the tokens of messages snipped
// since the last request: later requests never carried them.
func (s *Snip) Apply(ctx context.Context, st *State) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var freed int64
	if len(s.removed) > 0 {
		send, ok := dropSnipped(st.Send, s.removed)
		if ok && s.fresh {
			freed = max(0, tokens.EstimateMessages(st.Send)-tokens.EstimateMessages(send))
		}
		if p := st.Prep; p != nil && !s.cfg.KeepHistory {
			if slicesSame(st.Send, p.History) {
				if ok {
					p.History, p.Replaced = send, true
				}
			} else if h, ok := dropSnipped(p.History, s.removed); ok {
				p.History, p.Replaced = h, true
			}
		}
		st.Send = send
	}
	s.fresh = false
	if st.Prep != nil {
		s.last = st.Prep.History
	}
	if st.managed && st.deferMarks {
		// Whether the Manager compacts is known only once the layers are
		// done: the usage may be under the threshold and the request,
		// weighed as itself, over it. A summary reads each message tagged
		// only as far as it reads, so the Manager tags them all only if
		// the request goes out as it is (weighing the tags before, by
		// MarkWeight).
		st.unmarked = true
	} else {
		st.Send = s.Mark(st.Send)
	}
	s.since++
	if s.cfg.NudgeAt > 0 && s.since >= s.cfg.NudgeEvery {
		at := int64(s.cfg.NudgeAt * float64(st.Window.AutoCompactAt()))
		if used := st.Remaining() - freed; used >= at { // the manager counts freed after Apply
			threshold := st.Window.AutoCompactAt()
			remind := func(st *State) {
				if text := s.nudge(ctx, st.Send, used, threshold); text != "" {
					st.Send = withReminder(st.Send, text, spareBreakpoint(st))
					s.since = 0
				}
			}
			if !st.managed {
				remind(st)
			} else {
				// At the threshold the Manager compacts, and the summary
				// replaces what would carry the reminder: it is made (the
				// transcript read back, every message weighed) only once
				// the Manager knows the request goes out as it is, which
				// it may not before the layers are done (see above), and
				// from the request as they left it: results micro cleared
				// weigh as cleared, spans collapse folded are not named.
				st.later = append(st.later, func(st *State) {
					s.mu.Lock()
					defer s.mu.Unlock()
					remind(st)
				})
			}
		}
	}
	return freed, nil
}

// Mark implements Marker: it returns msgs with every user message tagged
// [id:xxxxxx] (meta messages, made only of what the harness added, are
// not), leaving msgs as they are.
func (s *Snip) Mark(msgs []model.Message) []model.Message {
	var out []model.Message
	var pool []model.Block
	for i, m := range msgs {
		if m.Role != model.RoleUser || len(m.IDs) == 0 || isMeta(m) {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
			// One allocation holds the blocks of the messages tagged.
			n := 0
			for _, m := range msgs[i:] {
				if m.Role == model.RoleUser && len(m.IDs) > 0 {
					n += len(m.Content) + 1
				}
			}
			pool = make([]model.Block, 0, n)
		}
		out[i], pool = tagged(m, pool)
	}
	if out == nil {
		return msgs
	}
	return out
}

// MarkWeight implements Marker: the tokens tokens.EstimateFloor counts
// for the tags Mark would add to msgs, without adding them.
func (s *Snip) MarkWeight(msgs []model.Message) int64 {
	var n int64
	var buf [16]byte
	for _, m := range msgs {
		if m.Role != model.RoleUser || len(m.IDs) == 0 || isMeta(m) {
			continue
		}
		tag := len(appendTag(buf[:0], m.IDs[0]))
		last := -1
		for i, b := range m.Content {
			if b.Type == model.BlockText && !harnessText(b.Text) {
				last = i
			}
		}
		if last >= 0 {
			text := len(m.Content[last].Text)
			n += tokens.EstimateLen(text+1+tag) - tokens.EstimateLen(text)
		} else {
			n += tokens.EstimateLen(tag) + tokens.BlockOverhead
		}
	}
	return n
}

// ShortID derives the short id a message is tagged with from its uuid, as
// Claude Code does: the uuid's first ten hexadecimal digits (hyphens
// left out) read as a number and written in base 36, cut to six
// characters (fewer when the number is small). Like JavaScript's
// parseInt, only the leading hexadecimal digits of those ten count. A
// uuid that starts with no hexadecimal digit at all (none that Claude
// Code or cairn writes) gets the same treatment applied to its FNV-1a
// hash instead, where Claude Code would write "NaN".
func ShortID(uuid string) string {
	var buf [16]byte
	return string(appendShortID(buf[:0], uuid))
}

// appendShortID appends ShortID(uuid) to b.
func appendShortID(b []byte, uuid string) []byte {
	var v uint64
	n, hexOnly := 0, true
	for i := 0; i < len(uuid) && n < 10; i++ {
		c := uuid[i]
		if c == '-' {
			continue
		}
		n++
		if !hexOnly {
			continue
		}
		if !isHexDigit(c) {
			hexOnly = false
			if n == 1 {
				n = -1 // no leading digit at all
				break
			}
			continue
		}
		v = v<<4 | uint64(hexValue(c))
	}
	if n <= 0 {
		h := fnv.New64a()
		h.Write([]byte(uuid))
		v = h.Sum64() >> 24
	}
	start := len(b)
	b = strconv.AppendUint(b, v, 36)
	return b[:min(len(b), start+6)]
}

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Tag is the tag of the message whose first uuid is uuid.
func Tag(uuid string) string {
	var buf [16]byte
	return string(appendTag(buf[:0], uuid))
}

// appendTag appends Tag(uuid) to b.
func appendTag(b []byte, uuid string) []byte {
	return append(appendShortID(append(b, "[id:"...), uuid), ']')
}

// tagPattern matches a tag at the end of a text, alone or after a newline.
var tagPattern = regexp.MustCompile(`(?:^|\n)\[id:[0-9a-z]{1,8}\]$`)

// StripTag returns text without the tag a request added at its end.
func StripTag(text string) string {
	if loc := tagPattern.FindStringIndex(text); loc != nil {
		return text[:loc[0]]
	}
	return text
}

// tagged returns m with its tag, its blocks copied to the end of pool
// (whose capacity they fit), and the pool after them. m is a user
// message from the transcript that is not meta.
func tagged(m model.Message, pool []model.Block) (model.Message, []model.Block) {
	var buf [16]byte
	tag := appendTag(buf[:0], m.IDs[0])
	start := len(pool)
	pool = append(pool, m.Content...)
	content := pool[start:]
	last := -1
	for i, b := range content {
		if b.Type == model.BlockText && !harnessText(b.Text) {
			last = i
		}
	}
	if last >= 0 {
		content[last].Text = content[last].Text + "\n" + string(tag)
	} else {
		pool = append(pool, model.TextBlock(string(tag)))
		content = pool[start:]
	}
	m.Content = content[:len(content):len(content)]
	return m, pool
}

// isMeta reports whether a user message holds only what the harness
// added (reminders, a compaction's summary): the model never names it.
func isMeta(m model.Message) bool {
	for _, b := range m.Content {
		if b.Type != model.BlockText || !harnessText(b.Text) {
			return false
		}
	}
	return true
}

// IsHarnessText reports whether a user message's text was added by the
// harness (a reminder, a compaction's summary, a synthetic "continue")
// rather than typed by the user.
func IsHarnessText(s string) bool { return harnessText(s) }

// IsSummary reports whether a user message's text is a compaction's
// summary.
func IsSummary(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), summaryPreamble) }

// harnessText reports whether a text block was added by the harness
// rather than typed by the user.
func harnessText(s string) bool {
	t := strings.TrimSpace(s)
	return strings.HasPrefix(t, "<system-reminder>") || strings.HasPrefix(t, "<local-command-caveat>") ||
		strings.HasPrefix(t, summaryPreamble) || t == transcript.ContinueText || t == transcript.MissingStartText
}

// dropSnipped returns msgs without the messages holding a removed uuid,
// joining the messages of one role that end up adjacent as a resume of
// the transcript joins them, so the live view and the resumed one are
// the same. ok is false when nothing was dropped (and msgs is returned).
func dropSnipped(msgs []model.Message, removed map[string]bool) ([]model.Message, bool) {
	var out []model.Message
	dropped := false
	for _, m := range msgs {
		if slices.ContainsFunc(m.IDs, func(id string) bool { return removed[id] }) {
			dropped = true
			continue
		}
		if n := len(out); dropped && n > 0 && out[n-1].Role == m.Role {
			out[n-1] = join(out[n-1], m)
			continue
		}
		out = append(out, m)
	}
	if !dropped {
		return msgs, false
	}
	return out, true
}

// join joins two adjacent messages of one role as the transcript loader
// does: a newline ends the first message's last text when the second
// starts with text, and tool results come first.
func join(a, b model.Message) model.Message {
	content := slices.Clone(a.Content)
	if a.Role == model.RoleUser && len(content) > 0 && len(b.Content) > 0 &&
		content[len(content)-1].Type == model.BlockText && b.Content[0].Type == model.BlockText {
		content[len(content)-1].Text += "\n"
	}
	content = append(content, b.Content...)
	if a.Role == model.RoleUser {
		var results, rest []model.Block
		for _, c := range content {
			if c.Type == model.BlockToolResult {
				results = append(results, c)
			} else {
				rest = append(rest, c)
			}
		}
		content = append(results, rest...)
	}
	ids := append(slices.Clone(a.IDs), b.IDs...)
	return model.Message{Role: a.Role, Content: content, IDs: ids}
}

// maxBreakpoints is the API's limit on cache_control blocks in a request.
const maxBreakpoints = 4

// spareBreakpoint reports whether the request has room for one more
// cache breakpoint besides the one the engine puts on its last block.
func spareBreakpoint(st *State) bool {
	n := 1 // the engine's, on the last block
	if p := st.Prep; p != nil {
		for _, b := range p.System {
			if b.Cache {
				n++
			}
		}
		for _, t := range p.Tools {
			if t.Cache {
				n++
			}
		}
	}
	for _, m := range st.Send {
		for _, b := range m.Content {
			if _, ok := b.Extra["cache_control"]; ok {
				n++
			}
		}
	}
	return n < maxBreakpoints
}

// withReminder returns msgs with text added as the last block of the
// last (user) message. The reminder is for this request only, so it goes
// after everything the next request repeats, and — when the request has
// a breakpoint to spare — the block before it is a cache breakpoint: the
// next request, which lacks the reminder, then reads everything up to it
// from the cache instead of writing the last exchange again.
func withReminder(msgs []model.Message, text string, breakpoint bool) []model.Message {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != model.RoleUser {
		return msgs
	}
	out := slices.Clone(msgs)
	last := out[n-1]
	content := slices.Clone(last.Content)
	if k := len(content); breakpoint && k > 0 {
		b := content[k-1]
		b.Extra = maps.Clone(b.Extra)
		if b.Extra == nil {
			b.Extra = map[string]json.RawMessage{}
		}
		b.Extra["cache_control"] = model.CacheControl
		content[k-1] = b
	}
	last.Content = append(content, model.TextBlock(text))
	out[n-1] = last
	return out
}

// nudge returns the reminder that the model can snip, naming the largest
// messages in send that the Snip tool would remove; "" when there is none
// worth naming.
func (s *Snip) nudge(ctx context.Context, send []model.Message, used, threshold int64) string {
	type candidate struct {
		tag    string
		tokens int64
		what   string
	}
	var lines *lineInfo
	if l, ok := s.cfg.Transcript.(Lines); ok {
		if entries, err := l.Lines(ctx); err == nil {
			lines = newLineInfo(entries)
		}
	}
	var list []candidate
	latest, turn := latestPrompt(send), len(send)-1
	for i, m := range send {
		if m.Role != model.RoleUser || len(m.IDs) == 0 || isMeta(m) {
			continue
		}
		unit := pairOf(send, i)
		if slices.ContainsFunc(unit, func(j int) bool { return s.reason(send, j, latest, turn, lines) != "" }) {
			continue
		}
		var n int64
		for _, j := range unit {
			n += tokens.EstimateMessages(send[j : j+1])
		}
		if n >= nudgeMinTokens {
			list = append(list, candidate{Tag(m.IDs[0]), n, describe(send, unit)})
		}
	}
	if len(list) == 0 {
		return ""
	}
	slices.SortStableFunc(list, func(a, b candidate) int { return int(b.tokens - a.tokens) })
	var b strings.Builder
	fmt.Fprintf(&b, "The context is filling up: about %s tokens are in use, and at %s the conversation will be compacted into a summary. ", thousands(used), thousands(threshold))
	b.WriteString("You can free room yourself, keeping the rest of the conversation word for word: call the Snip tool with the ids of messages you will not need again — finished explorations, failed attempts, output you have already acted on. A tool call and its result go together. The largest messages you may snip:")
	for _, c := range list[:min(len(list), nudgeList)] {
		fmt.Fprintf(&b, "\n- %s about %s tokens: %s", c.tag, thousands(c.tokens), c.what)
	}
	b.WriteString("\nSnip only what you are sure about, and do not mention this reminder to the user.")
	return transcript.WrapSystemReminder(b.String())
}

// describe names a snippable unit in a line: the tool call it holds, or
// the start of the user's words.
func describe(msgs []model.Message, unit []int) string {
	for _, j := range unit {
		for _, b := range msgs[j].Content {
			if b.Type == model.BlockToolUse {
				if arg := firstString(b.Input); arg != "" {
					return fmt.Sprintf("%s call (%s) and its result", b.Name, shorten(arg, 60))
				}
				return b.Name + " call and its result"
			}
		}
	}
	for _, j := range unit {
		for _, b := range msgs[j].Content {
			if b.Type == model.BlockText && !harnessText(b.Text) {
				return fmt.Sprintf("message %q", shorten(strings.Join(strings.Fields(StripTag(b.Text)), " "), 60))
			}
		}
	}
	return "message"
}

// firstString returns the first string value of a JSON object, in the
// order the object lists its fields.
func firstString(input json.RawMessage) string {
	dec := json.NewDecoder(strings.NewReader(string(input)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return ""
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
