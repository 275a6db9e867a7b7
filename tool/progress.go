package tool

import (
	"context"

	"github.com/cairn-dev/cairn/model"
)

type progressKey struct{}

// Progress is one report of a running call: a line saying what it is
// doing, or a whole message of the conversation a subagent it runs is
// having, or both.
type Progress struct {
	// Text says in a line what the call is doing now; "" when the report
	// only carries a message.
	Text string
	// Message is a subagent's message, reported once it is complete: its
	// task, a reply of its model, its tool results. nil for a line of
	// text only. Whoever reads it must not change it.
	Message *model.Message
	// Response is set when Message is a reply of the subagent's model:
	// the response, with its usage. Model names the model that answered
	// it, so its cost is priced as that model's.
	Response *model.Response
	Model    string
}

// WithProgress returns a context carrying report, which ReportProgress
// calls with each line of text a call reports. Reports that carry only
// a message do not reach it.
func WithProgress(ctx context.Context, report func(text string)) context.Context {
	return WithReports(ctx, func(p Progress) {
		if p.Text != "" {
			report(p.Text)
		}
	})
}

// WithReports returns a context carrying report, which Report and
// ReportProgress call. The engine gives each tool call such a context,
// so that a long call (a subagent at work) can say how it is going and
// pass on its subagent's messages; it turns a line of text into an
// EventToolProgress and a message into an EventToolMessage.
func WithReports(ctx context.Context, report func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress tells whoever runs the call how it is going, in a line
// of text. It does nothing when ctx carries no reporter. Safe for
// concurrent use; it may wait until the report is taken, and returns at
// once when the call is over.
func ReportProgress(ctx context.Context, text string) {
	Report(ctx, Progress{Text: text})
}

// Report passes p to whoever runs the call, as ReportProgress does a
// line of text: it does nothing when ctx carries no reporter, is safe
// for concurrent use, and may wait until the report is taken.
func Report(ctx context.Context, p Progress) {
	if report, ok := ctx.Value(progressKey{}).(func(Progress)); ok && report != nil {
		report(p)
	}
}
