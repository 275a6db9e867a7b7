package transcript

import (
	"slices"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
)

// ContextTokens is the size of the conversation's context as the
// auto-compaction trigger counts it (SPEC K1): the usage of the last
// response that reported one, plus an estimate of every entry after that
// response's first line (its other lines and interleaved tool results
// included). Responses a compaction preserved do not count as reported
// (R5): right after a compaction the size is the estimate of what is left.
func (c *Conversation) ContextTokens() int64 {
	anchor := -1
	var usage model.Usage
	for i := len(c.Entries) - 1; i >= 0 && anchor < 0; i-- {
		e := c.Entries[i]
		if e.Type != TypeAssistant || c.Preserved[e.UUID] || e.IsAPIErrorMessage {
			continue
		}
		m, ok, err := e.DecodeMessage()
		if err != nil || !ok || m.Usage == nil || m.Model == SyntheticModel {
			continue
		}
		usage, anchor = *m.Usage, i
		// Anchor at the response's first line.
		for j := i - 1; j >= 0 && m.ID != ""; j-- {
			if c.Entries[j].Type == TypeAssistant && messageID(c.Entries[j]) == m.ID {
				anchor = j
			} else if c.Entries[j].Type != TypeUser {
				break
			}
		}
	}
	var n int64
	if anchor >= 0 {
		n = usage.ContextTokens()
	}
	for i := anchor + 1; i < len(c.Entries); i++ {
		n += estimateEntry(c.Entries[i])
	}
	return n
}

// UsageAt finds, in msgs (this conversation's Messages), the message
// holding the last response that reported usage the trigger counts, and
// returns that usage and the message's index; -1 when there is none (SPEC
// K1, R5).
func (c *Conversation) UsageAt(msgs []model.Message) (model.Usage, int) {
	for i := len(c.Entries) - 1; i >= 0; i-- {
		e := c.Entries[i]
		if e.Type != TypeAssistant || c.Preserved[e.UUID] || e.IsAPIErrorMessage {
			continue
		}
		m, ok, err := e.DecodeMessage()
		if err != nil || !ok || m.Usage == nil || m.Model == SyntheticModel {
			continue
		}
		for j := len(msgs) - 1; j >= 0; j-- {
			if slices.Contains(msgs[j].IDs, e.UUID) {
				return *m.Usage, j
			}
		}
		return model.Usage{}, -1
	}
	return model.Usage{}, -1
}

// estimateEntry estimates what one entry adds to the context.
func estimateEntry(e *Entry) int64 {
	var blocks []model.Block
	switch e.Type {
	case TypeUser, TypeAssistant:
		m, ok, err := e.DecodeMessage()
		if err != nil || !ok {
			return 0
		}
		blocks = m.Content
	case TypeAttachment:
		blocks, _ = renderAttachment(e)
	}
	var n int64
	for _, b := range blocks {
		n += tokens.EstimateBlock(b)
	}
	return n
}
