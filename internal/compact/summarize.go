package compact

import (
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
func (m *Manager) summarize(ctx context.Context, history []model.Message, keepsTail bool, system []model.SystemBlock, tools []model.ToolSpec, instructions string) (string, error) {
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
	msgs := withoutImages(history)
	if tokens.EstimateRequest(system, tools, msgs) < budget {
		s, err := m.ask(ctx, system, tools, appendInstruction(msgs, instr))
		if err == nil || !errors.Is(err, model.ErrPromptTooLong) {
			return s, err
		}
	}
	trimmed := trim(msgs)
	if tokens.EstimateRequest(system, tools, trimmed) < budget {
		s, err := m.ask(ctx, system, tools, appendInstruction(trimmed, instr))
		if err == nil || !errors.Is(err, model.ErrPromptTooLong) {
			return s, err
		}
	}
	return m.summarizeChunks(ctx, trimmed, system, tools, instructions, budget)
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
// summary needs to know they were there, not their bytes.
func withoutImages(msgs []model.Message) []model.Message {
	var out []model.Message
	changed := false
	for _, m := range msgs {
		var content []model.Block
		for _, b := range m.Content {
			switch {
			case b.Type == model.BlockImage || b.Type == model.BlockDocument:
				b = model.TextBlock("[" + b.Type + "]")
				changed = true
			case b.Type == model.BlockToolResult && len(b.Content) > 0 && b.Content[0] == '[' && (strings.Contains(string(b.Content), `"image"`) || strings.Contains(string(b.Content), `"document"`)):
				b = model.ToolResultBlock(b.ToolUseID, b.ResultText(), b.IsError != nil && *b.IsError)
				changed = true
			}
			content = append(content, b)
		}
		m.Content = content
		out = append(out, m)
	}
	if !changed {
		return msgs
	}
	return out
}

// clearedText replaces the content of old tool results, as micro-
// compaction does.
const clearedText = "[Old tool result content cleared]"

// keepResults is how many of the newest tool results trim leaves whole.
const keepResults = 3

// trim clears the content of all but the newest tool results and shortens
// very long texts, keeping their beginning and end.
func trim(msgs []model.Message) []model.Message {
	total := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult {
				total++
			}
		}
	}
	seen := 0
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		content := make([]model.Block, len(m.Content))
		for j, b := range m.Content {
			switch b.Type {
			case model.BlockToolResult:
				seen++
				if seen <= total-keepResults {
					b = model.ToolResultBlock(b.ToolUseID, clearedText, b.IsError != nil && *b.IsError)
				} else {
					b = model.ToolResultBlock(b.ToolUseID, shorten(b.ResultText(), 20_000), b.IsError != nil && *b.IsError)
				}
			case model.BlockText:
				b.Text = shorten(b.Text, 20_000)
			}
			content[j] = b
		}
		m.Content = content
		out[i] = m
	}
	return out
}

// shorten keeps the first and last parts of a text longer than max bytes.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head, tail := s[:max*2/3], s[len(s)-max/3:]
	return head + fmt.Sprintf("\n[… %d characters cut …]\n", len(s)-len(head)-len(tail)) + tail
}

// summarizeChunks summarises a history too long for one request: it is
// rendered as text, cut into parts that fit, and each part is summarised
// together with the summary of the parts before it.
func (m *Manager) summarizeChunks(ctx context.Context, msgs []model.Message, system []model.SystemBlock, tools []model.ToolSpec, instructions string, budget int64) (string, error) {
	base := tokens.EstimateRequest(system, tools, nil)
	part := (budget - base) / 2
	if part < 1000 {
		return "", fmt.Errorf("the window (%d tokens) is too small to summarise in", m.cfg.Window.Effective())
	}
	instr := chunkInstruction
	if instructions != "" {
		instr += "\n\nAdditional instructions for this summary:\n" + instructions
	}
	summary := ""
	// Each part is rendered when its request is due: the first one goes
	// out without the whole history written as text first.
	for chunk := range chunkSeq(renderSeq(msgs), part*tokens.BytesPerToken) {
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
				var line string
				switch b.Type {
				case model.BlockText:
					line = roleName(m.Role) + ": " + b.Text
				case model.BlockToolUse:
					line = "Assistant called " + b.Name + " with " + string(b.Input)
				case model.BlockToolResult:
					line = "Result: " + b.ResultText()
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
			cur.WriteString(l)
			cur.WriteByte('\n')
		}
		if cur.Len() > 0 {
			yield(cur.String())
		}
	}
}
