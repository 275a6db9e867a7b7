package filehistory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// ErrFirstMessage is returned when the conversation is asked to go back
// to before the session's first message: there is nothing to continue
// from.
var ErrFirstMessage = errors.New("it is the session's first message, so there is no earlier conversation to go back to; start a new session instead (the code can still be rewound with --code)")

// Point is where rewinding the conversation to a user message leaves the
// session: the next prompt continues from the entry before that message.
type Point struct {
	// MessageID is the user message rewound to, and Prompt its text.
	MessageID string
	Prompt    string
	// Leaf is the entry the next prompt hangs off: the message's parent.
	Leaf string
	// LastPrompt is the newest prompt before the message (what the
	// session list shows).
	LastPrompt string
	// CWD is the working directory recorded on the message.
	CWD string
}

// ConversationPoint finds the user message messageID in a transcript and
// where rewinding the conversation to it leaves the session. The message
// must be a prompt (not a tool result or a summary).
func ConversationPoint(ctx context.Context, src transcript.Source, messageID string) (*Point, error) {
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{Leaf: messageID})
	if err != nil {
		return nil, err
	}
	i := len(conv.Entries) - 1
	for i >= 0 && conv.Entries[i].UUID != messageID {
		i--
	}
	if i < 0 {
		return nil, fmt.Errorf("no message %q in this session", messageID)
	}
	e := conv.Entries[i]
	text, ok := promptText(e)
	if !ok {
		return nil, fmt.Errorf("message %q is a %s entry, not a prompt you typed; give the uuid of a user prompt (`cairn sessions export` shows them)", messageID, describe(e))
	}
	p := &Point{MessageID: messageID, Prompt: text, Leaf: e.ParentUUID, CWD: e.CWD}
	if p.Leaf == "" {
		return p, fmt.Errorf("cannot rewind the conversation to %q: %w", messageID, ErrFirstMessage)
	}
	for j := i - 1; j >= 0; j-- {
		if t, ok := promptText(conv.Entries[j]); ok {
			p.LastPrompt = oneLine(t)
			break
		}
	}
	return p, nil
}

// LastPromptRecord is the record that makes the next resume continue from
// p.Leaf: a last-prompt record newer than every chain line is where the
// loader takes the leaf from.
func LastPromptRecord(p *Point, sessionID string) transcript.Entry {
	return transcript.Entry{Type: transcript.TypeLastPrompt, LastPrompt: p.LastPrompt, LeafUUID: p.Leaf, SessionID: sessionID}
}

// promptText returns the text of a prompt the user typed.
func promptText(e *transcript.Entry) (string, bool) {
	if e.Type != transcript.TypeUser || e.IsMeta || e.IsCompactSummary || e.IsVisibleInTranscriptOnly {
		return "", false
	}
	m, ok, err := e.DecodeMessage()
	if !ok || err != nil || len(m.Content) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, c := range m.Content {
		switch c.Type {
		case model.BlockToolResult:
			return "", false
		case model.BlockText:
			b.WriteString(c.Text)
		}
	}
	text := b.String()
	if text == engine.InterruptedText || text == engine.InterruptedForToolText {
		return "", false
	}
	return text, true
}

func describe(e *transcript.Entry) string {
	switch {
	case e.Type != transcript.TypeUser:
		return e.Type
	case e.IsCompactSummary:
		return "compaction summary"
	case e.IsMeta:
		return "meta"
	}
	return "tool result"
}

// oneLine is a prompt as a list shows it: one line, at most 200 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = strings.TrimSpace(string(r[:200])) + "…"
	}
	return s
}
