package hook

import (
	"strings"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// AttachmentType is the transcript type of the context hooks add to a
// prompt, Claude Code's.
const AttachmentType = "hook_additional_context"

// Reminder is the outcome's context as the model reads it: one
// system-reminder naming the event, the hooks' contexts a line each; ""
// when there is none.
func (o Outcome) Reminder() string {
	if len(o.Context) == 0 {
		return ""
	}
	return transcript.WrapSystemReminder(o.Name + " hook additional context: " + strings.Join(o.Context, "\n"))
}

// Attachment is the outcome's context as an attachment to the user's
// prompt, recorded and rendered the way Claude Code records and renders
// hook context; ok is false when there is no context.
func (o Outcome) Attachment() (a engine.Attachment, ok bool) {
	if len(o.Context) == 0 {
		return engine.Attachment{}, false
	}
	return engine.Attachment{
		Type: AttachmentType,
		Data: map[string]any{
			"content":   append([]string(nil), o.Context...),
			"hookName":  o.Name,
			"hookEvent": string(o.Event),
		},
		Rendered: []model.Block{model.TextBlock(o.Reminder())},
	}, true
}

// Apply returns res with what the hooks said for the model added after
// the tool's own content: their feedback when they blocked (the call has
// already run, so its result stays), then their context as a system
// reminder. res is not changed.
func (o PostToolUseOutcome) Apply(res tool.Result) tool.Result {
	var extra []model.Block
	if o.Blocked {
		extra = append(extra, model.TextBlock(o.Name+" hook feedback on this result: "+o.Reason))
	}
	if r := o.Reminder(); r != "" {
		extra = append(extra, model.TextBlock(r))
	}
	if len(extra) == 0 {
		return res
	}
	res.Content = append(append([]model.Block(nil), res.Content...), extra...)
	return res
}
