package compact

import (
	"encoding/json"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// Resumed returns the messages a session resumed from conv sends before
// the layers act again: conv's messages with the results micro-compaction
// cleared replaced by the placeholder and the spans context collapse
// committed folded, as the live session sent them (SPEC C2, C3).
func Resumed(conv *transcript.Conversation) []model.Message {
	msgs := conv.Messages()
	if len(conv.Cleared) > 0 {
		m := NewMicro(MicroConfig{Cleared: conv.Cleared})
		msgs = project(msgs, m.collect(msgs), m.cleared)
	}
	return collapseView(msgs, conv.Collapsed)
}

// Saving is what one layer freed: how often it acted and the tokens it
// took out of the requests.
type Saving struct {
	Count  int   `json:"count"`
	Tokens int64 `json:"tokensSaved"`
	// Writes is what it cost in cache writes: the cache_creation tokens
	// of the first response after each of its acts, when the changed
	// prefix was written to the prompt cache again.
	Writes int64 `json:"cacheWriteTokens"`
}

// Savings is what each layer of the pipeline freed in the conversation
// since its last compaction, as the transcript records it, and what that
// compaction did.
type Savings struct {
	// Offload counts tool results spilled to files (C0): the tokens are
	// the full output's less the preview's.
	Offload Saving `json:"offload"`
	// Snip counts snip_boundary lines (C1); Claude Code's record no size,
	// so only cairn's count tokens.
	Snip Saving `json:"snip"`
	// Micro counts microcompact_boundary lines (C2).
	Micro Saving `json:"microcompact"`
	// Collapse counts context_collapse_commit lines (C3).
	Collapse Saving `json:"collapse"`
	// Compaction is the compaction the conversation starts from (C4), nil
	// if it has none.
	Compaction *CompactionSaving `json:"compaction,omitempty"`
}

// CompactionSaving is what a compact_boundary records.
type CompactionSaving struct {
	Trigger    string `json:"trigger"`
	PreTokens  int64  `json:"preTokens"`
	PostTokens int64  `json:"postTokens,omitempty"`
	// Dropped is every token the session's compactions have summarised
	// away, as far as the boundary knows.
	Dropped int64 `json:"cumulativeDroppedTokens,omitempty"`
	// Writes is the cache writes of the first response after it: the
	// compacted prefix written to the cache.
	Writes int64 `json:"cacheWriteTokens,omitempty"`
}

// SavingsOf reads what each layer freed from conv's entries. Records it
// cannot decode are left out: the figures are a report, not the view.
func SavingsOf(conv *transcript.Conversation) Savings {
	var s Savings
	// owed is where the cache writes of the next response go: the layer
	// that acted last.
	var owed *int64
	for i := range conv.Entries {
		e := conv.Entries[i]
		switch {
		case e.Type == transcript.TypeAssistant && owed != nil:
			if m, ok, _ := e.DecodeMessage(); ok && m.Usage != nil {
				*owed += m.Usage.CacheCreationInputTokens
				owed = nil
			}
		case e.IsCompactBoundary():
			if md, err := e.DecodeCompactMetadata(); err == nil {
				s.Compaction = &CompactionSaving{Trigger: md.Trigger, PreTokens: md.PreTokens, PostTokens: md.PostTokens, Dropped: md.CumulativeDroppedTokens}
				owed = &s.Compaction.Writes
			}
		case len(e.SnipMetadata) > 0:
			var md struct {
				TokensFreed int64 `json:"tokensFreed"`
			}
			_ = json.Unmarshal(e.SnipMetadata, &md)
			s.Snip.Count++
			s.Snip.Tokens += md.TokensFreed
			owed = &s.Snip.Writes
		case e.IsMicrocompactBoundary():
			if md, err := e.DecodeMicrocompactMetadata(); err == nil {
				s.Micro.Count++
				s.Micro.Tokens += md.TokensSaved
				owed = &s.Micro.Writes
			}
		case e.IsCollapseCommit():
			if md, err := e.DecodeCollapseMetadata(); err == nil {
				s.Collapse.Count++
				s.Collapse.Tokens += md.TokensSaved
				owed = &s.Collapse.Writes
			}
		case e.Type == transcript.TypeUser && e.ResultHasKey("persistedOutputSize"):
			// Only offloaded results are read, back from the file when the
			// load left them there.
			res, err := e.Result()
			if err != nil {
				continue
			}
			var d struct {
				Size int64 `json:"persistedOutputSize"`
			}
			if json.Unmarshal(res, &d) != nil || d.Size == 0 {
				continue
			}
			var preview int64
			if m, ok, _ := e.DecodeMessage(); ok {
				for _, b := range m.Content {
					preview += tokens.EstimateBlock(b)
				}
			}
			s.Offload.Count++
			s.Offload.Tokens += max(0, d.Size/tokens.BytesPerToken-preview)
		}
	}
	return s
}
