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
	var err error
	if !copyRaw {
		if i := jsonscan.SkipSpace(raw, 0); i < len(raw) && raw[i] == '[' {
			blocks, _, err := DecodeContentSharedAt(raw, i)
			return blocks, err
		}
		err = jsonscan.ErrNotArray
	} else {
		blocks := []Block{}
		err = jsonscan.Elements(raw, func(val []byte) error {
			blocks = append(blocks, Block{})
			return blocks[len(blocks)-1].decode(val, true)
		})
		if err == nil {
			return blocks, nil
		}
	}
	if err == jsonscan.ErrNotArray {
		// Say it as encoding/json does.
		var blocks []Block
		err = json.Unmarshal(raw, &blocks)
	}
	return nil, fmt.Errorf("message content: %w", err)
}

// DecodeContentSharedAt is DecodeContentShared for the content value that
// starts at raw[i], in raw that holds more (a message): it returns the
// index just past the value too, also with an error. An array of blocks,
// the content of most messages, is decoded as it is read: its bytes are
// gone over once, not once to find where the value ends and again to
// decode it.
func DecodeContentSharedAt(raw []byte, i int) (blocks []Block, end int, err error) {
	if i >= len(raw) || raw[i] != '[' {
		end = jsonscan.Skip(raw, i)
		blocks, err = decodeContent(raw[i:end:end], false)
		return blocks, end, err
	}
	blocks = []Block{}
	// Called directly, not through a variable, TrustedArray keeps nothing
	// of the function: what it holds stays on the stack.
	end, err = jsonscan.TrustedArray(raw, i, func(raw []byte, i int) (int, error) {
		blocks = append(blocks, Block{})
		return blocks[len(blocks)-1].decodeAt(raw, i)
	})
	if err != nil {
		return nil, jsonscan.Skip(raw, i), fmt.Errorf("message content: %w", err)
	}
	return blocks, end, nil
}

// DecodeContentCheckedAt is DecodeContentSharedAt for raw that was not
// checked: it checks the content value that starts at raw[i] as
// jsonscan.CheckedValue checks a value nested depth deep while it
// decodes it, in one pass. Its error is either why raw is not JSON there
// or why the content does not decode; a caller that must tell which
// checks raw again (jsonscan.CheckedValue).
func DecodeContentCheckedAt(raw []byte, i, depth int) (blocks []Block, end int, err error) {
	if i >= len(raw) || raw[i] != '[' {
		if end, err = jsonscan.CheckedValue(raw, i, depth); err != nil {
			return nil, 0, err
		}
		blocks, err = decodeContent(raw[i:end:end], false)
		return blocks, end, err
	}
	blocks = []Block{}
	end, err = jsonscan.CheckedArray(raw, i, depth+1, func(raw []byte, i int) (int, error) {
		blocks = append(blocks, Block{})
		return blocks[len(blocks)-1].checkAt(raw, i, depth+1)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("message content: %w", err)
	}
	return blocks, end, nil
}

// checkAt is decodeAt for a block value, nested depth deep, that was not
// checked: it checks it as it decodes it.
func (b *Block) checkAt(data []byte, i, depth int) (int, error) {
	if data[i] != '{' {
		end, err := jsonscan.CheckedValue(data, i, depth)
		if err != nil {
			return 0, err
		}
		return end, b.decode(data[i:end:end], false)
	}
	*b = Block{}
	var fs blockFields
	end, err := jsonscan.CheckedObject(data, i, depth+1, func(key []byte, f jsonscan.Flags, data []byte, i int) (int, error) {
		end, err := jsonscan.CheckedValue(data, i, depth+1)
		if err != nil {
			return 0, err
		}
		return end, fs.member(b, key, f, data[i:end:end], false)
	})
	if err != nil {
		return 0, err
	}
	return end, fs.finish(b)
}

// decodeAt is decode for the trusted block value that starts at data[i]:
// it returns the index just past it.
func (b *Block) decodeAt(data []byte, i int) (int, error) {
	if data[i] != '{' { // null, or not a block: decode says what
		end := jsonscan.Skip(data, i)
		return end, b.decode(data[i:end:end], false)
	}
	*b = Block{}
	var fs blockFields
	end, err := jsonscan.TrustedObject(data, i, func(key []byte, f jsonscan.Flags, data []byte, i int) (int, error) {
		end := jsonscan.Skip(data, i)
		return end, fs.member(b, key, f, data[i:end:end], false)
	})
	if err != nil {
		return 0, err
	}
	return end, fs.finish(b)
}

// decode fills b from one block object, with the field rules of
// UnmarshalJSON. With copyRaw data is checked and the raw fields are
// copies of it; without, data is trusted and shared.
func (b *Block) decode(data []byte, copyRaw bool) error {
	*b = Block{}
	if jsonscan.IsNull(data) {
		return nil
	}
	var fs blockFields
	member := func(key []byte, f jsonscan.Flags, val []byte) error {
		return fs.member(b, key, f, val, copyRaw)
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
	return fs.finish(b)
}

// blockFields holds the members of a block being decoded that are
// decoded once all are seen: the last of repeated keys counts, as in the
// map UnmarshalJSON reads.
type blockFields struct {
	strs    [6][]byte // of blockStrKeys
	isError []byte
}

// member takes one member of b's object; the raw fields are set at once,
// to copies of val with copyRaw, else to val.
func (fs *blockFields) member(b *Block, key []byte, f jsonscan.Flags, val []byte, copyRaw bool) error {
	k, err := jsonscan.KeyText(key, f)
	if err != nil {
		return err
	}
	keep := func(v []byte) json.RawMessage {
		if copyRaw {
			return slices.Clone(v)
		}
		return v
	}
	switch string(k) { // the conversion does not allocate
	case "type":
		fs.strs[0] = val
	case "text":
		fs.strs[1] = val
	case "id":
		fs.strs[2] = val
	case "name":
		fs.strs[3] = val
	case "tool_use_id":
		fs.strs[4] = val
	case "thinking":
		fs.strs[5] = val
	case "input":
		b.Input = keep(val)
	case "content":
		b.Content = keep(val)
	case "is_error":
		fs.isError = val
	default:
		if b.Extra == nil {
			b.Extra = make(map[string]json.RawMessage)
		}
		b.Extra[string(k)] = keep(val)
	}
	return nil
}

// finish decodes the fields member kept into b.
func (fs *blockFields) finish(b *Block) error {
	dsts := [6]*string{&b.Type, &b.Text, &b.ID, &b.Name, &b.ToolUseID, &b.Thinking}
	for i, val := range fs.strs {
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
	if fs.isError != nil && !jsonscan.IsNull(fs.isError) {
		var v bool
		switch string(fs.isError) { // the literals, without encoding/json's scanner
		case "true":
			v = true
		case "false":
		default:
			if err := json.Unmarshal(fs.isError, &v); err != nil {
				return fmt.Errorf("content block field \"is_error\": %w", err)
			}
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
