package transcript

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// Texts of the messages Claude Code adds when it resumes a session whose
// last turn did not finish; cairn adds the same ones, so a session resumes
// alike in either program.
const (
	ContinueText      = "Continue from where you left off."
	NoResponseText    = "No response requested."
	InterruptedResult = "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]"
	MissingResult     = "[Tool result missing due to internal error]"
	NoContentText     = "(no content)"
	SyntheticModel    = "<synthetic>"
	MissingStartText  = "[The start of this conversation is missing from its transcript.]"
	// ToolUseInterruptedText is the response sent for one left with
	// nothing once the tool_use ids used before are taken out.
	ToolUseInterruptedText = "[Tool use interrupted]"
)

// Messages returns the conversation as the model is sent it: attachments
// rendered and placed as Claude Code places them, system lines left out
// (local command output kept), the lines of one response merged into one
// assistant message, consecutive user lines merged into one user message,
// and every tool_use answered by a tool_result. Entries that cannot be
// rendered are skipped with a warning.
//
// The messages share their blocks with the entries' decoded messages, and
// their Content and IDs share backing arrays with each other, clipped:
// appending to a message's Content or IDs changes no other message and no
// entry, but a caller that changes a block in place changes it for every
// later call; change blocks in a copy of the Content (as
// engine.WithCacheBreakpoint does).
func (c *Conversation) Messages() []model.Message {
	v := newView(len(c.Entries))
	for e := range sentOrder(c.Entries) {
		switch e.Type {
		case TypeSystem:
			if e.Subtype != "local_command" {
				continue
			}
			var text string
			if json.Unmarshal(e.Content, &text) != nil || text == "" {
				continue
			}
			v.user([]model.Block{model.TextBlock(text)}, e.UUID, alwaysSeam, e)
		case TypeAttachment:
			blocks, err := renderAttachment(e)
			if err != nil {
				c.Warnings = append(c.Warnings, err.Error())
				continue
			}
			if len(blocks) == 0 {
				continue
			}
			if foldsIntoResult(e) && v.foldIntoResult(blocks, e.UUID) {
				continue
			}
			v.user(blocks, e.UUID, neverSeam, e)
		case TypeUser, TypeAssistant:
			m, ok, err := e.DecodeMessage()
			if err != nil {
				c.Warnings = append(c.Warnings, err.Error())
				continue
			}
			if !ok {
				continue
			}
			if e.Type == TypeUser {
				v.user(m.Content, e.UUID, seamBefore, e)
				continue
			}
			if m.Model == SyntheticModel && e.IsAPIErrorMessage {
				continue
			}
			v.assistant(m.Content, e.UUID, m.ID)
		}
	}
	msgs := v.dropEmptyAssistants(v.out)
	if len(msgs) > 0 && msgs[0].Role == model.RoleAssistant {
		// The API needs the user to speak first; a chain whose start is
		// missing from the file says so instead. v.out starts one slot into
		// its array to leave room for this message.
		start := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(MissingStartText)}}
		if &v.slot0[:2][1] == &msgs[0] {
			v.slot0[0] = start
			msgs = v.slot0[:len(msgs)+1]
		} else {
			msgs = append([]model.Message{start}, msgs...)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	msgs = v.pairToolResults(msgs)
	clear(msgs[len(msgs):cap(msgs)]) // what dropEmptyAssistants moved down
	return msgs
}

// view builds the messages of a conversation. Blocks the messages are
// given stay where they are (the entries' decoded messages) until a
// message merges several lines; merged contents and the messages' IDs are
// carved from slabs, so a conversation costs a few allocations rather
// than several a message.
type view struct {
	out []model.Message
	// run holds the message.id and index of the assistant messages that
	// sameResponse can walk back to: those after the last message before
	// out's last one that stops it; runAt indexes a long run.
	run   []response
	runAt map[string]int
	// slot0 is out's array from its start: out begins one slot in, left
	// for the missing-start message.
	slot0  []model.Message
	ids    slab[string]
	blocks slab[model.Block]
	// said counts the blocks of the responses: the most tool_use ids
	// pairToolResults can meet.
	said int
}

// newView returns a view for n entries: n is the most messages they make.
func newView(n int) *view {
	v := &view{slot0: make([]model.Message, 1, n+3)}
	v.out = v.slot0[1:1]
	v.ids.buf = make([]string, 0, n+n/8+8)
	return v
}

// user appends a user message, merging it into a preceding user message
// (see merge) with the seam seam(e) says; seam is asked only then.
func (v *view) user(content []model.Block, uuid string, seam func(*Entry) bool, e *Entry) {
	if n := len(v.out); n > 0 && v.out[n-1].Role == model.RoleUser {
		prev := &v.out[n-1]
		prev.Content = v.merge(prev.Content, content, seam(e))
		prev.IDs = v.ids.extend(prev.IDs, uuid)
		return
	}
	v.push(model.Message{Role: model.RoleUser, Content: content, IDs: v.ids.extend(nil, uuid)})
}

func alwaysSeam(*Entry) bool { return true }
func neverSeam(*Entry) bool  { return false }

// response is an assistant message of view.run.
type response struct {
	id string
	i  int
}

// longRun is how long view.run gets before it is indexed by a map.
const longRun = 32

// push appends a message to out.
func (v *view) push(m model.Message) {
	if n := len(v.out); n > 0 && stopsResponse(&v.out[n-1]) {
		// Messages before the last one no longer change.
		v.run, v.runAt = v.run[:0], nil
	}
	v.out = append(v.out, m)
}

// assistant appends the blocks of a response line: to the message of its
// response when sameResponse finds one, else as a new message.
func (v *view) assistant(content []model.Block, uuid, id string) {
	v.said += len(content)
	if i := v.sameResponse(id); i >= 0 {
		v.out[i].Content = v.blocks.extend(v.out[i].Content, content...)
		v.out[i].IDs = v.ids.extend(v.out[i].IDs, uuid)
		return
	}
	v.push(model.Message{Role: model.RoleAssistant, Content: content, IDs: v.ids.extend(nil, uuid)})
	if id == "" {
		return
	}
	v.run = append(v.run, response{id, len(v.out) - 1})
	switch {
	case v.runAt != nil:
		v.runAt[id] = len(v.out) - 1
	case len(v.run) > longRun:
		v.runAt = make(map[string]int, 2*len(v.run))
		for _, r := range v.run {
			v.runAt[r.id] = r.i
		}
	}
}

// foldIntoResult appends the texts of an attachment to the last tool
// result of the last message, when that message holds only tool results:
// "\n\n" between texts, a string result becoming one text block. It
// reports whether it did.
func (v *view) foldIntoResult(blocks []model.Block, uuid string) bool {
	out := v.out
	if len(out) == 0 || out[len(out)-1].Role != model.RoleUser {
		return false
	}
	m := &out[len(out)-1]
	for _, b := range m.Content {
		if b.Type != model.BlockToolResult {
			return false
		}
	}
	for _, b := range blocks {
		if b.Type != model.BlockText {
			return false
		}
	}
	if len(m.Content) == 0 {
		return false
	}
	last := m.Content[len(m.Content)-1]
	inner, err := model.DecodeContent(last.Content)
	if err != nil {
		return false
	}
	inner = slices.Clone(inner)
	for _, b := range blocks {
		if n := len(inner); n > 0 && inner[n-1].Type == model.BlockText {
			inner[n-1].Text += "\n\n" + b.Text
		} else {
			inner = append(inner, model.TextBlock(b.Text))
		}
	}
	raw, err := jsonw.Marshal(inner)
	if err != nil {
		return false
	}
	last.Content = raw
	m.Content = append(slices.Clip(m.Content[:len(m.Content)-1]), last)
	m.IDs = v.ids.extend(m.IDs, uuid)
	return true
}

// sameResponse finds the assistant message an assistant line with message
// id belongs to: walking back over tool results and other responses, it
// stops at anything else (see stopsResponse).
func (v *view) sameResponse(id string) int {
	if id == "" {
		return -1
	}
	i := -1
	if v.runAt != nil {
		if at, ok := v.runAt[id]; ok {
			i = at
		}
	} else {
		for k := len(v.run) - 1; k >= 0; k-- {
			if v.run[k].id == id {
				i = v.run[k].i
				break
			}
		}
	}
	if i < 0 {
		return -1
	}
	if n := len(v.out); i < n-1 && stopsResponse(&v.out[n-1]) {
		return -1
	}
	return i
}

// stopsResponse reports whether m ends the walk of sameResponse: a user
// message that does not begin with a tool result.
func stopsResponse(m *model.Message) bool {
	return m.Role != model.RoleAssistant && (len(m.Content) == 0 || m.Content[0].Type != model.BlockToolResult)
}

// sentOrder yields the entries with each attachment placed in its turn
// segment (a segment ends at an assistant line or a tool-result line) the
// way its writer sent it: Claude Code 2.1.197 and cairn send a turn's
// prompt, then the reminders and files attached to it, whatever order
// they were written in; Claude Code 2.1.332 sends the attachments first,
// then the prompt (see leadsTurn).
// It holds back the entries of the current segment only, so that each
// entry is looked at twice in a row rather than in two passes over a long
// session.
func sentOrder(entries []*Entry) iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		var segment, held []*Entry
		flush := func() bool {
			for _, list := range [2][]*Entry{segment, held} {
				for _, e := range list {
					if !yield(e) {
						return false
					}
				}
			}
			segment, held = segment[:0], held[:0]
			return true
		}
		for _, e := range entries {
			switch {
			case e.Type == TypeAttachment && leadsTurn(e):
				segment = slices.Insert(segment, firstUserAt(segment), e)
			case e.Type == TypeAttachment:
				held = append(held, e)
			case e.Type == TypeAssistant || (e.Type == TypeUser && isToolResultEntry(e)):
				if !flush() || !yield(e) {
					return
				}
			default:
				segment = append(segment, e)
			}
		}
		flush()
	}
}

// firstUserAt returns where, in a segment, a leading attachment goes:
// before the first user line that is not an attachment, after the
// attachments already placed; len(segment) when there is none.
func firstUserAt(segment []*Entry) int {
	for i, e := range segment {
		if e.Type == TypeUser {
			return i
		}
	}
	return len(segment)
}

// merge returns the content of a user message merged into the preceding
// one, prev. With seam, adjacent text blocks are separated by a newline
// added to the first (Claude Code's joinTextAtSeam); tool results move to
// the front of the merged content. prev is extended in place when it is
// the slice carved last from v.blocks (so an earlier merge's content, its
// results already in front) and m adds no result, or adds only results
// to a content of only results: runs of text lines or of result lines
// cost their length, not its square.
func (v *view) merge(prev, m []model.Block, seam bool) []model.Block {
	if len(prev)+len(m) == 0 {
		return nil
	}
	tweak := seam && len(prev) > 0 && len(m) > 0 &&
		prev[len(prev)-1].Type == model.BlockText && m[0].Type == model.BlockText
	results := 0
	for i := range m {
		if m[i].Type == model.BlockToolResult {
			results++
		}
	}
	if v.blocks.atTail(prev) && (results == 0 || (results == len(m) && prev[len(prev)-1].Type == model.BlockToolResult)) {
		if tweak {
			prev[len(prev)-1].Text += "\n"
		}
		return v.blocks.extend(prev, m...)
	}
	out := v.blocks.alloc(len(prev) + len(m))
	k := 0
	for _, part := range [2][]model.Block{prev, m} {
		for i := range part {
			if part[i].Type == model.BlockToolResult {
				out[k] = part[i]
				k++
			}
		}
	}
	for _, part := range [2][]model.Block{prev, m} {
		for i := range part {
			if part[i].Type != model.BlockToolResult {
				out[k] = part[i]
				k++
			}
		}
	}
	if tweak {
		// prev's last block, a text, is the last of prev's other blocks.
		out[k-len(m)+results-1].Text += "\n"
	}
	return out
}

// dropEmptyAssistants removes assistant messages left with only white-space
// text, joins messages of one role that end up adjacent, and gives an empty
// non-final assistant message a placeholder. It works in place, moving
// messages only after the first it drops.
func (v *view) dropEmptyAssistants(msgs []model.Message) []model.Message {
	kept := 0
	for kept < len(msgs) && !dropsOrJoins(msgs, kept) {
		kept++
	}
	out := msgs[:kept]
	for _, m := range msgs[kept:] {
		if m.Role == model.RoleAssistant && len(m.Content) > 0 && whitespaceOnly(m.Content) {
			continue
		}
		if len(out) > 0 && m.Role == out[len(out)-1].Role {
			// Two responses in a row (what was between them was snipped or
			// never written): the API would join them; join them here so
			// pairing sees one turn.
			prev := &out[len(out)-1]
			if m.Role == model.RoleUser {
				prev.Content = v.merge(prev.Content, m.Content, true)
			} else {
				prev.Content = v.blocks.extend(prev.Content, m.Content...)
			}
			prev.IDs = v.ids.extend(prev.IDs, m.IDs...)
			continue
		}
		out = append(out, m)
	}
	for i := range out {
		if out[i].Role == model.RoleAssistant && len(out[i].Content) == 0 && i < len(out)-1 {
			out[i].Content = []model.Block{model.TextBlock(NoContentText)}
		}
	}
	return out
}

// dropsOrJoins reports whether dropEmptyAssistants drops or joins msgs[i], the
// messages before it kept as they are.
func dropsOrJoins(msgs []model.Message, i int) bool {
	m := &msgs[i]
	return m.Role == model.RoleAssistant && len(m.Content) > 0 && whitespaceOnly(m.Content) ||
		i > 0 && m.Role == msgs[i-1].Role
}

func whitespaceOnly(blocks []model.Block) bool {
	for i := range blocks {
		if blocks[i].Type != model.BlockText || strings.TrimSpace(blocks[i].Text) != "" {
			return false
		}
	}
	return true
}

// pairToolResults makes the message list valid for the API: every tool_use
// is answered in the next user message (a missing answer gets an error
// result saying so), tool results that answer nothing are dropped, and a
// tool_use id used twice keeps its first use only. It works in place,
// inserting the user message an unanswered last response needs; a message
// that needs no change keeps its Content, and a response left with nothing
// is ToolUseInterruptedText.
func (v *view) pairToolResults(msgs []model.Message) []model.Message {
	used := make(map[string]struct{}, v.said)
	var calls []string
	for i := 0; i < len(msgs); i++ {
		m := &msgs[i]
		if m.Role == model.RoleUser {
			// Answers are taken together with their calls below, so tool
			// results here answer nothing.
			m.Content = v.withoutResults(m.Content)
			if len(m.Content) == 0 {
				text := NoContentText
				if i == 0 {
					text = "[Orphaned tool result removed due to conversation resume]"
				}
				m.Content = []model.Block{model.TextBlock(text)}
			}
			continue
		}
		// Assistant: drop repeated tool_use ids.
		calls = calls[:0]
		repeated := false
		for j := range m.Content {
			if b := &m.Content[j]; b.Type == model.BlockToolUse {
				if _, ok := used[b.ID]; ok {
					repeated = true
					continue
				}
				used[b.ID] = struct{}{}
				calls = append(calls, b.ID)
			}
		}
		switch {
		case len(m.Content) == 0:
			m.Content = nil
		case repeated:
			if m.Content = v.firstUses(m.Content, calls); len(m.Content) == 0 {
				// Nothing but calls made before: the API takes no empty
				// response, and Claude Code sends this text instead.
				m.Content = []model.Block{model.TextBlock(ToolUseInterruptedText)}
			}
		}
		if len(calls) == 0 {
			continue
		}
		if i+1 == len(msgs) || msgs[i+1].Role != model.RoleUser {
			msgs = slices.Insert(msgs, i+1, model.Message{Role: model.RoleUser})
		}
		i++
		msgs[i].Content = v.answer(msgs[i].Content, calls)
	}
	return msgs
}

// withoutResults returns blocks without their tool_result blocks: blocks
// itself when it has none, nil when nothing is left.
func (v *view) withoutResults(blocks []model.Block) []model.Block {
	results := 0
	for i := range blocks {
		if blocks[i].Type == model.BlockToolResult {
			results++
		}
	}
	if results == 0 || results == len(blocks) {
		if results > 0 {
			return nil
		}
		return blocks
	}
	out := v.blocks.alloc(len(blocks) - results)[:0]
	for i := range blocks {
		if blocks[i].Type != model.BlockToolResult {
			out = append(out, blocks[i])
		}
	}
	return out
}

// firstUses returns the blocks of a response without the tool_use blocks
// whose id is not in calls (used by an earlier response) or was used by an
// earlier block; calls are the ids first used by this response, in order.
func (v *view) firstUses(blocks []model.Block, calls []string) []model.Block {
	out := v.blocks.alloc(len(blocks))[:0]
	next := 0 // calls[next] is the next id to keep
	for i := range blocks {
		if blocks[i].Type == model.BlockToolUse {
			if next == len(calls) || blocks[i].ID != calls[next] {
				continue
			}
			next++
		}
		out = append(out, blocks[i])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// answer returns the content of the user message after a response that
// called calls: an error result for each call it does not answer, then its
// blocks without the results that answer no call or a call answered
// before. Content whose results answer calls one for one, in order, is
// returned as it is.
func (v *view) answer(content []model.Block, calls []string) []model.Block {
	k := 0
	inOrder := true
	for i := range content {
		if content[i].Type != model.BlockToolResult {
			continue
		}
		if k == len(calls) || content[i].ToolUseID != calls[k] {
			inOrder = false
			break
		}
		k++
	}
	if inOrder && k == len(calls) {
		return content
	}
	find := indexer(calls)
	answered := make([]bool, len(calls))
	kept := 0
	for i := range content {
		if content[i].Type != model.BlockToolResult {
			kept++
		} else if j := find(content[i].ToolUseID); j >= 0 && !answered[j] {
			answered[j] = true
			kept++
		}
	}
	out := v.blocks.alloc(kept + len(calls))[:0]
	for j, id := range calls {
		if !answered[j] {
			out = append(out, model.ToolResultBlock(id, MissingResult, true))
		}
	}
	clear(answered)
	for i := range content {
		if content[i].Type == model.BlockToolResult {
			j := find(content[i].ToolUseID)
			if j < 0 || answered[j] {
				continue
			}
			answered[j] = true
		}
		out = append(out, content[i])
	}
	return out
}

// indexer returns a function finding an id in ids (distinct): its index,
// or -1.
func indexer(ids []string) func(string) int {
	if len(ids) <= 16 {
		return func(id string) int { return slices.Index(ids, id) }
	}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	return func(id string) int {
		if i, ok := at[id]; ok {
			return i
		}
		return -1
	}
}

// slab carves slices from shared backing arrays, so that many small
// slices cost few allocations. Every slice it returns is clipped, so
// appending to it never writes into another's elements; the slice carved
// last can still grow in place through extend.
type slab[T any] struct {
	buf []T
}

// slabChunk is the most elements a slab allocates at once, unless one
// slice needs more.
const slabChunk = 4096

// alloc returns a new slice of n zero elements.
func (a *slab[T]) alloc(n int) []T {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]T, 0, max(n, min(2*cap(a.buf), slabChunk), 64))
	}
	start := len(a.buf)
	a.buf = a.buf[:start+n]
	return a.buf[start : start+n : start+n]
}

// atTail reports whether s is the slice carved last, not yet extended by
// anything else.
func (a *slab[T]) atTail(s []T) bool {
	return len(s) > 0 && len(a.buf) > 0 && &s[len(s)-1] == &a.buf[len(a.buf)-1]
}

// extend returns s followed by more, as append would: s itself when more
// is empty, s grown in place when it is the slice carved last and there is
// room, else a new slice.
func (a *slab[T]) extend(s []T, more ...T) []T {
	if len(more) == 0 {
		return s
	}
	if a.atTail(s) && cap(a.buf)-len(a.buf) >= len(more) {
		a.buf = append(a.buf, more...)
		end := len(a.buf)
		return a.buf[end-len(s)-len(more) : end : end]
	}
	out := a.alloc(len(s) + len(more))
	copy(out, s)
	copy(out[len(s):], more)
	return out
}

// Describe names an entry for messages a person reads.
func (e *Entry) Describe() string {
	if e.Subtype != "" {
		return fmt.Sprintf("%s/%s %s", e.Type, e.Subtype, e.UUID)
	}
	return fmt.Sprintf("%s %s", e.Type, e.UUID)
}
