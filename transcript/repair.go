package transcript

import (
	"encoding/json"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/google/uuid"
)

// repair appends what a resumed conversation needs to be valid and to read
// as Claude Code's would: an error result for each call of the last
// response that never got one (the process died while the tool ran) and
// the "No response requested." reply after a turn with no reply. A
// conversation that ends with a finished reply and only context after it
// gets nothing (see afterReply).
func (l *loader) repair(newUUID func() string, now func() time.Time) {
	c := l.conv
	if len(c.Entries) == 0 {
		return
	}
	if newUUID == nil {
		newUUID = uuid.NewString
	}
	if now == nil {
		now = time.Now
	}
	envelope := c.Entries[len(c.Entries)-1]
	add := func(e Entry) {
		e.UUID = newUUID()
		e.ParentUUID = c.Entries[len(c.Entries)-1].UUID
		e.SessionID, e.CWD, e.Version, e.GitBranch = envelope.SessionID, envelope.CWD, envelope.Version, envelope.GitBranch
		e.UserType, e.Entrypoint, e.Slug = envelope.UserType, envelope.Entrypoint, envelope.Slug
		e.Timestamp = FormatTime(now())
		c.Entries = append(c.Entries, &e)
		c.Repaired++
	}

	// Calls of the last response with no result anywhere in the chain.
	answered := make(map[string]bool)
	type call struct{ id, line string }
	var pending []call
	for i, e := range c.Entries {
		if e.Type != TypeUser && e.Type != TypeAssistant {
			continue
		}
		m, ok, err := e.DecodeMessage()
		if !ok || err != nil {
			continue
		}
		if e.Type == TypeAssistant && !e.IsAPIErrorMessage {
			if len(pending) > 0 && i > 0 && c.Entries[i-1].Type != TypeAssistant {
				pending = pending[:0] // a new response: earlier calls are not trailing
			}
			for _, b := range m.Content {
				if b.Type == model.BlockToolUse {
					pending = append(pending, call{b.ID, e.UUID})
				}
			}
			continue
		}
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult {
				answered[b.ToolUseID] = true
			}
		}
	}
	for _, p := range pending {
		if answered[p.id] {
			continue
		}
		raw, _ := model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(p.id, InterruptedResult, true)}}.MarshalJSON()
		add(Entry{
			Type: TypeUser, Message: raw,
			ToolUseResult:           jsonw.String("Error: " + InterruptedResult),
			SourceToolAssistantUUID: p.line,
		})
	}

	last := lastTurnEntry(c.Entries)
	if last == nil || afterReply(c.Entries) {
		return
	}
	// A turn cut before its reply, after its prompt and attachments (a
	// crash before the response's line was written) or at a tool result
	// (a crash mid-tool-call, a headless plan-mode exit, which ends the
	// run at the plan on purpose), gets the "No response requested."
	// reply alone, as Claude Code 2.1.332 resumes it (2.1.197 also added
	// the "Continue from where you left off." prompt).
	if last.Type == TypeUser || last.Type == TypeAttachment {
		add(Entry{Type: TypeAssistant, Message: syntheticAssistant(newUUID(), NoResponseText)})
	}
}

// lastTurnEntry is the last entry that is part of a turn: not a system
// line, not an API error standing in for a reply, and not an attachment
// that sends nothing (a record such as prompt_snapshot).
func lastTurnEntry(entries []*Entry) *Entry {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Type == TypeSystem || (e.Type == TypeAssistant && e.IsAPIErrorMessage) ||
			(e.Type == TypeAttachment && !isSentAttachment(e)) {
			continue
		}
		return e
	}
	return nil
}

// afterReply reports whether the conversation ends with a finished reply
// followed only by context that asks for nothing: attachments, meta lines,
// local command output (a /compact's), a compaction's summary. Such a
// session did not stop mid-turn (a /compact, a plan-mode exit or a
// finished turn with 2.1.332's records after it): a resume adds nothing,
// and the next prompt joins that trailing context, as in Claude Code.
func afterReply(entries []*Entry) bool {
	summary := false
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		switch {
		case e.Type == TypeSystem || e.Type == TypeAttachment:
		case e.Type == TypeAssistant:
			return !e.IsAPIErrorMessage
		case e.Type == TypeUser && e.IsCompactSummary:
			summary = true
		case e.Type == TypeUser && (e.IsMeta || isLocalCommand(e)):
		default:
			return false
		}
	}
	// A compaction with nothing before its summary: the summary is the
	// conversation, and nothing was cut.
	return summary
}

// UserTextMessage is the message of a user line holding text s, stored as
// a string as Claude Code stores typed prompts.
func UserTextMessage(s string) json.RawMessage {
	var o jsonw.Object
	o.Str("role", model.RoleUser)
	o.Raw("content", jsonw.String(s))
	return o.Bytes()
}

// syntheticAssistant is the message of an assistant line cairn writes
// itself, shaped as Claude Code's synthetic messages.
func syntheticAssistant(id, text string) []byte {
	content, _ := jsonw.Marshal([]model.Block{model.TextBlock(text)})
	var o jsonw.Object
	o.Str("id", id)
	o.Raw("container", []byte("null"))
	o.Str("model", SyntheticModel)
	o.Str("role", model.RoleAssistant)
	o.Raw("stop_details", []byte("null"))
	o.Str("stop_reason", "stop_sequence")
	o.Str("stop_sequence", "")
	o.Str("type", "message")
	o.Raw("usage", []byte(`{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`))
	o.Raw("content", content)
	return o.Bytes()
}

// EncodeAttachment returns the attachment and the extra fields of an
// attachment line: what the attachment is, and what it rendered to
// (rendered, renderedRole, as newer Claude Code versions write them), so a
// resume sends the same bytes. rendered nil (an attachment that is a
// record only, such as command_permissions) writes no rendered fields, as
// Claude Code writes such a line; an empty, non-nil rendered is kept, and
// renders to nothing on resume.
func EncodeAttachment(typ string, data map[string]any, rendered []model.Block) (json.RawMessage, map[string]json.RawMessage) {
	all := map[string]any{"type": typ}
	for k, v := range data {
		all[k] = v
	}
	att, _ := jsonw.Marshal(all) // maps of plain values always encode
	if rendered == nil {
		return att, nil
	}
	type part struct {
		Content []model.Block `json:"content"`
	}
	r, _ := jsonw.Marshal([]part{{Content: rendered}})
	return att, map[string]json.RawMessage{"rendered": r, "renderedRole": jsonw.String("user")}
}
