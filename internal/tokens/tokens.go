// Package tokens counts context the way the auto-compaction trigger sees it
// (SPEC K1–K3): the last response's usage plus an estimate of what came
// after, against an effective window with fixed buffers. The context meter,
// `cairn context` and the trigger all use these functions, so what the user
// sees and what cairn does never disagree.
package tokens

import (
	"strconv"
	"strings"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// Reference buffers, in tokens (seed 003 §3).
const (
	// MaxOutputReserve caps what the window keeps free for the reply.
	MaxOutputReserve = 20_000
	// AutoCompactBuffer is kept free below the effective window.
	AutoCompactBuffer = 13_000
	// WarningBuffer is where the user is warned that compaction is near.
	WarningBuffer = 20_000
	// ManualCompactBuffer is what a manual /compact needs to stay below.
	ManualCompactBuffer = 3_000
	// BytesPerToken is the estimate's ratio.
	BytesPerToken = 4
)

// Estimate returns a rough token count of text: about 4 bytes a token.
func Estimate(text string) int64 { return EstimateLen(len(text)) }

// EstimateLen is Estimate of a text of n bytes.
func EstimateLen(n int) int64 { return int64((n + BytesPerToken - 1) / BytesPerToken) }

// EstimateMessages estimates the tokens of messages from their encoding.
func EstimateMessages(msgs []model.Message) int64 {
	var n int64
	for _, m := range msgs {
		for _, b := range m.Content {
			n += EstimateBlock(b)
		}
	}
	return n
}

// BlockOverhead is what the floor (EstimateFloor) counts for each content
// block besides its content: its framing and ids, which the content's
// estimate leaves out. Their JSON is about 100 bytes a block; how many
// tokens the API counts for them is not measured here, so the floor
// takes a low figure and errs low.
const BlockOverhead = 8

// EstimateFloor is a low estimate of what msgs come to as a request
// carries them: their content (EstimateMessages) and BlockOverhead for
// each block. A history of many small blocks (a long session's calls
// with their results cleared) comes to far more than its content: at
// 6,800 blocks with 640 KB of content, a request of 1.3 MB.
func EstimateFloor(msgs []model.Message) int64 {
	n := EstimateMessages(msgs)
	for _, m := range msgs {
		n += int64(len(m.Content)) * BlockOverhead
	}
	return n
}

// EstimateBlock estimates one content block. Images count a flat 1,600
// tokens (about what the API charges for a 1 MP image), not their base64.
func EstimateBlock(b model.Block) int64 {
	switch b.Type {
	case model.BlockText:
		return Estimate(b.Text)
	case model.BlockThinking:
		return Estimate(b.Thinking)
	case model.BlockToolUse:
		return Estimate(b.Name) + EstimateLen(len(b.Input))
	case model.BlockToolResult:
		c := b.Content
		// Content in a file's mapping is a string (transcript maps no
		// other), told without reading it: its pages stay out of memory.
		if filemap.Holds(c) || len(c) > 0 && c[0] == '"' {
			// A string: its encoded length is close enough, and decoding
			// every result on every count would cost more than it tells.
			return EstimateLen(len(c) - 2)
		}
		var blocks []model.Block
		if len(c) > 0 && c[0] == '[' {
			if dec, err := model.DecodeContent(c); err == nil {
				blocks = dec
			}
		}
		if blocks == nil {
			return Estimate(b.ResultText())
		}
		var n int64
		for _, c := range blocks {
			n += EstimateBlock(c)
		}
		return n
	case model.BlockImage, model.BlockDocument:
		return 1600
	}
	enc, _ := jsonw.Marshal(b)
	return Estimate(string(enc))
}

// EstimateRequest estimates a whole request: system prompt, tool
// definitions and messages.
func EstimateRequest(system []model.SystemBlock, tools []model.ToolSpec, msgs []model.Message) int64 {
	n := EstimateMessages(msgs)
	for _, b := range system {
		n += Estimate(b.Text)
	}
	return n + EstimateTools(tools)
}

// EstimateTools estimates tool definitions as a request sends them: each
// one's name, description and input schema in their JSON encoding. The
// trigger, the meter, /context and `cairn context` count tools with it.
func EstimateTools(tools []model.ToolSpec) int64 {
	var n int64
	for _, t := range tools {
		enc, _ := jsonw.Marshal(map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema})
		n += Estimate(string(enc))
	}
	return n
}

// Count is the context size after msgs (K1): the usage the API reported
// for the response at index anchor, plus an estimate of every message after
// it. anchor < 0 means no response reported usage yet: everything is
// estimated.
func Count(msgs []model.Message, anchor int, usage model.Usage) int64 {
	if anchor < 0 || anchor >= len(msgs) {
		return EstimateMessages(msgs)
	}
	return usage.ContextTokens() + EstimateMessages(msgs[anchor+1:])
}

// Window describes the context limits of one model.
type Window struct {
	// Size is the model's context window.
	Size int64
	// MaxOutput is the most the model may write in one reply.
	MaxOutput int64
	// Cap, when positive, lowers the window used for the thresholds
	// (CAIRN_AUTO_COMPACT_WINDOW).
	Cap int64
}

// size is the window the thresholds come from: Size, or Cap when lower.
func (w Window) size() int64 {
	if w.Cap > 0 && w.Cap < w.Size {
		return w.Cap
	}
	return w.Size
}

// scale is the share of the reference reserves a window of this size
// keeps, as a fraction num/den: all of them (1/1) while the reply's
// reserve and the auto-compaction buffer leave at least half the window
// to the conversation, and in a smaller window (below about 66,000
// tokens with a 20,000-token reply reserve, 33,000 with none) as much as
// keeps them to half of it: the fixed reserves would leave nothing, or
// less than nothing.
func (w Window) scale() (num, den int64) {
	s := w.size()
	total := min(w.MaxOutput, MaxOutputReserve) + AutoCompactBuffer
	if total <= s/2 || s <= 0 {
		return 1, 1
	}
	return s / 2, total
}

// reserve is ref tokens scaled to the window, at least floor when scaled.
func (w Window) reserve(ref, floor int64) int64 {
	num, den := w.scale()
	if num == den {
		return ref
	}
	return max(min(floor, ref), ref*num/den)
}

// OutputReserve is what the window keeps free for the reply (K2):
// min(MaxOutput, 20,000), scaled down in a small window.
func (w Window) OutputReserve() int64 {
	return w.reserve(min(w.MaxOutput, MaxOutputReserve), 256)
}

// Effective is the window less the reply's reserve (K2).
func (w Window) Effective() int64 { return w.size() - w.OutputReserve() }

// AutoCompactAt is the context size that triggers auto-compaction (K3):
// the effective window less 13,000 tokens, scaled down in a small window
// (where it is half the window).
func (w Window) AutoCompactAt() int64 {
	return w.Effective() - w.reserve(AutoCompactBuffer, 256)
}

// WarnAt is the context size at which the user is warned (K3).
func (w Window) WarnAt() int64 { return w.Effective() - w.reserve(WarningBuffer, 256) }

// ManualCompactLimit is the most context a manual compaction can start from.
func (w Window) ManualCompactLimit() int64 {
	return w.Effective() - w.reserve(ManualCompactBuffer, 64)
}

// PercentUsed is used as a share of the effective window, 0–100, rounded
// down to a tenth: the meter and /context print this one number.
func (w Window) PercentUsed(used int64) float64 {
	e := w.Effective()
	if e <= 0 {
		return 100
	}
	return float64(int(min(100, float64(used)*100/float64(e))*10)) / 10
}

// Percent prints a PercentUsed share as the meter and the context
// report show it ("3.9%").
func Percent(p float64) string { return strconv.FormatFloat(p, 'f', 1, 64) + "%" }

// ForModel returns the window of a model cairn knows, and false for one it
// does not (the caller then asks CAIRN_CONTEXT_WINDOW / contextWindow).
// Claude models have 200K windows (1M with the "[1m]" suffix) and write up
// to 32K tokens (64K for Sonnet and Haiku 4.5), per Anthropic's model
// overview.
func ForModel(name string) (Window, bool) {
	n := strings.ToLower(name)
	if !strings.Contains(n, "claude") {
		return Window{}, false
	}
	w := Window{Size: 200_000, MaxOutput: 32_000}
	if strings.HasSuffix(n, "[1m]") {
		w.Size = 1_000_000
	}
	if strings.Contains(n, "sonnet") || strings.Contains(n, "haiku") {
		w.MaxOutput = 64_000
	}
	return w, true
}

// CapFromEnv parses CAIRN_AUTO_COMPACT_WINDOW: a positive number of tokens,
// else 0 (no cap).
func CapFromEnv(getenv func(string) string) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(getenv("CAIRN_AUTO_COMPACT_WINDOW")), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// Thousands formats a count for people, with comma separators: 12,345.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
