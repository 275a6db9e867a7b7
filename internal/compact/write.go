package compact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/pricing"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// Bounds of the preserved tail, in tokens (seed 000 §3.1, SPEC SM4).
const (
	keepMinTokens = 10_000
	keepMinTexts  = 5
	keepMaxTokens = 40_000
)

// preservedStart picks the first message of the tail kept verbatim: the
// newest messages worth at least 10,000 tokens and 5 text messages, at most
// 40,000 (or a quarter of the window), never starting on tool results whose
// calls would be summarised away, and only messages the transcript holds.
// It returns len(history) when nothing can be kept.
func preservedStart(history []model.Message, w tokens.Window) int {
	max := min(int64(keepMaxTokens), w.Effective()/4)
	k := len(history)
	var size int64
	texts := 0
	for i := len(history) - 1; i >= 1; i-- { // history[0] is always summarised
		n := tokens.EstimateMessages(history[i : i+1])
		if size+n > max {
			break
		}
		size += n
		if history[i].Text() != "" {
			texts++
		}
		k = i
		if size >= keepMinTokens && texts >= keepMinTexts {
			break
		}
	}
	// Do not start on the results of calls that would be summarised.
	for k < len(history) && startsWithResults(history[k]) {
		k++
	}
	// Everything kept must be in the transcript, to be named there.
	for i := len(history) - 1; i >= k; i-- {
		if len(history[i].IDs) == 0 {
			k = i + 1
			break
		}
	}
	return k
}

func startsWithResults(m model.Message) bool {
	return m.Role == model.RoleUser && len(m.Content) > 0 && m.Content[0].Type == model.BlockToolResult
}

// summaryPreamble and the lines after it frame the summary for the model.
const summaryPreamble = "This session continues an earlier conversation that was compacted to fit the context window. The summary below covers the part that was compacted."

func summaryText(summary, path string) string {
	var b strings.Builder
	b.WriteString(summaryPreamble)
	b.WriteString("\n\n")
	b.WriteString(summary)
	if path != "" {
		b.WriteString("\n\nThe full conversation before the compaction is in the transcript at " + path + "; read it if you need an exact detail the summary lacks.")
	}
	b.WriteString("\nContinue the work from where it stopped, without asking the user to repeat anything and without recapping.")
	return b.String()
}

// write records the compaction as Claude Code does — a compact boundary
// with a null parent naming the preserved segment, the summary, then what
// must survive — in one durable append, and reads the history back.
// With shrink set, a compaction that would not make the context smaller
// is not written (a *NoGainError); truncate, the last resort, writes
// what it can.
func (m *Manager) write(ctx context.Context, history []model.Message, keep int, summary, trigger string, pre int64, start time.Time, after []engine.Attachment, system []model.SystemBlock, tools []model.ToolSpec, shrink bool) (*result, error) {
	t := m.cfg.Transcript
	var preserved []string
	for _, msg := range history[keep:] {
		preserved = append(preserved, msg.IDs...)
	}
	boundary := t.NewEntry(transcript.TypeSystem, "")
	boundary.Subtype = transcript.SubtypeCompactBoundary
	boundary.LogicalParentUUID = t.Leaf()
	boundary.Content = jsonw.String("Conversation compacted")
	boundary.Level = "info"
	sum := t.NewEntry(transcript.TypeUser, boundary.UUID)
	sum.IsCompactSummary, sum.IsVisibleInTranscriptOnly = true, true
	sum.Message = transcript.UserTextMessage(summaryText(summary, t.Path()))

	entries := []transcript.Entry{boundary, sum}
	parent := sum.UUID
	for _, a := range carried(m.survivors(ctx, history, keep, after), history[keep:]) {
		e := t.NewEntry(transcript.TypeAttachment, parent)
		e.Attachment, e.Extra = transcript.EncodeAttachment(a.Type, a.Data, a.Rendered)
		entries = append(entries, e)
		parent = e.UUID
	}
	dropped := tokens.EstimateMessages(history[:keep])
	md := map[string]any{
		"trigger": trigger, "preTokens": pre, "durationMs": m.cfg.Now().Sub(start).Milliseconds(),
		"cumulativeDroppedTokens": m.dropped + dropped,
		// cairn's own record of what the compaction cost.
		"cairn": map[string]any{
			"modelDurationMs": m.waited.Milliseconds(), "summaryUsage": m.spent,
			"costUsd": pricing.Cost(m.cfg.ModelName, m.spent), "keptMessages": len(history) - keep,
		},
	}
	if len(preserved) > 0 {
		md["preservedSegment"] = map[string]string{"headUuid": preserved[0], "anchorUuid": sum.UUID, "tailUuid": preserved[len(preserved)-1]}
		md["preservedMessages"] = map[string]any{"anchorUuid": sum.UUID, "uuids": preserved, "allUuids": preserved}
	}
	// postTokens is only known once the result is read back; estimate it
	// from what was written.
	post := tokens.EstimateRequest(system, tools, history[keep:]) + tokens.Estimate(summaryText(summary, t.Path()))
	for _, e := range entries[2:] {
		post += tokens.Estimate(string(e.Extra["rendered"]))
	}
	md["postTokens"] = post
	if shrink && post >= pre {
		// The summary and what must survive take more room than the
		// conversation did: writing it would only make the session bigger.
		return nil, &NoGainError{Pre: pre, Post: post}
	}
	boundary.CompactMetadata, _ = jsonw.Marshal(md)
	entries[0] = boundary
	if err := t.Append(ctx, entries...); err != nil {
		return nil, fmt.Errorf("write the compaction: %w", err)
	}
	m.dropped += dropped
	m.resetLayers()
	// What the layers took off, and the floor, were the old history's:
	// the meter counts the new one afresh (see Projected).
	m.lastFreed, m.lastFloor = 0, 0
	newHistory, err := t.Reload(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the compacted session back: %w", err)
	}
	return &result{history: newHistory, report: &engine.Compaction{
		Trigger: trigger, PreTokens: pre, PostTokens: tokens.EstimateRequest(system, tools, newHistory),
		Duration: m.cfg.Now().Sub(start), ModelTime: m.waited, BoundaryUUID: boundary.UUID,
		Summary: fmt.Sprintf("compacted %d messages into a summary, kept the last %d verbatim", keep, len(history)-keep),
	}}, nil
}

// NoGainError is returned, and nothing written, when the compacted
// session would hold as many tokens as the conversation does now, or
// more: a short conversation is smaller than its summary and what a
// compaction carries through (instruction files, recent files, pins).
type NoGainError struct {
	// Pre is the context's size now; Post what it would be compacted.
	Pre, Post int64
}

func (e *NoGainError) Error() string {
	return fmt.Sprintf("not compacted: the conversation holds about %s tokens, and its summary with what a compaction keeps would take about %s; the session is left as it was (compaction frees room once the conversation is longer)",
		tokens.Thousands(e.Pre), tokens.Thousands(e.Post))
}

// ErrDoesNotFit is returned when the newest message alone does not fit in
// the context window: it is neither cut nor dropped.
var ErrDoesNotFit = errors.New("the prompt is too long for the context window")

// truncate is the last resort when a request does not fit and cannot be
// summarised: the oldest history is dropped, keeping the newest messages
// that fit in half the window, and the boundary says so.
func (m *Manager) truncate(ctx context.Context, history []model.Message, system []model.SystemBlock, tools []model.ToolSpec, pre int64) (*result, error) {
	start := m.cfg.Now()
	budget := m.cfg.Window.Effective()/2 - tokens.EstimateRequest(system, tools, nil)
	k := len(history)
	var size int64
	for i := len(history) - 1; i >= 1; i-- {
		// Weighed as the trigger weighs a request (with each block's
		// framing), so what is kept does not call for another truncation.
		n := tokens.EstimateFloor(history[i : i+1])
		if size+n > budget {
			break
		}
		size += n
		k = i
	}
	for k < len(history) && (startsWithResults(history[k]) || len(history[k].IDs) == 0) {
		k++
	}
	// Keep at least the newest prompt, or the newest call with its
	// results: dropping them would have the model start its step again,
	// forever. When even that cannot fit, say so rather than cut it.
	least := len(history) - 1
	if least >= 1 && startsWithResults(history[least]) {
		least--
	}
	k = max(0, min(k, least))
	if need := tokens.EstimateRequest(system, tools, history[least:]); need > m.cfg.Window.Effective() {
		return nil, fmt.Errorf("%w: the newest message needs about %d tokens and the context window holds %d; shorten the prompt, or read less at once (a smaller file, a range of lines)", ErrDoesNotFit, need, max(0, m.cfg.Window.Effective()))
	}
	note := "[The earlier part of this conversation could not be summarised and was left out to fit the context window.]"
	res, err := m.write(ctx, history, k, note, TriggerAuto, pre, start, nil, system, tools, false)
	if err != nil {
		return nil, err
	}
	res.report.Summary = fmt.Sprintf("dropped the oldest %d messages to fit the window (they could not be summarised)", k)
	return res, nil
}

// survivors is what comes through a compaction verbatim: the user's latest
// requests, files read recently, and whatever the session adds
// (instruction files, pins, todos, plan, hook output).
func (m *Manager) survivors(ctx context.Context, history []model.Message, keep int, after []engine.Attachment) []engine.Attachment {
	var out []engine.Attachment
	if a, ok := latestRequests(history, keep); ok {
		out = append(out, a)
	}
	if !m.inEarly {
		// An early compaction keeps the newest results verbatim and its
		// notes hold what the older ones said: re-reading files would
		// only write them to the cache again.
		out = append(out, recentFiles(history[:keep], m.cfg.CWD, m.cfg.Tools)...)
	}
	if m.cfg.Survivors != nil {
		out = append(out, m.cfg.Survivors(ctx)...)
	}
	return append(out, after...)
}

// carried drops the survivors the kept tail already holds word for word
// (a previous compaction's, kept again), so nothing is carried twice.
func carried(survivors []engine.Attachment, kept []model.Message) []engine.Attachment {
	have := make(map[string]bool)
	for _, m := range kept {
		for _, b := range m.Content {
			if b.Type == model.BlockText {
				have[b.Text] = true
			}
		}
	}
	var out []engine.Attachment
	for _, a := range survivors {
		dup := len(a.Rendered) > 0
		for _, b := range a.Rendered {
			dup = dup && b.Type == model.BlockText && have[b.Text]
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out
}

// maxRequests is how many of the user's latest requests survive verbatim,
// besides the first (the task, which every compaction keeps word for word).
const maxRequests = 3

// requestHeader starts the reminder that carries one of the user's requests
// through a compaction; latestRequests finds it again at the next one.
const requestHeader = "<system-reminder>\nA request the user made earlier, in their own words:\n"

// latestRequests keeps the user's own words across any number of
// compactions: the first prompt of the session (the task) and the last
// few — typed since the last compaction, or carried through it — oldest
// first, leaving out those the kept tail (history[keep:]) holds already,
// which the model reads there.
func latestRequests(history []model.Message, keep int) (engine.Attachment, bool) {
	var all []string
	seen := map[string]bool{}
	for _, m := range history[:keep] {
		for _, r := range requestsIn(m) {
			if !seen[r] {
				seen[r] = true
				all = append(all, r)
			}
		}
	}
	kept := map[string]bool{}
	for _, m := range history[keep:] {
		for _, r := range requestsIn(m) {
			kept[r] = true
		}
	}
	var prompts []string
	for i, r := range all {
		if (i == 0 || i >= len(all)-maxRequests) && !kept[r] {
			prompts = append(prompts, r)
		}
	}
	if len(prompts) == 0 {
		return engine.Attachment{}, false
	}
	a := engine.Attachment{Type: "cairn_user_requests", Data: map[string]any{"requests": prompts}}
	for _, p := range prompts {
		a.Rendered = append(a.Rendered, model.TextBlock(requestHeader+p+"\n</system-reminder>"))
	}
	return a, true
}

// requestsIn returns the user's requests a message holds, in order: text
// the user typed, or requests a previous compaction carried (which may
// have joined a message of tool results).
func requestsIn(m model.Message) []string {
	if m.Role != model.RoleUser {
		return nil
	}
	typed := !startsWithResults(m)
	var out []string
	for _, b := range m.Content {
		if b.Type != model.BlockText {
			continue
		}
		if r, ok := strings.CutPrefix(b.Text, requestHeader); ok {
			out = append(out, strings.TrimSuffix(r, "\n</system-reminder>"))
			continue
		}
		t := strings.TrimSpace(StripTag(b.Text)) // compaction summarises what was sent, tags included
		if !typed || t == "" || strings.HasPrefix(t, "<") || strings.HasPrefix(t, "[Request interrupted") || strings.HasPrefix(t, summaryPreamble) || t == transcript.ContinueText {
			continue
		}
		out = append(out, shorten(t, 8_000))
	}
	return out
}

// File re-injection bounds (SPEC C4).
const (
	maxFiles      = 5
	maxFileTokens = 50_000
	maxOneFile    = 20_000
)

// recentFiles re-reads the files the summarised part read or changed
// most recently (the files, not folders, its tools say their calls
// touched), so the model keeps their current contents.
func recentFiles(history []model.Message, cwd string, tools *tool.Registry) []engine.Attachment {
	var paths []string
	seen := map[string]bool{}
	for i := len(history) - 1; i >= 0 && len(paths) < maxFiles && tools != nil; i-- {
		for _, b := range history[i].Content {
			if b.Type != model.BlockToolUse {
				continue
			}
			t, ok := tools.Lookup(b.Name)
			if !ok {
				continue
			}
			for _, u := range tool.TouchedPaths(t, b.Input) {
				if u.Folder || seen[u.Path] || len(paths) == maxFiles {
					continue
				}
				seen[u.Path] = true
				p := u.Path
				if !filepath.IsAbs(p) {
					p = filepath.Join(cwd, p)
				}
				paths = append(paths, p)
			}
		}
	}
	var out []engine.Attachment
	var total int64
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 || !isText(data) {
			continue
		}
		content := string(data)
		n := tokens.Estimate(content)
		if n > maxOneFile || total+n > maxFileTokens {
			continue
		}
		total += n
		numbered := transcript.NumberLines(strings.TrimSuffix(content, "\n")+"\n", 1)
		input, _ := jsonw.Marshal(map[string]string{"file_path": p})
		out = append(out, engine.Attachment{
			Type: "file",
			Data: map[string]any{"filename": p, "content": map[string]any{"type": "text", "file": map[string]any{
				"filePath": p, "content": content, "numLines": strings.Count(content, "\n") + 1, "startLine": 1, "totalLines": strings.Count(content, "\n") + 1,
			}}, "displayPath": relative(cwd, p)},
			Rendered: []model.Block{
				model.TextBlock(transcript.WrapSystemReminder("Called the Read tool with the following input: " + string(input))),
				model.TextBlock(transcript.WrapSystemReminder("Result of calling the Read tool:\n" + numbered)),
			},
		})
	}
	return out
}

func isText(b []byte) bool {
	for _, c := range b[:min(len(b), 8000)] {
		if c == 0 {
			return false
		}
	}
	return true
}

func relative(cwd, p string) string {
	if cwd != "" && strings.HasPrefix(p, cwd+"/") {
		return p[len(cwd)+1:]
	}
	return p
}
