package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// assembler turns the events of a response stream into model.Chunks and
// builds the complete Response as it goes.
type assembler struct {
	resp    model.Response
	blocks  []*partial
	events  int
	started bool
}

// partial is a content block being streamed.
type partial struct {
	block     model.Block
	open      bool
	text      strings.Builder
	thinking  strings.Builder
	input     strings.Builder
	signature strings.Builder
	hasSig    bool
	content   strings.Builder // a compaction block's summary
	encrypted string
	citations []json.RawMessage
}

// handle applies one event, passing chunks to emit. It reports stop when
// the response is complete or emit asked to stop, and an error when the
// stream breaks the protocol.
func (a *assembler) handle(ev *sdk.BetaRawMessageStreamEventUnion, emit func(model.Chunk) bool) (stop bool, err error) {
	a.events++
	if !a.started && ev.Type != "message_start" {
		return false, fmt.Errorf("anthropic: the stream began with %q instead of message_start [request %s]", ev.Type, a.resp.RequestID)
	}
	switch ev.Type {
	case "message_start":
		if a.started {
			return false, fmt.Errorf("anthropic: a second message_start in one stream [request %s]", a.resp.RequestID)
		}
		a.started = true
		m := &ev.Message
		a.resp.ID, a.resp.Model = m.ID, string(m.Model)
		a.resp.Usage = model.Usage{
			InputTokens:              m.Usage.InputTokens,
			OutputTokens:             m.Usage.OutputTokens,
			CacheCreationInputTokens: m.Usage.CacheCreationInputTokens,
			CacheReadInputTokens:     m.Usage.CacheReadInputTokens,
		}
		return !emit(model.Chunk{Kind: model.ChunkMessageStart, ID: a.resp.ID, Model: a.resp.Model}), nil

	case "content_block_start":
		i := int(ev.Index)
		if i != len(a.blocks) {
			return false, fmt.Errorf("anthropic: content block %d started after %d blocks [request %s]", i, len(a.blocks), a.resp.RequestID)
		}
		p := &partial{open: true}
		if err := json.Unmarshal([]byte(ev.ContentBlock.RawJSON()), &p.block); err != nil {
			return false, fmt.Errorf("anthropic: content block %d: %w [request %s]", i, err, a.resp.RequestID)
		}
		p.text.WriteString(p.block.Text)
		p.thinking.WriteString(p.block.Thinking)
		a.blocks = append(a.blocks, p)
		start := p.block
		return !emit(model.Chunk{Kind: model.ChunkBlockStart, Index: i, Block: &start}), nil

	case "content_block_delta":
		p, err := a.open(ev.Index)
		if err != nil {
			return false, err
		}
		d := &ev.Delta
		i := int(ev.Index)
		switch d.Type {
		case "text_delta":
			p.text.WriteString(d.Text)
			return !emit(model.Chunk{Kind: model.ChunkTextDelta, Index: i, Text: d.Text}), nil
		case "thinking_delta":
			p.thinking.WriteString(d.Thinking)
			return !emit(model.Chunk{Kind: model.ChunkThinkingDelta, Index: i, Text: d.Thinking}), nil
		case "input_json_delta":
			p.input.WriteString(d.PartialJSON)
			if d.PartialJSON == "" {
				return false, nil
			}
			return !emit(model.Chunk{Kind: model.ChunkInputDelta, Index: i, Text: d.PartialJSON}), nil
		case "signature_delta":
			p.signature.WriteString(d.Signature)
			p.hasSig = true
		case "citations_delta":
			if raw := d.Citation.RawJSON(); raw != "" {
				p.citations = append(p.citations, json.RawMessage(raw))
			}
		case "compaction_delta":
			p.content.WriteString(d.Content)
			if d.EncryptedContent != "" {
				p.encrypted = d.EncryptedContent
			}
		}
		// Other delta types are newer than this code: skipped.
		return false, nil

	case "content_block_stop":
		p, err := a.open(ev.Index)
		if err != nil {
			return false, err
		}
		p.open = false
		b, err := p.finish()
		if err != nil {
			return false, fmt.Errorf("%w [request %s]", err, a.resp.RequestID)
		}
		p.block = b
		done := b
		return !emit(model.Chunk{Kind: model.ChunkBlockStop, Index: int(ev.Index), Block: &done}), nil

	case "message_delta":
		if r := string(ev.Delta.StopReason); r != "" {
			a.resp.StopReason = r
		}
		u, f := &ev.Usage, &ev.Usage.JSON
		if f.OutputTokens.Valid() {
			a.resp.Usage.OutputTokens = u.OutputTokens
		}
		if f.InputTokens.Valid() {
			a.resp.Usage.InputTokens = u.InputTokens
		}
		if f.CacheCreationInputTokens.Valid() {
			a.resp.Usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
		if f.CacheReadInputTokens.Valid() {
			a.resp.Usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
		return false, nil

	case "message_stop":
		for i, p := range a.blocks {
			if p.open {
				return false, fmt.Errorf("anthropic: message_stop before content block %d stopped [request %s]", i, a.resp.RequestID)
			}
		}
		a.resp.Content = make([]model.Block, len(a.blocks))
		for i, p := range a.blocks {
			a.resp.Content[i] = p.block
		}
		resp := a.resp
		emit(model.Chunk{Kind: model.ChunkDone, Response: &resp})
		return true, nil
	}
	// Unknown event types are newer than this code: skipped.
	return false, nil
}

func (a *assembler) open(index int64) (*partial, error) {
	if index < 0 || index >= int64(len(a.blocks)) || !a.blocks[index].open {
		return nil, fmt.Errorf("anthropic: event for content block %d, which is not open [request %s]", index, a.resp.RequestID)
	}
	return a.blocks[index], nil
}

// finish returns the complete block: the start block with what the deltas
// brought.
func (p *partial) finish() (model.Block, error) {
	b := p.block
	switch b.Type {
	case model.BlockText:
		b.Text = p.text.String()
	case model.BlockThinking:
		b.Thinking = p.thinking.String()
	}
	if p.input.Len() > 0 {
		in := p.input.String()
		if !json.Valid([]byte(in)) {
			return b, fmt.Errorf("anthropic: the input of tool_use %q (%s) is not valid JSON: %q", b.Name, b.ID, truncate(in, 200))
		}
		b.Input = json.RawMessage(in)
	}
	set := func(k string, v json.RawMessage) {
		extra := make(map[string]json.RawMessage, len(b.Extra)+1)
		for k, v := range b.Extra {
			extra[k] = v
		}
		extra[k] = v
		b.Extra = extra
	}
	if p.hasSig {
		set("signature", jsonw.String(p.signature.String()))
	}
	if len(p.citations) > 0 {
		if list, err := jsonw.Marshal(p.citations); err == nil {
			set("citations", list)
		}
	}
	if p.content.Len() > 0 {
		b.Content = jsonw.String(p.content.String())
	}
	if p.encrypted != "" {
		set("encrypted_content", jsonw.String(p.encrypted))
	}
	return b, nil
}
