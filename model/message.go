// Package model defines the conversation types every layer of cairn shares —
// messages, content blocks, token usage — in the shape of the Anthropic
// Messages API, which is also the shape Claude Code stores in its transcripts.
//
// The types round-trip: fields cairn does not know are kept and written back,
// so a block read from a newer transcript is sent on unchanged.
package model

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/cairn-dev/cairn/internal/jsonscan"
	"github.com/cairn-dev/cairn/internal/jsonw"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Block types cairn inspects. Other types pass through untouched.
const (
	BlockText             = "text"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	BlockImage            = "image"
	BlockDocument         = "document"
)

// Message is one API message: a role and its content blocks.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
	// IDs are the uuids of the transcript lines the message was built
	// from, oldest first; compaction and snips name messages by them. They
	// are never sent to the model.
	IDs []string `json:"-"`
}

// Text returns the concatenated text of the message's text blocks.
func (m Message) Text() string {
	var b []byte
	for _, c := range m.Content {
		if c.Type == BlockText {
			b = append(b, c.Text...)
		}
	}
	return string(b)
}

// ToolUses returns the tool_use blocks of the message, in order.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, c := range m.Content {
		if c.Type == BlockToolUse {
			out = append(out, c)
		}
	}
	return out
}

// Block is one content block. The common fields are typed; everything else
// (citations, cache_control, source, signature …) is kept in Extra as raw
// JSON so it is written back exactly.
type Block struct {
	Type string

	Text string // text

	ID    string          // tool_use
	Name  string          // tool_use
	Input json.RawMessage // tool_use

	ToolUseID string          // tool_result
	Content   json.RawMessage // tool_result: a string or a list of blocks
	IsError   *bool           // tool_result; nil when absent

	Thinking string // thinking

	// Extra holds every other field by name.
	Extra map[string]json.RawMessage
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: s} }

// ToolResultBlock returns a tool_result block with string content.
func ToolResultBlock(toolUseID, content string, isError bool) Block {
	b := Block{Type: BlockToolResult, ToolUseID: toolUseID, Content: jsonw.String(content)}
	if isError {
		b.IsError = &isError
	}
	return b
}

// ResultText returns a tool_result's content as text: the string itself, or
// the text blocks of a block list joined by newlines (other blocks as
// "[type]"); "" for content that is neither. Content is read as
// encoding/json would read it into a string, else into []Block, without
// its reflection: a list's blocks are decoded as UnmarshalJSON decodes
// them, and a list with a block that does not decode has no text.
func (b Block) ResultText() string {
	c := b.Content
	i := jsonscan.SkipSpace(c, 0)
	j := len(c)
	for j > i && (c[j-1] == ' ' || c[j-1] == '\t' || c[j-1] == '\n' || c[j-1] == '\r') {
		j--
	}
	c = c[i:j]
	if len(c) == 0 {
		return ""
	}
	switch c[0] {
	case '"':
		end, f, err := jsonscan.String(c, 0)
		if err != nil || end != len(c) {
			return ""
		}
		s, err := jsonscan.Unquote(c, f)
		if err != nil {
			return ""
		}
		return s
	case '[':
		if !jsonscan.Valid(c) {
			return ""
		}
		var out []byte
		n := 0
		err := jsonscan.TrustedElements(c, func(val []byte) error {
			var blk Block
			if err := blk.decode(val, false); err != nil {
				return err
			}
			if n > 0 {
				out = append(out, '\n')
			}
			n++
			if blk.Type == BlockText {
				out = append(out, blk.Text...)
			} else {
				out = append(out, "["+blk.Type+"]"...)
			}
			return nil
		})
		if err != nil {
			return ""
		}
		return string(out)
	case 'n':
		return "" // null, or not JSON
	}
	return "" // a number, a boolean, an object, or not JSON
}

// Field names handled by Block's typed fields.
var blockKnown = map[string]bool{
	"type": true, "text": true, "id": true, "name": true, "input": true,
	"tool_use_id": true, "content": true, "is_error": true, "thinking": true,
}

// UnmarshalJSON decodes a block, keeping unknown fields.
func (b *Block) UnmarshalJSON(data []byte) error {
	return b.decode(data, true)
}

// MarshalJSON encodes a block deterministically: type first, then the typed
// fields in the API's order, then unknown fields sorted by name. Equal
// blocks always produce equal bytes, which keeps prompt-cache prefixes stable.
func (b Block) MarshalJSON() ([]byte, error) { return b.AppendJSON(nil), nil }

// AppendJSON appends the block's encoding, MarshalJSON's bytes, to dst.
// It appends keys already quoted rather than use a jsonw.Object, which
// would build the block in a buffer of its own, quote each key again and
// be copied into dst (the request body) after.
func (b Block) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonw.AppendString(dst, b.Type)
	switch b.Type {
	case BlockText:
		dst = appendStr(dst, `,"text":`, b.Text)
	case BlockThinking:
		dst = appendStr(dst, `,"thinking":`, b.Thinking)
	}
	if b.Type != BlockText && b.Text != "" {
		dst = appendStr(dst, `,"text":`, b.Text)
	}
	if b.Type != BlockThinking && b.Thinking != "" {
		dst = appendStr(dst, `,"thinking":`, b.Thinking)
	}
	if b.ID != "" {
		dst = appendStr(dst, `,"id":`, b.ID)
	}
	if b.Name != "" {
		dst = appendStr(dst, `,"name":`, b.Name)
	}
	if b.Input != nil {
		dst = jsonw.AppendRaw(append(dst, `,"input":`...), b.Input)
	} else if b.Type == BlockToolUse {
		dst = append(dst, `,"input":{}`...)
	}
	if b.ToolUseID != "" {
		dst = appendStr(dst, `,"tool_use_id":`, b.ToolUseID)
	}
	if b.Content != nil {
		dst = jsonw.AppendRaw(append(dst, `,"content":`...), b.Content)
	}
	if b.IsError != nil {
		dst = append(dst, `,"is_error":`...)
		dst = strconv.AppendBool(dst, *b.IsError)
	}
	if len(b.Extra) == 1 {
		for k, v := range b.Extra { // the usual one: cache_control
			dst = appendField(dst, k, v)
		}
	} else if len(b.Extra) > 1 {
		for _, k := range slices.Sorted(maps.Keys(b.Extra)) {
			dst = appendField(dst, k, b.Extra[k])
		}
	}
	return append(dst, '}')
}

func appendStr(dst []byte, key, s string) []byte {
	return jsonw.AppendString(append(dst, key...), s)
}

// appendField appends ,"k":v with v compacted.
func appendField(dst []byte, k string, v json.RawMessage) []byte {
	dst = jsonw.AppendString(append(dst, ','), k)
	return jsonw.AppendRaw(append(dst, ':'), v)
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
