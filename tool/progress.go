package tool

import "context"

type progressKey struct{}

// WithProgress returns a context carrying report, which ReportProgress
// calls. The engine gives each tool call such a context, so that a long
// call (a subagent at work) can say how it is going.
func WithProgress(ctx context.Context, report func(text string)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress tells whoever runs the call how it is going, in a line
// of text. It does nothing when ctx carries no reporter. Safe for
// concurrent use; it may wait until the report is taken, and returns at
// once when the call is over.
func ReportProgress(ctx context.Context, text string) {
	if report, ok := ctx.Value(progressKey{}).(func(string)); ok && report != nil {
		report(text)
	}
}
