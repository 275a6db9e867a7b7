package model

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairn-dev/cairn/internal/jsonscan"
)

// DecodeContentShared is DecodeContent for valid JSON that outlives the
// blocks, such as a slice of a transcript line already checked: raw is not
// checked again, and the blocks' raw fields (Input, Content, Extra) are
// slices of raw instead of copies, so raw must not change afterwards.
// Transcript entries, which keep the line they were read from, decode
// their content this way.
func DecodeContentShared(raw json.RawMessage) ([]Block, error) {
	return decodeContent(raw, false)
}

// decodeContent decodes content; with copyRaw the input is checked and
// copied, without it trusted and shared.
func decodeContent(raw json.RawMessage, copyRaw bool) ([]Block, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		end, _, err := jsonscan.String(raw, 0)
		if err != nil || jsonscan.SkipSpace(raw, end) != len(raw) {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("message content: %w", err)
			}
			return []Block{TextBlock(s)}, nil
		}
		s, err := jsonscan.Unquote(raw[:end], jsonscan.StringFlags(raw[:end]))
		if err != nil {
			return nil, fmt.Errorf("message content: %w", err)
		}
		return []Block{TextBlock(s)}, nil
	}
	blocks := []Block{}
	each := func(val []byte) error {
		blocks = append(blocks, Block{})
		return blocks[len(blocks)-1].decode(val, copyRaw)
	}
	// Called directly, not through a variable, neither function keeps
	// each: what it holds stays on the stack.
	var err error
	if copyRaw {
		err = jsonscan.Elements(raw, each)
	} else {
		err = jsonscan.TrustedElements(raw, each)
	}
	if err != nil {
		if err == jsonscan.ErrNotArray {
			// Say it as encoding/json does.
			var blocks []Block
			err = json.Unmarshal(raw, &blocks)
		}
		return nil, fmt.Errorf("message content: %w", err)
	}
	return blocks, nil
}

// decode fills b from one block object, with the field rules of
// UnmarshalJSON. With copyRaw data is checked and the raw fields are
// copies of it; without, data is trusted and shared.
func (b *Block) decode(data []byte, copyRaw bool) error {
	*b = Block{}
	if jsonscan.IsNull(data) {
		return nil
	}
	keep := func(v []byte) json.RawMessage {
		if copyRaw {
			return slices.Clone(v)
		}
		return v
	}
	// The last of repeated keys counts, as in the map UnmarshalJSON
	// reads: string fields are decoded once all members are seen.
	var strs [6][]byte
	dsts := [6]*string{&b.Type, &b.Text, &b.ID, &b.Name, &b.ToolUseID, &b.Thinking}
	var isError []byte
	member := func(key []byte, f jsonscan.Flags, val []byte) error {
		k, err := jsonscan.KeyText(key, f)
		if err != nil {
			return err
		}
		switch string(k) { // the conversion does not allocate

		case "type":
			strs[0] = val
		case "text":
			strs[1] = val
		case "id":
			strs[2] = val
		case "name":
			strs[3] = val
		case "tool_use_id":
			strs[4] = val
		case "thinking":
			strs[5] = val
		case "input":
			b.Input = keep(val)
		case "content":
			b.Content = keep(val)
		case "is_error":
			isError = val
		default:
			if b.Extra == nil {
				b.Extra = make(map[string]json.RawMessage)
			}
			b.Extra[string(k)] = keep(val)
		}
		return nil
	}
	var err error
	if copyRaw {
		err = jsonscan.Members(data, member)
	} else {
		err = jsonscan.TrustedMembers(data, member)
	}
	if err != nil {
		if err == jsonscan.ErrNotObject {
			var fields map[string]json.RawMessage
			err = json.Unmarshal(data, &fields)
		}
		return err
	}
	for i, val := range strs {
		if val == nil || jsonscan.IsNull(val) {
			continue
		}
		if i == 0 {
			if t, ok := blockTypes[string(val)]; ok {
				b.Type = t
				continue
			}
		}
		if val[0] == '"' {
			if s, err := jsonscan.Unquote(val, jsonscan.StringFlags(val)); err == nil {
				*dsts[i] = s
				continue
			}
		}
		var s string
		err := json.Unmarshal(val, &s) // fails: say why as encoding/json does
		return fmt.Errorf("content block field %q: %w", blockStrKeys[i], err)
	}
	if isError != nil && !jsonscan.IsNull(isError) {
		var v bool
		if err := json.Unmarshal(isError, &v); err != nil {
			return fmt.Errorf("content block field \"is_error\": %w", err)
		}
		b.IsError = &v
	}
	return nil
}

// blockTypes maps the literals of the known block types to the types, so
// that decoded blocks share their Type strings (one allocation less a
// block, and comparisons with the constants that need not read memory
// elsewhere).
var blockTypes = map[string]string{
	`"text"`: BlockText, `"tool_use"`: BlockToolUse, `"tool_result"`: BlockToolResult, `"thinking"`: BlockThinking,
	`"redacted_thinking"`: BlockRedactedThinking, `"image"`: BlockImage, `"document"`: BlockDocument,
}

var blockStrKeys = [6]string{"type", "text", "id", "name", "tool_use_id", "thinking"}
