package modeltest

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/model"
)

// Scripted is a model.Model that answers in the process, without HTTP: a
// test that is about what the caller does with a reply (the engine's loop,
// a compaction layer, a retry wrapper) uses it instead of a hand-written
// fake; a test about the wire uses the Server.
//
// Each request gets the blocks Answer returns for it, streamed as the
// provider clients stream them: a message start, text and thinking in
// word-sized deltas, each block's stop, and the response. The stop reason
// is tool_use when the blocks hold a tool call, otherwise end_turn. An
// error from Answer fails the stream: at once when Answer gave no blocks,
// otherwise after the blocks, in place of the response (a reply cut off
// before its end). A cancelled context ends the stream with ctx's error
// between deltas.
// Scripted is safe for concurrent use; requests are numbered from 0 in the
// order their streams start.
type Scripted struct {
	// Answer returns the content answering request n, or the error the
	// stream fails with (after the content, when it returns both).
	// NewScripted sets it to play steps in order.
	Answer func(ctx context.Context, n int, req *model.Request) ([]model.Block, error)
	// Usage is request n's usage; nil reports zero.
	Usage func(n int) model.Usage
	// Chunks, when set, is told of every chunk before it is yielded (to
	// count them, or to act at a given point of the stream).
	Chunks func(n int, c model.Chunk)

	mu   sync.Mutex
	reqs []*model.Request
}

// Step answers one request of a script.
type Step func(req *model.Request) ([]model.Block, error)

// NewScripted returns a Scripted model that answers the n-th request with
// steps[n]; a request beyond the script fails with an error naming it.
func NewScripted(steps ...Step) *Scripted {
	return &Scripted{Answer: func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
		if n >= len(steps) {
			return nil, fmt.Errorf("modeltest: the script has %d replies and no reply for request %d", len(steps), n+1)
		}
		return steps[n](req)
	}}
}

// Say is a step that answers with text.
func Say(text string) Step {
	return func(*model.Request) ([]model.Block, error) { return []model.Block{model.TextBlock(text)}, nil }
}

// Call is a step that answers with blocks (text and tool calls).
func Call(blocks ...model.Block) Step {
	return func(*model.Request) ([]model.Block, error) { return blocks, nil }
}

// Fail is a step whose stream fails with err.
func Fail(err error) Step {
	return func(*model.Request) ([]model.Block, error) { return nil, err }
}

// FailAfter is a step whose stream gives blocks and then fails with err
// instead of ending with the response.
func FailAfter(err error, blocks ...model.Block) Step {
	return func(*model.Request) ([]model.Block, error) { return blocks, err }
}

// Requests returns the requests received so far, in order.
func (s *Scripted) Requests() []*model.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*model.Request(nil), s.reqs...)
}

// Stream answers req; see Scripted.
func (s *Scripted) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		blocks, failed := s.Answer(ctx, n, req)
		if failed != nil && len(blocks) == 0 {
			yield(model.Chunk{}, failed)
			return
		}
		send := func(c model.Chunk) bool {
			if s.Chunks != nil {
				s.Chunks(n, c)
			}
			return yield(c, nil)
		}
		name := req.Model
		if name == "" {
			name = "scripted"
		}
		id := fmt.Sprintf("msg_%d", n+1)
		if !send(model.Chunk{Kind: model.ChunkMessageStart, ID: id, Model: name}) {
			return
		}
		stop := model.StopEndTurn
		for k := range blocks {
			b := &blocks[k]
			var kind model.ChunkKind
			var text string
			switch b.Type {
			case model.BlockToolUse:
				stop = model.StopToolUse
			case model.BlockText:
				kind, text = model.ChunkTextDelta, b.Text
			case model.BlockThinking:
				kind, text = model.ChunkThinkingDelta, b.Thinking
			}
			if text != "" {
				for piece := range strings.SplitAfterSeq(text, " ") {
					if err := ctx.Err(); err != nil {
						yield(model.Chunk{}, err)
						return
					}
					if !send(model.Chunk{Kind: kind, Index: k, Text: piece}) {
						return
					}
				}
			}
			if !send(model.Chunk{Kind: model.ChunkBlockStop, Index: k, Block: b}) {
				return
			}
		}
		if failed != nil {
			yield(model.Chunk{}, failed)
			return
		}
		var u model.Usage
		if s.Usage != nil {
			u = s.Usage(n)
		}
		send(model.Chunk{Kind: model.ChunkDone, Response: &model.Response{
			ID: id, Model: name, Content: blocks, StopReason: stop, RequestID: fmt.Sprintf("req_%d", n+1), Usage: u,
		}})
	}
}
