package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	sdk "github.com/openai/openai-go/v3"
)

// ErrIncomplete: the stream ended before the server said why the response
// stopped, e.g. because the connection was cut. Sending the request again
// may succeed.
var ErrIncomplete = errors.New("openai: the response stream ended before the response was complete")

// assembler turns chat.completion.chunk events into model.Chunks and the
// final Response. Blocks come out one after the other: a text delta after
// a tool call, or a new tool call, closes the block before it.
type assembler struct {
	newID func() string
	model string // the requested model, until the server names one

	started bool
	resp    model.Response
	out     []model.Chunk // chunks produced by the last add or finish

	open  int // index of the open block, -1 when none
	text  strings.Builder
	call  *toolCall // the open or pending tool call
	calls int       // tool calls seen

	finishReason string
	usage        *sdk.CompletionUsage
}

// toolCall is a tool call being streamed. Its block starts once the name or
// arguments arrive; the id may come first on its own.
type toolCall struct {
	index   int64
	id      string
	name    string
	args    strings.Builder
	started bool
}

func newAssembler(requested string, newID func() string) *assembler {
	return &assembler{newID: newID, model: requested, open: -1}
}

func (a *assembler) emit(c model.Chunk) { a.out = append(a.out, c) }

// add consumes one chunk.
func (a *assembler) add(c sdk.ChatCompletionChunk) error {
	if !a.started {
		a.started = true
		a.resp.ID = c.ID
		if c.Model != "" {
			a.model = c.Model
		}
		a.resp.Model = a.model
		a.emit(model.Chunk{Kind: model.ChunkMessageStart, ID: a.resp.ID, Model: a.resp.Model})
	}
	if c.JSON.Usage.Valid() {
		u := c.Usage
		a.usage = &u
	}
	for _, choice := range c.Choices {
		if choice.Index != 0 {
			continue // only one choice is requested
		}
		d := choice.Delta
		if d.Content != "" {
			a.addText(d.Content)
		}
		if d.Refusal != "" {
			a.addText(d.Refusal)
		}
		for _, tc := range d.ToolCalls {
			if err := a.addToolCall(tc); err != nil {
				return err
			}
		}
		if choice.FinishReason != "" {
			a.finishReason = choice.FinishReason
			a.closeBlock()
		}
	}
	return nil
}

func (a *assembler) addText(s string) {
	if a.open < 0 || a.call != nil {
		a.closeBlock()
		a.open = len(a.resp.Content)
		a.emit(model.Chunk{Kind: model.ChunkBlockStart, Index: a.open, Block: &model.Block{Type: model.BlockText}})
	}
	a.text.WriteString(s)
	a.emit(model.Chunk{Kind: model.ChunkTextDelta, Index: a.open, Text: s})
}

func (a *assembler) addToolCall(tc sdk.ChatCompletionChunkChoiceDeltaToolCall) error {
	// A delta continues the current call when it has the call's index and
	// no other id; some servers send every call of a response at index 0,
	// told apart only by their ids.
	same := a.call != nil && a.call.index == tc.Index && (tc.ID == "" || a.call.id == "" || tc.ID == a.call.id)
	if !same {
		if a.call != nil && tc.Index < a.call.index {
			return fmt.Errorf("openai: the server went back to tool call %d after starting tool call %d", tc.Index, a.call.index)
		}
		a.closeBlock()
		a.call = &toolCall{index: tc.Index}
		a.calls++
	}
	call := a.call
	if call.id == "" {
		call.id = tc.ID
	}
	if call.name == "" {
		call.name = tc.Function.Name
	}
	if !call.started && (call.name != "" || tc.Function.Arguments != "") {
		a.startCall()
	}
	if tc.Function.Arguments != "" {
		call.args.WriteString(tc.Function.Arguments)
		a.emit(model.Chunk{Kind: model.ChunkInputDelta, Index: a.open, Text: tc.Function.Arguments})
	}
	return nil
}

func (a *assembler) startCall() {
	if a.call.id == "" {
		a.call.id = a.newID()
	}
	a.call.started = true
	a.open = len(a.resp.Content)
	a.emit(model.Chunk{Kind: model.ChunkBlockStart, Index: a.open,
		Block: &model.Block{Type: model.BlockToolUse, ID: a.call.id, Name: a.call.name}})
}

// closeBlock ends the open block, if any, with its complete content.
func (a *assembler) closeBlock() {
	if a.call != nil && !a.call.started {
		a.startCall() // a call that never got a name still happened
	}
	if a.open < 0 {
		return
	}
	var b model.Block
	if a.call != nil {
		b = model.Block{Type: model.BlockToolUse, ID: a.call.id, Name: a.call.name, Input: toolInput(a.call.args.String())}
		a.call = nil
	} else {
		b = model.TextBlock(a.text.String())
		a.text.Reset()
	}
	a.resp.Content = append(a.resp.Content, b)
	a.emit(model.Chunk{Kind: model.ChunkBlockStop, Index: a.open, Block: &b})
	a.open = -1
}

// toolInput returns the input object of a tool call from its streamed
// arguments. No arguments is an empty object. Arguments that are not a
// JSON object (a model's mistake, or a reply cut by the token limit) are
// kept as a string under "invalid_arguments", so that the tool's input
// check tells the model what went wrong and the transcript stays valid JSON.
func toolInput(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(trimmed)) && trimmed[0] == '{' {
		return json.RawMessage(trimmed)
	}
	var w jsonw.Object
	w.Str("invalid_arguments", args)
	return w.Bytes()
}

// finish ends the response after the stream ended without error.
func (a *assembler) finish() error {
	if !a.started {
		return fmt.Errorf("%w: no data before the stream ended", ErrIncomplete)
	}
	if a.finishReason == "" {
		return ErrIncomplete
	}
	a.closeBlock()
	a.resp.StopReason = stopReason(a.finishReason, a.calls > 0)
	if a.usage != nil {
		a.resp.Usage = usage(*a.usage)
	}
	resp := a.resp
	a.emit(model.Chunk{Kind: model.ChunkDone, Response: &resp})
	return nil
}

// stopReason maps a finish_reason to the Messages API's stop reasons.
// Servers that answer "stop" after calling tools (older Ollama did) get
// tool_use, since the tools must run either way.
func stopReason(finish string, calledTools bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return model.StopToolUse
	case "length":
		return model.StopMaxTokens
	case "content_filter":
		return "refusal"
	case "stop":
		if calledTools {
			return model.StopToolUse
		}
		return model.StopEndTurn
	}
	return finish
}

// usage converts chat-completions usage. prompt_tokens counts every input
// token; the cached and cache-written parts are reported apart, as the
// Messages API does, and the rest is input.
func usage(u sdk.CompletionUsage) model.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	written := u.PromptTokensDetails.CacheWriteTokens
	return model.Usage{
		InputTokens:              max(u.PromptTokens-cached-written, 0),
		OutputTokens:             u.CompletionTokens,
		CacheReadInputTokens:     cached,
		CacheCreationInputTokens: written,
	}
}
