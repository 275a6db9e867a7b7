package hook

import (
	"context"
	"time"
)

// EndReason is why a session ended, as SessionEnd hooks get it (Claude
// Code's values).
type EndReason string

// Reasons a session ends.
const (
	EndClear  EndReason = "clear"             // /clear started another
	EndExit   EndReason = "prompt_input_exit" // the person left the UI
	EndLogout EndReason = "logout"
	EndOther  EndReason = "other" // a headless run finished, or anything else
)

// Kinds of Notification, as its matcher sees them.
const (
	NotifyPermission = "permission_prompt" // a question waits for the person
	NotifyIdle       = "idle_prompt"       // the UI waits for the next prompt
)

// Notification runs the Notification hooks whose matcher accepts kind
// when the UI waits for the person; message says what for. Hooks cannot
// block it: only Messages are meaningful.
func (r *Runner) Notification(ctx context.Context, kind, message string) Outcome {
	if !r.has(Notification, kind) {
		return Outcome{}
	}
	in := struct {
		common
		Message          string `json:"message"`
		Title            string `json:"title,omitempty"`
		NotificationType string `json:"notification_type"`
	}{r.common(Notification), message, "cairn", kind}
	return r.fire(ctx, Notification, kind, in)
}

// SessionEnd runs the SessionEnd hooks whose matcher accepts reason as
// the session ends. They cannot stop it.
func (r *Runner) SessionEnd(ctx context.Context, reason EndReason) Outcome {
	if !r.has(SessionEnd, string(reason)) {
		return Outcome{}
	}
	in := struct {
		common
		Reason EndReason `json:"reason"`
	}{r.common(SessionEnd), reason}
	return r.fire(ctx, SessionEnd, string(reason), in)
}

// Listed is one configured hook, for `cairn hooks list`.
type Listed struct {
	Event   Event         `json:"event"`
	Matcher string        `json:"matcher"`
	Command string        `json:"command"`
	Timeout time.Duration `json:"timeoutNs,omitempty"`
	File    string        `json:"file"`
}

// List returns every hook, by event in the order of Events, then in
// settings order.
func (c *Config) List() []Listed {
	var out []Listed
	for _, e := range Events {
		for _, g := range c.groups[e] {
			for _, cmd := range g.commands {
				out = append(out, Listed{Event: e, Matcher: g.pattern, Command: cmd.Command, Timeout: cmd.Timeout, File: cmd.File})
			}
		}
	}
	return out
}
