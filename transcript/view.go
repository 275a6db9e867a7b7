package transcript

import (
	"encoding/json"
	"fmt"
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
)

// Messages returns the conversation as the model is sent it: attachments
// rendered and placed as Claude Code places them, system lines left out
// (local command output kept), the lines of one response merged into one
// assistant message, consecutive user lines merged into one user message,
// and every tool_use answered by a tool_result. Entries that cannot be
// rendered are skipped with a warning.
func (c *Conversation) Messages() []model.Message {
	var out []model.Message
	var ids []string // message.id of each assistant message in out
	push := func(m model.Message, id string) {
		out = append(out, m)
		ids = append(ids, id)
	}
	for _, e := range reorderAttachments(c.Entries) {
		e := *e // a copy: nothing here may change c.Entries
		switch e.Type {
		case TypeSystem:
			if e.Subtype != "local_command" {
				continue
			}
			var text string
			if json.Unmarshal(e.Content, &text) != nil || text == "" {
				continue
			}
			out = mergeUser(out, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text)}, IDs: []string{e.UUID}}, true)
			ids = pad(ids, len(out))
		case TypeAttachment:
			blocks, err := renderAttachment(&e)
			if err != nil {
				c.Warnings = append(c.Warnings, err.Error())
				continue
			}
			if len(blocks) == 0 {
				continue
			}
			if foldsIntoResult(&e) && foldIntoResult(out, blocks, e.UUID) {
				continue
			}
			out = mergeUser(out, model.Message{Role: model.RoleUser, Content: blocks, IDs: []string{e.UUID}}, false)
			ids = pad(ids, len(out))
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
				out = mergeUser(out, model.Message{Role: model.RoleUser, Content: m.Content, IDs: []string{e.UUID}}, seamBefore(&e))
				ids = pad(ids, len(out))
				continue
			}
			if e.IsAPIErrorMessage && m.Model == SyntheticModel {
				continue
			}
			if i := sameResponse(out, ids, m.ID); i >= 0 {
				out[i].Content = append(out[i].Content, m.Content...)
				out[i].IDs = append(out[i].IDs, e.UUID)
				continue
			}
			push(model.Message{Role: model.RoleAssistant, Content: m.Content, IDs: []string{e.UUID}}, m.ID)
		}
	}
	out = dropEmptyAssistants(out)
	if len(out) > 0 && out[0].Role == model.RoleAssistant {
		// The API needs the user to speak first; a chain whose start is
		// missing from the file says so instead.
		out = append([]model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(MissingStartText)}}}, out...)
	}
	return pairToolResults(out)
}

// foldIntoResult appends the texts of an attachment to the last tool
// result of the last message, when that message holds only tool results:
// "\n\n" between texts, a string result becoming one text block. It
// reports whether it did.
func foldIntoResult(out []model.Message, blocks []model.Block, uuid string) bool {
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
	m.IDs = append(slices.Clip(m.IDs), uuid)
	return true
}

func pad(ids []string, n int) []string {
	for len(ids) < n {
		ids = append(ids, "")
	}
	return ids[:n]
}

// sameResponse finds the assistant message an assistant line with message
// id belongs to: walking back over tool results and other responses, it
// stops at anything else.
func sameResponse(out []model.Message, ids []string, id string) int {
	if id == "" {
		return -1
	}
	for i := len(out) - 1; i >= 0; i-- {
		m := out[i]
		if m.Role == model.RoleAssistant {
			if ids[i] == id {
				return i
			}
			continue
		}
		if len(m.Content) > 0 && m.Content[0].Type == model.BlockToolResult {
			continue
		}
		return -1
	}
	return -1
}

// reorderAttachments places each attachment in its turn segment (a
// segment ends at an assistant line or a tool-result line) the way its
// writer sent it: Claude Code 2.1.197 and cairn send a turn's prompt, then
// the reminders and files attached to it, whatever order they were written
// in; Claude Code 2.1.332 sends the attachments first, then the prompt
// (see leadsTurn).
// It orders pointers into entries: copying the entries themselves was a
// tenth of what a long session's resume allocated.
func reorderAttachments(entries []Entry) []*Entry {
	out := make([]*Entry, 0, len(entries))
	var held []*Entry
	segment := 0 // where the current segment starts in out
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Type == TypeAttachment && leadsTurn(e):
			out = slices.Insert(out, firstUserAt(out, segment), e)
		case e.Type == TypeAttachment:
			held = append(held, e)
		case e.Type == TypeAssistant || (e.Type == TypeUser && isToolResultEntry(e)):
			out = append(out, held...)
			held = held[:0]
			out = append(out, e)
			segment = len(out)
		default:
			out = append(out, e)
		}
	}
	return append(out, held...)
}

// firstUserAt returns where, in out[from:], a leading attachment goes:
// before the first user line that is not an attachment, after the
// attachments already placed; len(out) when there is none.
func firstUserAt(out []*Entry, from int) int {
	for i := from; i < len(out); i++ {
		if out[i].Type == TypeUser {
			return i
		}
	}
	return len(out)
}

// mergeUser appends a user message, merging it into a preceding user
// message. With seam, adjacent text blocks are separated by a newline added
// to the first (Claude Code's joinTextAtSeam); tool results move to the
// front of the merged content.
func mergeUser(out []model.Message, m model.Message, seam bool) []model.Message {
	if len(out) == 0 || out[len(out)-1].Role != model.RoleUser {
		return append(out, m)
	}
	prev := &out[len(out)-1]
	content := append([]model.Block(nil), prev.Content...)
	if seam && len(content) > 0 && len(m.Content) > 0 &&
		content[len(content)-1].Type == model.BlockText && m.Content[0].Type == model.BlockText {
		last := content[len(content)-1]
		last.Text += "\n"
		content[len(content)-1] = last
	}
	content = append(content, m.Content...)
	var results, rest []model.Block
	for _, b := range content {
		if b.Type == model.BlockToolResult {
			results = append(results, b)
		} else {
			rest = append(rest, b)
		}
	}
	prev.Content = append(results, rest...)
	prev.IDs = append(slices.Clip(prev.IDs), m.IDs...)
	return out
}

// dropEmptyAssistants removes assistant messages left with only white-space
// text, joins messages of one role that end up adjacent, and gives an empty
// non-final assistant message a placeholder.
func dropEmptyAssistants(msgs []model.Message) []model.Message {
	out := msgs[:0]
	for _, m := range msgs {
		if m.Role == model.RoleAssistant && len(m.Content) > 0 && whitespaceOnly(m.Content) {
			continue
		}
		if len(out) > 0 && m.Role == out[len(out)-1].Role {
			// Two responses in a row (what was between them was snipped or
			// never written): the API would join them; join them here so
			// pairing sees one turn.
			if m.Role == model.RoleUser {
				out = mergeUser(out, m, true)
			} else {
				out[len(out)-1].Content = append(out[len(out)-1].Content, m.Content...)
				out[len(out)-1].IDs = append(out[len(out)-1].IDs, m.IDs...)
			}
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

func whitespaceOnly(blocks []model.Block) bool {
	for _, b := range blocks {
		if b.Type != model.BlockText || strings.TrimSpace(b.Text) != "" {
			return false
		}
	}
	return true
}

// pairToolResults makes the message list valid for the API: every tool_use
// is answered in the next user message (a missing answer gets an error
// result saying so), tool results that answer nothing are dropped, and a
// tool_use id used twice keeps its first use only.
func pairToolResults(msgs []model.Message) []model.Message {
	var out []model.Message
	usedIDs := make(map[string]bool)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == model.RoleUser {
			// Answers are taken together with their calls below, so tool
			// results here answer nothing.
			m.Content = withoutResults(m.Content, nil)
			if len(m.Content) == 0 {
				text := NoContentText
				if len(out) == 0 {
					text = "[Orphaned tool result removed due to conversation resume]"
				}
				m.Content = []model.Block{model.TextBlock(text)}
			}
			out = append(out, m)
			continue
		}
		// Assistant: drop repeated tool_use ids.
		var content []model.Block
		var calls []string
		for _, b := range m.Content {
			if b.Type == model.BlockToolUse {
				if usedIDs[b.ID] {
					continue
				}
				usedIDs[b.ID] = true
				calls = append(calls, b.ID)
			}
			content = append(content, b)
		}
		m.Content = content
		out = append(out, m)
		if len(calls) == 0 {
			continue
		}
		var next model.Message
		hasNext := i+1 < len(msgs) && msgs[i+1].Role == model.RoleUser
		if hasNext {
			next = msgs[i+1]
			i++
		} else {
			next = model.Message{Role: model.RoleUser}
		}
		answered := make(map[string]bool)
		for _, b := range next.Content {
			if b.Type == model.BlockToolResult {
				answered[b.ToolUseID] = true
			}
		}
		var missing []model.Block
		for _, id := range calls {
			if !answered[id] {
				missing = append(missing, model.ToolResultBlock(id, MissingResult, true))
			}
		}
		want := make(map[string]bool, len(calls))
		for _, id := range calls {
			want[id] = true
		}
		next.Content = append(missing, withoutResults(next.Content, want)...)
		if len(next.Content) == 0 {
			next.Content = []model.Block{model.TextBlock(NoContentText)}
		}
		out = append(out, next)
	}
	return out
}

// withoutResults drops tool_result blocks except those for ids in keep
// (each kept once).
func withoutResults(blocks []model.Block, keep map[string]bool) []model.Block {
	var out []model.Block
	seen := make(map[string]bool)
	for _, b := range blocks {
		if b.Type == model.BlockToolResult {
			if !keep[b.ToolUseID] || seen[b.ToolUseID] {
				continue
			}
			seen[b.ToolUseID] = true
		}
		out = append(out, b)
	}
	return out
}

// Describe names an entry for messages a person reads.
func (e *Entry) Describe() string {
	if e.Subtype != "" {
		return fmt.Sprintf("%s/%s %s", e.Type, e.Subtype, e.UUID)
	}
	return fmt.Sprintf("%s %s", e.Type, e.UUID)
}
