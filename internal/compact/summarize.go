package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
)

// summaryInstruction asks for the summary. Its sections follow what a
// person taking over the work would need; the <summary> tags let the
// answer be found whatever the model writes around it.
const summaryInstruction = `Stop working on the task for a moment: the conversation above is about to be compacted to free the context window, and you must write the summary that will replace it. Do not call any tool. Write it for yourself, to continue the work without losing anything that matters:

1. The user's requests and intent: every request, in order, quoting the exact words of the current one.
2. Key technical context: technologies, conventions and decisions that matter for the rest of the work.
3. Files and code: each file read or changed, why it matters, and the important snippets or changes.
4. Errors met and how they were fixed, including what the user corrected.
5. Problems solved and open questions.
6. Pending tasks the user asked for that are not done.
7. Current work: precisely what was being done just before this summary, with file names and code.
8. The next step, only if it follows directly from the user's latest request.

Wrap the summary in <summary></summary>.`

// chunkInstruction asks for the summary of one part of a conversation too
// long to summarise at once.
const chunkInstruction = `The text above is one part of a long conversation between a user and a coding agent, with the summary of the parts before it. Write an updated summary covering everything so far: the user's requests (quoting the latest exactly), decisions, files and code changed, errors and fixes, pending tasks and the current work. Do not call any tool. Wrap it in <summary></summary>.`

// summarize asks the model for a summary of history. The request carries
// the same system prompt, tools and messages as the conversation's last
// one, with the instruction appended at the end, so everything before it
// is read from the prompt cache. When that request would not fit, old tool
// output is cleared, then the history is summarised in chunks.
//
// history lacks what owed adds (see owed), to each message as it is read.
func (m *Manager) summarize(ctx context.Context, history []model.Message, owe owed, keepsTail bool, system []model.SystemBlock, tools []model.ToolSpec, instructions string) (string, error) {
	instr := summaryInstruction
	if keepsTail {
		instr += "\n\nThe last messages of the conversation will stay verbatim after the summary; summarise them briefly."
	}
	if instructions != "" {
		instr += "\n\nAdditional instructions for this summary:\n" + instructions
	}
	// The request must fit the window with the summary's own reply
	// (max_tokens is summaryMax), not also the conversation's reply
	// reserve: a context at the threshold then goes whole, tool results
	// included, and the summary can keep what they hold. A server that
	// counts more than the estimate says so, and the trimmed history
	// goes instead.
	w := m.cfg.Window
	budget := w.Effective() + w.OutputReserve() - int64(m.summaryMax())
	// Whether a request fits is decided from estimates of the history as
	// each request would carry it, summed only as far as the budget: a
	// history far over the window is neither copied nor weighed whole
	// before its first part is asked.
	base := tokens.EstimateRequest(system, tools, nil)
	whole := summaryView{msgs: history, owed: owe}
	if whole.fits(budget - base) {
		s, err := m.ask(ctx, system, tools, appendInstruction(whole.messages(), instr))
		if err == nil || !errors.Is(err, model.ErrPromptTooLong) {
			return s, err
		}
	}
	trimmed := whole.trimmed()
	if trimmed.fits(budget - base) {
		s, err := m.ask(ctx, system, tools, appendInstruction(trimmed.messages(), instr))
		if err == nil || !errors.Is(err, model.ErrPromptTooLong) {
			return s, err
		}
	}
	return m.summarizeChunks(ctx, trimmed.lines(), system, tools, instructions, budget)
}

// summaryMax is the summary's length limit: the configured one, but never
// more than a quarter of the window, so a small window still leaves room
// for what is summarised.
func (m *Manager) summaryMax() int {
	return int(min(int64(m.cfg.SummaryMaxTokens), m.cfg.Window.Effective()/4))
}

// ask sends one summary request and returns the summary it got back.
func (m *Manager) ask(ctx context.Context, system []model.SystemBlock, tools []model.ToolSpec, msgs []model.Message) (string, error) {
	req := &model.Request{
		Model: m.cfg.ModelName, MaxTokens: m.summaryMax(),
		System: system, Tools: tools, Messages: engine.WithCacheBreakpoint(msgs),
	}
	ctx, cancel := context.WithTimeoutCause(ctx, m.cfg.SummaryTimeout, fmt.Errorf("the summary took longer than %s", m.cfg.SummaryTimeout))
	defer cancel()
	sent := m.cfg.Now()
	defer func() { m.waited += m.cfg.Now().Sub(sent) }()
	var resp *model.Response
	for c, err := range m.cfg.Model.Stream(ctx, req) {
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			return "", fmt.Errorf("summary request: %w", err)
		}
		if c.Kind == model.ChunkDone {
			resp = c.Response
		}
	}
	if resp == nil {
		return "", errors.New("summary request: no response")
	}
	m.spent.InputTokens += resp.Usage.InputTokens
	m.spent.OutputTokens += resp.Usage.OutputTokens
	m.spent.CacheReadInputTokens += resp.Usage.CacheReadInputTokens
	m.spent.CacheCreationInputTokens += resp.Usage.CacheCreationInputTokens
	s := extractSummary(model.Message{Content: resp.Content}.Text())
	if strings.TrimSpace(s) == "" {
		return "", errors.New("the model returned an empty summary")
	}
	return s, nil
}

// extractSummary takes the text between <summary> tags, or all of it.
func extractSummary(text string) string {
	if _, after, ok := strings.Cut(text, "<summary>"); ok {
		inner, _, _ := strings.Cut(after, "</summary>")
		return strings.TrimSpace(inner)
	}
	return strings.TrimSpace(text)
}

// appendInstruction adds the instruction as a text block at the end of the
// last user message (a new user message after an assistant one), leaving
// every earlier byte as it was sent before.
func appendInstruction(msgs []model.Message, instr string) []model.Message {
	out := make([]model.Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	if n := len(out); n > 0 && out[n-1].Role == model.RoleUser {
		last := out[n-1]
		last.Content = append(append([]model.Block(nil), last.Content...), model.TextBlock(instr))
		out[n-1] = last
		return out
	}
	return append(out, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(instr)}})
}

// withoutImages replaces images and documents with a short marker: the
// summary needs to know they were there, not their bytes. It returns msgs
// itself when they hold none.
func withoutImages(msgs []model.Message) []model.Message {
	var out []model.Message
	for i, m := range msgs {
		for j, b := range m.Content {
			sb, changed := stripped(b)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(msgs)
			}
			if &out[i].Content[0] == &msgs[i].Content[0] {
				out[i].Content = slices.Clone(m.Content)
			}
			out[i].Content[j] = sb
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// stripped is b as a summary reads it: an image or a document as a
// marker, a tool result holding one as its text; changed is false when b
// is returned as it is.
func stripped(b model.Block) (model.Block, bool) {
	switch {
	case b.Type == model.BlockImage || b.Type == model.BlockDocument:
		return model.TextBlock("[" + b.Type + "]"), true
	case b.Type == model.BlockToolResult && len(b.Content) > 0 && b.Content[0] == '[' && (bytes.Contains(b.Content, []byte(`"image"`)) || bytes.Contains(b.Content, []byte(`"document"`))):
		return model.ToolResultBlock(b.ToolUseID, b.ResultText(), b.IsError != nil && *b.IsError), true
	}
	return b, false
}

// owed is what the layers left for the Manager to apply to what a request
// carries once it knows whether the request goes out (see State): each
// maps messages to what the request carries of them, one at a time.
type owed struct {
	// project, when set, shrinks messages (micro-compaction's clearing).
	project func([]model.Message) []model.Message
	// mark, when set, tags messages as the conversation's requests
	// carried them; tags only add text, never a tool result, and move
	// none.
	mark func([]model.Message) []model.Message
}

// apply returns msgs as the request carries them.
func (o owed) apply(msgs []model.Message) []model.Message {
	msgs = o.shrunk(msgs)
	if o.mark != nil {
		msgs = o.mark(msgs)
	}
	return msgs
}

// shrunk returns msgs projected, not tagged.
func (o owed) shrunk(msgs []model.Message) []model.Message {
	if o.project != nil {
		msgs = o.project(msgs)
	}
	return msgs
}

// summaryView is a history as a summary request reads it — as the
// conversation's requests carried it (owed), images as markers (withoutImages)
// and, trimmed, all but the newest tool results cleared and long texts
// shortened (trim) — made message by message as it is read, so a history
// far over the window is never copied whole.
type summaryView struct {
	msgs []model.Message
	// owed is what msgs lack of what the requests carried.
	owed
	trim bool
	// keepMsg, keepBlk is where the newest keepResults tool results
	// start: those from there on stay (trimmed view).
	keepMsg, keepBlk int
}

// trimmed returns the trimmed view of v's history.
func (v summaryView) trimmed() summaryView {
	v.trim, v.keepMsg, v.keepBlk = true, 0, 0
	seen := 0
	for i := len(v.msgs) - 1; i >= 0 && seen < keepResults; i-- {
		content := v.msgs[i].Content
		for j := len(content) - 1; j >= 0 && seen < keepResults; j-- {
			if content[j].Type == model.BlockToolResult {
				seen++
				v.keepMsg, v.keepBlk = i, j
			}
		}
	}
	return v
}

// msg returns message i as the requests carried it.
func (v summaryView) msg(i int) model.Message {
	if v.project == nil && v.mark == nil {
		return v.msgs[i]
	}
	return v.apply(v.msgs[i : i+1])[0]
}

// cleared reports whether the trimmed view clears the tool result at
// msgs[i].Content[j].
func (v summaryView) cleared(i, j int) bool {
	return v.trim && (i < v.keepMsg || i == v.keepMsg && j < v.keepBlk)
}

// block returns block j of m, the view's message i, as the view reads it.
func (v summaryView) block(m model.Message, i, j int) model.Block {
	b, _ := stripped(m.Content[j])
	if !v.trim {
		return b
	}
	switch b.Type {
	case model.BlockToolResult:
		if v.cleared(i, j) {
			return model.ToolResultBlock(b.ToolUseID, clearedText, b.IsError != nil && *b.IsError)
		}
		return model.ToolResultBlock(b.ToolUseID, shorten(b.ResultText(), 20_000), b.IsError != nil && *b.IsError)
	case model.BlockText:
		b.Text = shorten(b.Text, 20_000)
	}
	return b
}

// clearedTokens is the estimate of a cleared result, which the view need
// not build to weigh.
var clearedTokens = tokens.EstimateBlock(model.ToolResultBlock("", clearedText, false))

// fits reports whether the view's messages are estimated at fewer than
// budget tokens, weighing them only until the budget is reached. Tags
// only add text, so messages that do not fit untagged do not fit tagged:
// they are weighed untagged first (projected, as owed.shrunk), and tagged
// only when they fit.
func (v summaryView) fits(budget int64) bool {
	if v.mark == nil {
		return v.weighs(budget, v.msg)
	}
	untagged := func(i int) model.Message { return v.shrunk(v.msgs[i : i+1])[0] }
	return v.weighs(budget, untagged) && v.weighs(budget, v.msg)
}

// weighs reports whether the view's messages, as msg gives them, are
// estimated at fewer than budget tokens.
func (v summaryView) weighs(budget int64, msg func(int) model.Message) bool {
	var n int64
	for i := range v.msgs {
		m := msg(i)
		for j, b := range m.Content {
			// Each block's framing counts too (see tokens.EstimateFloor).
			n += tokens.BlockOverhead
			if b.Type == model.BlockToolResult && v.cleared(i, j) {
				n += clearedTokens
			} else {
				n += tokens.EstimateBlock(v.block(m, i, j))
			}
			if n >= budget {
				return false
			}
		}
	}
	return n < budget
}

// messages returns the view's messages: withoutImages of the messages as
// the requests carried them (owed), and trim of those for a trimmed view.
func (v summaryView) messages() []model.Message {
	msgs := v.msgs
	msgs = v.apply(msgs)
	if !v.trim {
		return withoutImages(msgs)
	}
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		content := make([]model.Block, len(m.Content))
		for j := range m.Content {
			content[j] = v.block(m, i, j)
		}
		m.Content = content
		out[i] = m
	}
	return out
}

// lines yields the view's messages rendered as render writes them, one
// block at a time.
func (v summaryView) lines() iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range v.msgs {
			m := v.msg(i)
			for j, b := range m.Content {
				var line string
				switch {
				case b.Type == model.BlockToolResult && v.cleared(i, j):
					line = "Result: " + clearedText
				case b.Type == model.BlockText || b.Type == model.BlockToolUse || b.Type == model.BlockToolResult ||
					b.Type == model.BlockImage || b.Type == model.BlockDocument:
					var ok bool
					if line, ok = renderBlock(m.Role, v.block(m, i, j)); !ok {
						continue
					}
				default:
					continue
				}
				if !yield(line) {
					return
				}
			}
		}
	}
}

// clearedText replaces the content of old tool results, as micro-
// compaction does.
const clearedText = "[Old tool result content cleared]"

// keepResults is how many of the newest tool results trim leaves whole.
const keepResults = 3

// trim clears the content of all but the newest tool results and shortens
// very long texts, keeping their beginning and end.
func trim(msgs []model.Message) []model.Message {
	return summaryView{msgs: msgs}.trimmed().messages()
}

// shorten keeps the first and last parts of a text longer than max bytes.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head, tail := s[:max*2/3], s[len(s)-max/3:]
	return head + fmt.Sprintf("\n[… %d characters cut …]\n", len(s)-len(head)-len(tail)) + tail
}

// summarizeChunks summarises a history too long for one request, given as
// the lines of its rendering: they are cut into parts that fit, and each
// part is summarised together with the summary of the parts before it.
// Each part is rendered when its request is due, so the first one goes
// out without the whole history written as text first, and only one
// part's text is held at a time.
func (m *Manager) summarizeChunks(ctx context.Context, lines iter.Seq[string], system []model.SystemBlock, tools []model.ToolSpec, instructions string, budget int64) (string, error) {
	base := tokens.EstimateRequest(system, tools, nil)
	part := (budget - base) / 2
	if part < 1000 {
		return "", fmt.Errorf("the window (%d tokens) is too small to summarise in", m.cfg.Window.Effective())
	}
	instr := chunkInstruction
	if instructions != "" {
		instr += "\n\nAdditional instructions for this summary:\n" + instructions
	}
	summary, n := "", 0
	for chunk := range chunkSeq(lines, part*tokens.BytesPerToken) {
		if n++; m.status != nil {
			// A summary in parts takes a request each, one after the
			// other: minutes with a real model, so the user sees which.
			m.status(fmt.Sprintf("compacting: part %d", n))
		}
		text := chunk
		if summary != "" {
			text = "Summary of the conversation before this part:\n" + summary + "\n\nThe next part:\n" + chunk
		}
		s, err := m.ask(ctx, system, tools, []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text), model.TextBlock(instr)}}})
		if err != nil {
			return "", err
		}
		summary = s
	}
	return summary, nil
}

// render writes messages as a plain-text transcript.
func render(msgs []model.Message) []string { return slices.Collect(renderSeq(msgs)) }

// renderSeq yields the lines of render, one at a time.
func renderSeq(msgs []model.Message) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, m := range msgs {
			for _, b := range m.Content {
				line, ok := renderBlock(m.Role, b)
				if ok && !yield(line) {
					return
				}
			}
		}
	}
}

// renderBlock is the line render writes for one block of a message of
// role, and false for a block it leaves out.
func renderBlock(role string, b model.Block) (string, bool) {
	switch b.Type {
	case model.BlockText:
		return roleName(role) + ": " + b.Text, true
	case model.BlockToolUse:
		return "Assistant called " + b.Name + " with " + string(b.Input), true
	case model.BlockToolResult:
		return "Result: " + b.ResultText(), true
	}
	return "", false
}

func roleName(role string) string {
	if role == model.RoleAssistant {
		return "Assistant"
	}
	return "User"
}

// chunks groups lines into texts of at most max bytes; a longer line is
// shortened to fit.
func chunks(lines []string, max int64) []string {
	return slices.Collect(chunkSeq(slices.Values(lines), max))
}

// chunkSeq yields the texts of chunks, each as soon as it is complete.
func chunkSeq(lines iter.Seq[string], max int64) iter.Seq[string] {
	return func(yield func(string) bool) {
		var cur strings.Builder
		for l := range lines {
			l = shorten(l, int(max)-64)
			if cur.Len() > 0 && int64(cur.Len()+len(l)+1) > max {
				if !yield(cur.String()) {
					return
				}
				cur.Reset()
			}
			if cur.Cap() == 0 {
				// A part is written into one allocation, not grown into.
				cur.Grow(int(min(max, 1<<20)))
			}
			cur.WriteString(l)
			cur.WriteByte('\n')
		}
		if cur.Len() > 0 {
			yield(cur.String())
		}
	}
}
