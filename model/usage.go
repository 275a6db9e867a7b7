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
func (m Message) MarshalJSON() ([]byte, error) { return m.AppendJSON(nil), nil }

// AppendJSON appends the message's encoding, MarshalJSON's bytes, to dst:
// its role and its blocks' own encodings, which are compact already.
func (m Message) AppendJSON(dst []byte) []byte {
	dst = jsonw.AppendString(append(dst, `{"role":`...), m.Role)
	if m.Content == nil {
		return append(dst, `,"content":null}`...)
	}
	dst = append(dst, `,"content":[`...)
	for i := range m.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = m.Content[i].AppendJSON(dst)
	}
	return append(dst, "]}"...)
}
