package compact

import (
	"context"
	"slices"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
)

// Notes are the session's running notes, kept up to date in the
// background (package sessionmemory). Implementations are safe for
// concurrent use.
type Notes interface {
	// Summary returns the notes ready to stand as a compaction's summary
	// — "" when they hold nothing yet — and the uuid of the last message
	// they cover: "" when that is not known (notes written before a
	// resume), and they are then taken to cover everything before the
	// preserved tail. It may wait briefly for an update under way;
	// cancelling ctx stops the wait.
	Summary(ctx context.Context) (summary, covered string, err error)
}

// fromNotes tries session-memory compaction (SPEC SM4): at an
// auto-compaction, notes that are not empty are the summary and no
// summary request is made. What the notes do not cover is kept verbatim,
// and the tail keep (already ≥ 10,000 tokens and 5 text messages, ≤
// 40,000) is kept whatever they cover. It reports false, leaving keep
// alone, when the ordinary summary must be made instead: no notes, empty
// notes, notes covering messages the history no longer has, or a result
// that would not leave the context well below the threshold.
func (m *Manager) fromNotes(ctx context.Context, history []model.Message, keep int, trigger string, system []model.SystemBlock, tools []model.ToolSpec) (string, int, bool) {
	if m.cfg.Notes == nil || trigger != TriggerAuto {
		return "", keep, false
	}
	summary, covered, err := m.cfg.Notes.Summary(ctx)
	if err != nil || summary == "" {
		return "", keep, false
	}
	k := keep
	if covered != "" {
		i := slices.IndexFunc(history, func(msg model.Message) bool { return slices.Contains(msg.IDs, covered) })
		if i < 0 {
			return "", keep, false // compacted or snipped away since
		}
		k = min(keep, i+1)
		// Never start on results whose calls would be summarised.
		for k > 1 && k < len(history) && startsWithResults(history[k]) {
			k--
		}
		for _, msg := range history[k:] {
			if len(msg.IDs) == 0 {
				return "", keep, false // what is kept must be named in the transcript
			}
		}
	}
	if k < 1 {
		return "", keep, false
	}
	if post := tokens.EstimateRequest(system, tools, history[k:]) + tokens.Estimate(summary); post > m.cfg.Window.AutoCompactAt()*8/10 {
		return "", keep, false // the notes lag too far behind: summarise instead
	}
	return summary, k, true
}

// fromNotesEarly is fromNotes for a compaction below the threshold
// (Config.EarlyAt): the notes must say what they cover, and the tail kept
// is exactly what they do not cover (at least the newest tool call and
// its results), which must stay under 70% of EarlyAt.
func (m *Manager) fromNotesEarly(ctx context.Context, history []model.Message, system []model.SystemBlock, tools []model.ToolSpec) (string, int, bool) {
	summary, covered, err := m.cfg.Notes.Summary(ctx)
	if err != nil || summary == "" || covered == "" {
		return "", 0, false
	}
	i := slices.IndexFunc(history, func(msg model.Message) bool { return slices.Contains(msg.IDs, covered) })
	if i < 0 {
		return "", 0, false
	}
	k := i + 1
	// Keep the newest tool call with its results whatever the notes cover.
	if last := len(history) - 1; k > last-1 && last >= 1 && startsWithResults(history[last]) {
		k = last - 1
	}
	// Never start on results whose calls would be dropped.
	for k > 1 && k < len(history) && startsWithResults(history[k]) {
		k--
	}
	if k < 1 || k >= len(history) {
		return "", 0, false
	}
	for _, msg := range history[k:] {
		if len(msg.IDs) == 0 {
			return "", 0, false
		}
	}
	if post := tokens.EstimateRequest(system, tools, history[k:]) + tokens.Estimate(summary); post > m.cfg.EarlyAt*7/10 {
		return "", 0, false
	}
	return summary, k, true
}
