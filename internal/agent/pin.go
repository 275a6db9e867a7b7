package agent

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// ErrNothingToPin is returned by Pin when given nothing to pin.
var ErrNothingToPin = errors.New("nothing to pin: give the text to keep, or the uuid or [id:…] tag of a message")

// Pin keeps something word for word for the rest of the session, through
// any number of compactions, and out of reach of the Snip tool. target
// is a message of the conversation — its uuid, the [id:xxxxxx] tag the
// model sees on it, or the bare id in the tag — or else a note, pinned
// as written; a note in double quotes is never taken for an id.
//
// The pin is recorded at once (an attachment line of type
// compact.PinType, so a resumed session knows it). A note is shown to
// the model from the next request on; a pinned message is already in
// the conversation, and its pin shows only when a compaction carries it
// (or at once, when context collapse has folded it into a summary).
// Pin must not be called while a Run is in progress.
func (a *Agent) Pin(ctx context.Context, target string) (compact.Pin, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return compact.Pin{}, ErrNothingToPin
	}
	if unq, err := strconv.Unquote(target); err == nil && strings.HasPrefix(target, `"`) {
		target = strings.TrimSpace(unq) // quoted: a note, whatever it looks like
		if target == "" {
			return compact.Pin{}, ErrNothingToPin
		}
		return a.pin(ctx, compact.Pin{Text: target})
	}
	pin := compact.Pin{Text: target}
	if m, id, ok, err := a.pinned(target); err != nil {
		return compact.Pin{}, err
	} else if ok {
		// A resumed message's results may be in the transcript's
		// mapping: a file cut shorter is an error here, not a fault.
		if err := engine.CheckMapped([]model.Message{m}); err != nil {
			return compact.Pin{}, err
		}
		text := visibleText(m)
		if text == "" {
			return compact.Pin{}, fmt.Errorf("message %s has no text to pin", id)
		}
		pin = compact.Pin{Text: text, Message: id}
	}
	return a.pin(ctx, pin)
}

// pin records pin and shows it to the model when it is new to it.
func (a *Agent) pin(ctx context.Context, pin compact.Pin) (compact.Pin, error) {
	// A note is new to the model; so is a message it sees only folded
	// into a summary.
	shown := pin.Message == "" || (a.collapse != nil && a.collapse.Folds(a.engine.History(), pin.Message))
	att := compact.PinAttachment(pin, shown)
	e := a.recorder.NewEntry(transcript.TypeAttachment, a.recorder.Leaf())
	e.Attachment, e.Extra = transcript.EncodeAttachment(att.Type, att.Data, att.Rendered)
	if err := a.recorder.Append(ctx, e); err != nil {
		return compact.Pin{}, fmt.Errorf("record the pin: %w", err)
	}
	pin.Line = e.UUID
	a.pins.Add(pin)
	if len(att.Rendered) > 0 {
		h := a.engine.History()
		a.engine.SetHistory(append(slices.Clip(h), model.Message{Role: model.RoleUser, Content: att.Rendered, IDs: []string{e.UUID}}))
	}
	return pin, nil
}

// Pins returns the session's pins, oldest first.
func (a *Agent) Pins() []compact.Pin { return a.pins.List() }

// pinned finds the message target names: by uuid, by the tag the model
// sees ([id:xxxxxx] or id:xxxxxx), or by the bare id the tag holds (as
// sessions show prints it). ok is false when target names no message
// and is not meant to (a note); an error when it is spelled as an id
// (a uuid, a tag) that fits none. A bare word that is no message's id is
// a note, and a quoted one ("3u4506") always is.
func (a *Agent) pinned(target string) (m model.Message, id string, ok bool, err error) {
	short, tag := strings.CutPrefix(target, "[id:")
	if tag {
		short = strings.TrimSuffix(short, "]")
	} else {
		short, tag = strings.CutPrefix(target, "id:")
	}
	_, uerr := uuid.Parse(target)
	isUUID := uerr == nil && len(target) == 36
	bare := !tag && !isUUID && bareID.MatchString(target)
	if bare {
		short = target
	}
	if !tag && !isUUID && !bare {
		return model.Message{}, "", false, nil
	}
	for _, msg := range a.engine.History() {
		for _, u := range msg.IDs {
			if (isUUID && u == target) || ((tag || bare) && compact.ShortID(u) == short) {
				return msg, msg.IDs[0], true, nil
			}
		}
	}
	if bare {
		return model.Message{}, "", false, nil // a word, not an id
	}
	return model.Message{}, "", false, fmt.Errorf("no message %q in the conversation (it may be compacted already); pin its text instead", target)
}

// bareID is the shape of a message's short id without its tag.
var bareID = regexp.MustCompile(`^[0-9a-z]{1,8}$`)

// visibleText is what a message says: its own text and its tool
// results, without the reminders the harness attached.
func visibleText(m model.Message) string {
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case model.BlockText:
			if t := strings.TrimSpace(b.Text); t != "" && !strings.HasPrefix(t, "<system-reminder>") {
				parts = append(parts, t)
			}
		case model.BlockToolResult:
			if t := strings.TrimSpace(b.ResultText()); t != "" {
				parts = append(parts, t)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// pinsOf returns the pins a resumed conversation recorded.
func pinsOf(conv *transcript.Conversation) *compact.Pins {
	if conv == nil {
		return compact.NewPins(nil)
	}
	return compact.NewPins(conv.Entries)
}

var _ compact.Lines = transcriptOf{}

// Lines implements compact.Lines: the Snip tool reads what each message
// of the live session is made of.
func (t transcriptOf) Lines(ctx context.Context) ([][]*transcript.Entry, error) {
	return t.a.liveEntries(ctx)
}
