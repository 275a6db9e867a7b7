package model

import (
	"encoding/json"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// Usage is the token accounting of one API response.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// Plus returns the usage of two responses added up, field by field.
func (u Usage) Plus(v Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
	}
}

// ContextTokens is how much of the context window the response occupied:
// everything read (fresh, cached and newly cached) plus what was written.
func (u Usage) ContextTokens() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
}

// UnmarshalJSON decodes a Message whose content is either a string (as
// Claude Code stores typed prompts) or a list of blocks.
func (m *Message) UnmarshalJSON(data []byte) error {
	var wire struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	blocks, err := DecodeContent(wire.Content)
	if err != nil {
		return err
	}
	*m = Message{Role: wire.Role, Content: blocks}
	return nil
}

// DecodeContent decodes message content given as a string or a block list.
// An absent or null content is an empty list.
func DecodeContent(raw json.RawMessage) ([]Block, error) {
	return decodeContent(raw, true)
}

// MarshalJSON encodes a Message with its content as a block list.
func (m Message) MarshalJSON() ([]byte, error) {
	// The blocks' own encodings are compact already: splice them in
	// rather than have encoding/json check and copy each again.
	content := []byte("null")
	if m.Content != nil {
		content = append(content[:0:0], '[')
		for i, b := range m.Content {
			if i > 0 {
				content = append(content, ',')
			}
			enc, err := b.MarshalJSON()
			if err != nil {
				return nil, err
			}
			content = append(content, enc...)
		}
		content = append(content, ']')
	}
	var w jsonw.Object
	w.Str("role", m.Role)
	w.Compacted("content", content) // made of compact encodings
	return w.Bytes(), nil
}
