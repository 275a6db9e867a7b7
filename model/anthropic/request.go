package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
)

// DefaultMaxTokens is the max_tokens sent when a Request leaves it zero.
const DefaultMaxTokens = 8192

// defaultSchema is the input_schema of a tool that declares none.
var defaultSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// MarshalRequest encodes req as the body of a streaming Messages request.
//
// The encoding is deterministic: equal Requests give equal bytes, which is
// what keeps prompt-cache prefixes stable. Fields come in a fixed order
// (model, max_tokens, system, tools, messages, context_management,
// stream); message content is sent exactly as model.Block encodes it,
// unknown fields such as cache_control included; a SystemBlock or ToolSpec
// with Cache gets cache_control {"type":"ephemeral"}. Strings are not
// HTML-escaped.
func MarshalRequest(req *model.Request) ([]byte, error) {
	if req.Model == "" {
		return nil, errors.New("anthropic: the request names no model: pass --model or set ANTHROPIC_MODEL")
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	var w jsonw.Object
	w.Str("model", req.Model)
	w.Raw("max_tokens", strconv.AppendInt(nil, int64(maxTokens), 10))
	if len(req.System) > 0 {
		w.Raw("system", systemJSON(req.System))
	}
	if len(req.Tools) > 0 {
		tools, err := toolsJSON(req.Tools)
		if err != nil {
			return nil, err
		}
		w.Raw("tools", tools)
	}
	if len(req.ContextManagement) > 0 && !json.Valid(req.ContextManagement) {
		return nil, fmt.Errorf("anthropic: context_management is not valid JSON: %q", req.ContextManagement)
	}
	// The messages are most of the body: each message's own encoding is
	// spliced in as is, rather than compacted once more by an encoder.
	head := w.Bytes()
	body := make([]byte, 0, len(head)+estimateSize(req.Messages)+len(req.ContextManagement)+64)
	body = append(body, head[:len(head)-1]...)
	body = append(body, `,"messages":[`...)
	for i := range req.Messages {
		if i > 0 {
			body = append(body, ',')
		}
		body = req.Messages[i].AppendJSON(body)
	}
	body = append(body, ']')
	var tail jsonw.Object
	if len(req.ContextManagement) > 0 {
		tail.Raw("context_management", req.ContextManagement)
	}
	tail.Bool("stream", true)
	t := tail.Bytes()
	body = append(body, ',')
	return append(body, t[1:]...), nil
}

// estimateSize guesses the encoded size of messages, to allocate once.
func estimateSize(messages []model.Message) int {
	n := 0
	for _, m := range messages {
		n += 32
		for _, b := range m.Content {
			n += 64 + len(b.Text) + len(b.Input) + len(b.Content) + len(b.Thinking)
		}
	}
	return n
}

func systemJSON(blocks []model.SystemBlock) []byte {
	out := []byte{'['}
	for i, b := range blocks {
		if i > 0 {
			out = append(out, ',')
		}
		var o jsonw.Object
		o.Str("type", model.BlockText)
		o.Str("text", b.Text)
		if b.Cache {
			o.Raw("cache_control", model.CacheControl)
		}
		out = append(out, o.Bytes()...)
	}
	return append(out, ']')
}

func toolsJSON(tools []model.ToolSpec) ([]byte, error) {
	out := []byte{'['}
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("anthropic: tool %d has no name", i)
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = defaultSchema
		} else if !json.Valid(schema) {
			return nil, fmt.Errorf("anthropic: tool %q: input schema is not valid JSON", t.Name)
		}
		if i > 0 {
			out = append(out, ',')
		}
		var o jsonw.Object
		o.Str("name", t.Name)
		o.OptStr("description", t.Description)
		o.Raw("input_schema", schema)
		if t.Cache {
			o.Raw("cache_control", model.CacheControl)
		}
		out = append(out, o.Bytes()...)
	}
	return append(out, ']'), nil
}
