package model

import (
	"encoding/json"
	"testing"
)

// TestAppendJSON: a block's and a message's encoding, appended after what
// the buffer holds, is MarshalJSON's — the typed fields in the API's
// order, unknown ones sorted, raw JSON compacted and invalid raw JSON
// null — whatever the block holds.
func TestAppendJSON(t *testing.T) {
	isErr := false
	for _, tc := range []struct {
		b    Block
		want string
	}{
		{TextBlock("a \"quoted\" <tag>\n"), `{"type":"text","text":"a \"quoted\" <tag>\n"}`},
		{Block{Type: BlockToolUse, ID: "t", Name: "Read"}, `{"type":"tool_use","id":"t","name":"Read","input":{}}`},
		{Block{Type: BlockToolUse, ID: "t", Name: "Read", Input: json.RawMessage(` { "a" : 1 } `)}, `{"type":"tool_use","id":"t","name":"Read","input":{"a":1}}`},
		{Block{Type: BlockToolUse, ID: "t", Name: "Read", Input: json.RawMessage{}}, `{"type":"tool_use","id":"t","name":"Read","input":null}`},
		{Block{Type: BlockToolResult, ToolUseID: "t", Content: json.RawMessage(`"out\u00e9"`), IsError: &isErr}, `{"type":"tool_result","tool_use_id":"t","content":"out\u00e9","is_error":false}`},
		{Block{Type: BlockToolResult, ToolUseID: "t", Content: json.RawMessage(`"out" `)}, `{"type":"tool_result","tool_use_id":"t","content":"out"}`},
		{Block{Type: BlockToolResult, ToolUseID: "t", Content: json.RawMessage(`"unterminated`)}, `{"type":"tool_result","tool_use_id":"t","content":null}`},
		{Block{Type: BlockToolResult, ToolUseID: "t", Content: json.RawMessage(`[ {"type":"text","text":"x"} ]`)}, `{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}`},
		{Block{Type: BlockThinking, Thinking: "hm", Text: "odd", Extra: map[string]json.RawMessage{"signature": json.RawMessage(`"s"`), "cache_control": json.RawMessage(`{"type": "ephemeral"}`)}},
			`{"type":"thinking","thinking":"hm","text":"odd","cache_control":{"type":"ephemeral"},"signature":"s"}`},
		{Block{Type: BlockImage, Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"base64"}`)}}, `{"type":"image","source":{"type":"base64"}}`},
	} {
		got, _ := tc.b.MarshalJSON()
		if string(got) != tc.want {
			t.Errorf("MarshalJSON = %s\n want %s", got, tc.want)
		}
		if got := tc.b.AppendJSON([]byte("prefix")); string(got) != "prefix"+tc.want {
			t.Errorf("AppendJSON = %s", got)
		}
		m := Message{Role: RoleUser, Content: []Block{tc.b, TextBlock("x")}}
		want := `{"role":"user","content":[` + tc.want + `,{"type":"text","text":"x"}]}`
		if got, _ := m.MarshalJSON(); string(got) != want {
			t.Errorf("message MarshalJSON = %s\n want %s", got, want)
		}
		if got := m.AppendJSON([]byte("[")); string(got) != "["+want {
			t.Errorf("message AppendJSON = %s", got)
		}
	}
	if got, _ := (Message{Role: RoleAssistant}).MarshalJSON(); string(got) != `{"role":"assistant","content":null}` {
		t.Errorf("no content: %s", got)
	}
}
