package compact

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// PinType is the attachment type of the transcript line recording a pin.
// Claude Code does not know it and renders nothing for it.
const PinType = "cairn_pin"

// pinHeader starts the reminder that carries a pin to the model.
const pinHeader = "<system-reminder>\nThe user pinned this, to be kept word for word for the whole session:\n"

// Pin is something the user wants kept word for word however often the
// conversation is compacted: a message of the conversation, or a note.
type Pin struct {
	// Text is what is kept.
	Text string
	// Message is the uuid of the pinned message; "" for a note.
	Message string
	// Line is the uuid of the latest transcript line recording the pin.
	Line string
}

// Pins are a session's pins. They are recorded as attachment lines of
// type PinType; every compaction records them again after its summary,
// so the lines after the last compact boundary always name them all and
// a resumed session finds them there. Safe for concurrent use.
type Pins struct {
	mu   sync.Mutex
	list []Pin
}

// NewPins returns the pins recorded in a conversation's entries (a
// resumed session's), or none.
func NewPins(entries []*transcript.Entry) *Pins {
	p := &Pins{}
	for i := range entries {
		if pin, ok := pinOf(entries[i]); ok {
			p.Add(pin)
		}
	}
	return p
}

// pinOf reads the pin an attachment line records.
func pinOf(e *transcript.Entry) (Pin, bool) {
	if e.Type != transcript.TypeAttachment {
		return Pin{}, false
	}
	var a struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Attachment, &a) != nil || a.Type != PinType || a.Text == "" {
		return Pin{}, false
	}
	return Pin{Text: a.Text, Message: a.Message, Line: e.UUID}, true
}

// Add adds a pin; pinning the same message or note again only updates
// the line recording it.
func (p *Pins) Add(pin Pin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.list, func(q Pin) bool { return q.Message == pin.Message && (pin.Message != "" || q.Text == pin.Text) })
	if i >= 0 {
		p.list[i].Line = pin.Line
		return
	}
	p.list = append(p.list, pin)
}

// List returns the pins, oldest first.
func (p *Pins) List() []Pin {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.list)
}

// Pinned reports whether any of ids is a pinned message or a line
// recording a pin.
func (p *Pins) Pinned(ids []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pin := range p.list {
		if (pin.Message != "" && slices.Contains(ids, pin.Message)) || slices.Contains(ids, pin.Line) {
			return true
		}
	}
	return false
}

// Survivors is a Config.Survivors: every pin, shown to the model, since
// a compaction may summarise away the message it pinned.
func (p *Pins) Survivors(context.Context) []engine.Attachment {
	var out []engine.Attachment
	for _, pin := range p.List() {
		out = append(out, PinAttachment(pin, true))
	}
	return out
}

// PinAttachment is the attachment recording pin. shown makes it render
// the pin for the model; a pinned message is already in the conversation
// and its pin renders nothing until a compaction carries it.
func PinAttachment(pin Pin, shown bool) engine.Attachment {
	data := map[string]any{"text": pin.Text}
	if pin.Message != "" {
		data["message"] = pin.Message
	}
	a := engine.Attachment{Type: PinType, Data: data, Rendered: []model.Block{}}
	if shown {
		a.Rendered = []model.Block{model.TextBlock(pinHeader + pin.Text + "\n</system-reminder>")}
	}
	return a
}

// PinnedSay is what /pin answers once p is recorded: the message pinned
// (by its tag) or the note, its text cut to limit runes on one line when
// limit > 0.
func PinnedSay(p Pin, limit int) string {
	text := p.Text
	if limit > 0 {
		text = strings.Join(strings.Fields(text), " ")
		if r := []rune(text); len(r) > limit {
			text = string(r[:limit-1]) + "…"
		}
	}
	if p.Message != "" {
		return "Pinned message " + Tag(p.Message) + " for the rest of the session: " + text
	}
	return "Pinned for the rest of the session: " + text
}
