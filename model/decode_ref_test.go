package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// refBlock is how blocks were decoded before the scanner: the reference.
func refBlock(b *Block, data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	*b = Block{}
	str := func(key string, dst *string) error {
		if raw, ok := fields[key]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, dst); err != nil {
				return fmt.Errorf("content block field %q: %w", key, err)
			}
		}
		return nil
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"type", &b.Type}, {"text", &b.Text}, {"id", &b.ID}, {"name", &b.Name}, {"tool_use_id", &b.ToolUseID}, {"thinking", &b.Thinking}} {
		if err := str(f.key, f.dst); err != nil {
			return err
		}
	}
	if raw, ok := fields["input"]; ok {
		b.Input = slices.Clone(raw)
	}
	if raw, ok := fields["content"]; ok {
		b.Content = slices.Clone(raw)
	}
	if raw, ok := fields["is_error"]; ok && !isNull(raw) {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("content block field \"is_error\": %w", err)
		}
		b.IsError = &v
	}
	for k, v := range fields {
		if !blockKnown[k] {
			if b.Extra == nil {
				b.Extra = make(map[string]json.RawMessage)
			}
			b.Extra[k] = slices.Clone(v)
		}
	}
	return nil
}

// refContent decodes content as DecodeContent did with encoding/json.
func refContent(raw json.RawMessage) ([]Block, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Block{TextBlock(s)}, nil
	}
	var wire []json.RawMessage
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, err
	}
	blocks := []Block{}
	for _, w := range wire {
		var b Block
		if err := refBlock(&b, w); err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// FuzzDecodeContentMatchesJSON checks the scanning decoder against the
// encoding/json one it replaced: same errors, same blocks.
func FuzzDecodeContentMatchesJSON(f *testing.F) {
	for _, s := range []string{
		`"hi"`, `"a\nb\u00e9"`, `[]`, `null`, `[null]`, `[1]`, `{}`, `[{"type":"text","text":"x"}]`,
		`[{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"/a"}}]`,
		`[{"tool_use_id":"t","type":"tool_result","content":[{"type":"text","text":"r"}],"is_error":false}]`,
		`[{"type":"thinking","thinking":"hm","signature":"sig"}]`, `[{"type":"text","text":"a","text":null}]`,
		`[{"type":1,"type":"text"}]`, `[{"is_error":"no"}]`, `[{"input":null,"cache_control":{"type":"ephemeral"}}]`,
		`[{"\u0074ype":"text"}] `, `[{"type":"text"},]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := refContent(raw)
		got, gerr := DecodeContent(raw)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("DecodeContent(%q): error %v, encoding/json's %v", raw, gerr, werr)
		}
		if werr != nil {
			return
		}
		// The shared decoder trusts its input: compare it on valid JSON.
		shared, serr := DecodeContentShared(raw)
		if serr != nil {
			t.Fatalf("DecodeContentShared(%q): %v", raw, serr)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("DecodeContent(%q) (-json +scan):\n%s", raw, diff)
		}
		if diff := cmp.Diff(got, shared, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("DecodeContentShared(%q) (-copied +shared):\n%s", raw, diff)
		}
		if (want == nil) != (got == nil) {
			t.Fatalf("DecodeContent(%q) = %#v, encoding/json's %#v", raw, got, want)
		}
	})
}

// refResultText is how ResultText read content before the scanner: with
// encoding/json, into a string, else into []Block.
func refResultText(content json.RawMessage) string {
	if len(content) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []Block
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var out []byte
	for i, c := range blocks {
		if i > 0 {
			out = append(out, '\n')
		}
		switch c.Type {
		case BlockText:
			out = append(out, c.Text...)
		default:
			out = append(out, "["+c.Type+"]"...)
		}
	}
	return string(out)
}

// FuzzResultTextMatchesJSON checks ResultText against the encoding/json
// reading it replaced.
func FuzzResultTextMatchesJSON(f *testing.F) {
	for _, s := range []string{
		``, ` `, `"hi"`, ` "a\nb\u00e9\ud800" `, "\"bad \xff utf8\"", `"a""b"`, `"open`, `null`, ` null `, `nul`, `1`, `true`, `{}`,
		`[]`, `[null]`, `[1]`, `["x"]`, `[{"type":"text","text":"x"},{"type":"image","source":{}}]`, `[{"type":"text","text":"a"},]`,
		`[{"type":"text","text":"a","text":"b"}]`, `[{"type":1}]`, `[{"TYPE":"text","Text":"case"}]`, "\f\"x\"", `[{"type":"text"}] x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := (Block{Content: raw}).ResultText(), refResultText(raw); got != want {
			t.Fatalf("ResultText(%q) = %q, encoding/json's %q", raw, got, want)
		}
	})
}
