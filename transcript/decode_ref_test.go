package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// refWire is how lines were decoded with encoding/json before DecodeEntry
// scanned them: the reference the fast decoder must agree with.
type refWire struct {
	Type                      string          `json:"type"`
	Subtype                   string          `json:"subtype"`
	UUID                      string          `json:"uuid"`
	ParentUUID                *string         `json:"parentUuid"`
	LogicalParentUUID         *string         `json:"logicalParentUuid"`
	IsSidechain               bool            `json:"isSidechain"`
	IsMeta                    bool            `json:"isMeta"`
	IsCompactSummary          bool            `json:"isCompactSummary"`
	IsVisibleInTranscriptOnly bool            `json:"isVisibleInTranscriptOnly"`
	IsAPIErrorMessage         bool            `json:"isApiErrorMessage"`
	PromptID                  string          `json:"promptId"`
	SessionID                 string          `json:"sessionId"`
	Timestamp                 string          `json:"timestamp"`
	CWD                       string          `json:"cwd"`
	Version                   string          `json:"version"`
	GitBranch                 string          `json:"gitBranch"`
	UserType                  string          `json:"userType"`
	Entrypoint                string          `json:"entrypoint"`
	Slug                      string          `json:"slug"`
	AgentID                   string          `json:"agentId"`
	PermissionMode            string          `json:"permissionMode"`
	PromptSource              string          `json:"promptSource"`
	Message                   json.RawMessage `json:"message"`
	RequestID                 string          `json:"requestId"`
	ToolUseResult             json.RawMessage `json:"toolUseResult"`
	SourceToolAssistantUUID   string          `json:"sourceToolAssistantUUID"`
	Attachment                json.RawMessage `json:"attachment"`
	Content                   json.RawMessage `json:"content"`
	Level                     string          `json:"level"`
	CompactMetadata           json.RawMessage `json:"compactMetadata"`
	SnipMetadata              json.RawMessage `json:"snipMetadata"`
	LeafUUID                  string          `json:"leafUuid"`
	LastPrompt                string          `json:"lastPrompt"`
}

// refDecode decodes a line with encoding/json into refWire's fields.
func refDecode(line []byte) (Entry, error) {
	line = bytes.TrimSpace(line)
	var w refWire
	if err := json.Unmarshal(line, &w); err != nil {
		return Entry{}, err
	}
	e := Entry{
		Type: w.Type, Subtype: w.Subtype, UUID: w.UUID,
		IsSidechain: w.IsSidechain, IsMeta: w.IsMeta,
		IsCompactSummary: w.IsCompactSummary, IsVisibleInTranscriptOnly: w.IsVisibleInTranscriptOnly,
		IsAPIErrorMessage: w.IsAPIErrorMessage,
		PromptID:          w.PromptID, SessionID: w.SessionID, Timestamp: w.Timestamp,
		CWD: w.CWD, Version: w.Version, GitBranch: w.GitBranch, UserType: w.UserType,
		Entrypoint: w.Entrypoint, Slug: w.Slug, AgentID: w.AgentID, PermissionMode: w.PermissionMode,
		PromptSource: w.PromptSource, Message: nullToNil(w.Message), RequestID: w.RequestID,
		ToolUseResult: nullToNil(w.ToolUseResult), SourceToolAssistantUUID: w.SourceToolAssistantUUID,
		Attachment: nullToNil(w.Attachment), Content: nullToNil(w.Content), Level: w.Level,
		CompactMetadata: nullToNil(w.CompactMetadata), SnipMetadata: nullToNil(w.SnipMetadata),
		LeafUUID: w.LeafUUID, LastPrompt: w.LastPrompt,
	}
	if w.ParentUUID != nil {
		e.ParentUUID = *w.ParentUUID
	}
	if w.LogicalParentUUID != nil {
		e.LogicalParentUUID = *w.LogicalParentUUID
	}
	return e, nil
}

// FuzzDecodeEntryMatchesJSON checks the scanning decoder against
// encoding/json: the same lines accepted, the same fields, the same
// unknown keys.
func FuzzDecodeEntryMatchesJSON(f *testing.F) {
	sample, _ := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	for _, line := range bytes.Split(sample, []byte("\n"))[:40] {
		f.Add(line)
	}
	for _, s := range []string{
		`{"type":"x","parentUuid":null,"uuid":"u","extra":{"a":[1,"<b>"]}}`,
		`{"type":"user","message":null,"content":null}`,
		`{"Type":"a","type":"b","TYPE":"c","parentuuid":"p","UUID":"\u0075"}`,
		`{"type":"a","uuid":7}`, `{"type":"a","isMeta":"yes"}`, `{"type":"a","parentUuid":"x","parentUuid":null}`,
		`{"type":"a","\u0074ype":"b","caf\u00e9":1,"x":"\ud800"}`, `{"type":"a"} x`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, gerr := DecodeEntry(line)
		want, werr := refDecode(line)
		if werr == nil && want.Type == "" {
			werr = errNoType
		}
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("DecodeEntry(%q): error %v, encoding/json's %v", line, gerr, werr)
		}
		if gerr != nil {
			return
		}
		opts := []cmp.Option{cmpopts.IgnoreUnexported(Entry{}), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Fatalf("DecodeEntry(%q) differs from encoding/json (-json +scan):\n%s", line, diff)
		}
		var all map[string]json.RawMessage
		_ = json.Unmarshal(line, &all)
		for k := range all {
			if knownFields[k] || knownLower[toLowerASCII(k)] != "" {
				delete(all, k)
			}
		}
		unknown := got.Unknown()
		if len(all) == 0 && len(unknown) == 0 {
			return
		}
		if diff := cmp.Diff(all, unknown, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Unknown(%q) differs (-json +scan):\n%s", line, diff)
		}
	})
}

var errNoType = json.Unmarshal([]byte(`x`), new(any))

func toLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// TestDecodeUsageAgreesWithEncodingJSON: a response's usage decodes as
// encoding/json decodes it, through a line DecodeEntry checked (the fast
// path) and without (json.Unmarshal).
func TestDecodeUsageAgreesWithEncodingJSON(t *testing.T) {
	usages := []string{
		`{"input_tokens":3,"output_tokens":12,"cache_creation_input_tokens":400,"cache_read_input_tokens":51234}`,
		`{"input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":0},"server_tool_use":{"web_search_requests":0},"service_tier":"standard"}`,
		`{"Input_Tokens":7,"OUTPUT_TOKENS":8}`,
		`{"input_tokens":null,"output_tokens":-4}`,
		`{"input_tokens":1,"input_tokens":2}`,
		`{"input_tokens":123456789012345678}`,
		`{"input_tokens":1234567890123456789}`,
		`{"input_tokens":99999999999999999999}`,
		`{"input_tokens":1.5}`,
		`{"input_tokens":2e3}`,
		`{"input_tokens":"3"}`,
		`{"input_tokens":true}`,
		`{ "input_tokens" : 5 , "output_tokens" : 6 }`,
		`{"input\u005ftokens":9}`,
		`{}`,
	}
	for _, u := range usages {
		msg := `{"id":"msg_1","role":"assistant","content":[],"usage":` + u + `}`
		var wantUsage struct {
			Usage *struct {
				InputTokens              int64 `json:"input_tokens"`
				OutputTokens             int64 `json:"output_tokens"`
				CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
				CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			} `json:"usage"`
		}
		wantErr := json.Unmarshal([]byte(`{"usage":`+u+`}`), &wantUsage) != nil
		line := `{"type":"assistant","uuid":"a","parentUuid":null,"message":` + msg + `}`
		e, err := DecodeEntry([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		for _, trusted := range []bool{true, false} {
			got := e
			if !trusted {
				got.cache = nil // decoded afresh, with json.Unmarshal
			}
			m, _, err := got.DecodeMessage()
			if (err != nil) != wantErr {
				t.Errorf("%s (checked line %v): error %v, encoding/json's error %v", u, trusted, err, wantErr)
				continue
			}
			if err != nil {
				continue
			}
			w := wantUsage.Usage
			if m.Usage == nil || m.Usage.InputTokens != w.InputTokens || m.Usage.OutputTokens != w.OutputTokens ||
				m.Usage.CacheCreationInputTokens != w.CacheCreationInputTokens || m.Usage.CacheReadInputTokens != w.CacheReadInputTokens {
				t.Errorf("%s (checked line %v): usage %+v, encoding/json's %+v", u, trusted, m.Usage, *w)
			}
		}
	}
}

// FuzzDecodeMessageShared checks a message decoded from a checked line
// (trusted: its content decoded as it is read, its blocks sharing the
// line) against the same message decoded from unchecked bytes, whose
// content model.DecodeContent decodes as encoding/json does: the same
// errors, the same message.
func FuzzDecodeMessageShared(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`, `{"role":"user","content":null}`, `{"role":"user","content":[]}`,
		`{"id":"m","role":"assistant","model":"x","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"Read","input":{"p":1}}],"stop_reason":"tool_use","usage":{"input_tokens":3}}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r","is_error":true}]}`,
		`{"content":[{"type":"text","text":1}],"content":[{"type":"text","text":"b"}]}`,
		`{"content":[{"type":"text","text":"a"}],"CONTENT":"s"}`, `{"content":[{"type":"text","text":"a"}],"content":null}`,
		`{"content":[{"type":"text","text":"a"}],"content":7}`, `{"content":[null,{"x":[1,{"y":"z"}]}]}`,
		`{"content":[{"type":"text","text":"a"},1]}`, `{"content":{"type":"text"}}`, `{"Content":[{"type":"text","text":"\u00e9\ud800"}]}`,
		`{"role":1,"content":[]}`, `{"content" : [ { "type" : "text" , "text" : "a" } , { } ] , "role" : "user" }`, `[]`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		e := &Entry{Type: "user", UUID: "u"}
		want, wok, werr := decodeMessage(e, raw, false)
		got, gok, gerr := decodeMessage(e, raw, true)
		if (werr == nil) != (gerr == nil) || wok != gok {
			t.Fatalf("decodeMessage(%q): shared %v %v, checked %v %v", raw, gok, gerr, wok, werr)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("decodeMessage(%q) (-checked +shared):\n%s", raw, diff)
		}
	})
}

// FuzzDecodeEntryEager checks a line decoded with its message checked and
// decoded in one pass (eager, as a load does) against the same line
// decoded without: the same lines accepted with the same error, the same
// entry, the same message and error from DecodeMessage.
func FuzzDecodeEntryEager(f *testing.F) {
	sample, _ := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	for _, line := range bytes.Split(sample, []byte("\n"))[:40] {
		f.Add(line)
	}
	for _, m := range []string{
		`{"role":"user","content":"hi"}`, `{"role":"user","content":[]}`, `null`, `7`, `{}`,
		`{"id":"m","role":"assistant","content":[{"type":"text","text":"a\n\u00e9"},{"type":"tool_use","id":"t","name":"Read","input":{"p":[1,{"q":null}]}}],"usage":{"input_tokens":3,"output_tokens":1.5}}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r\"\\","is_error":true,"cache_control":{"type":"ephemeral"}}]}`,
		`{"content":[{"type":"text","text":1}],"content":[{"type":"text","text":"b"}]}`, `{"content":[{"type":"text","text":"a"}],"CONTENT":"s"}`,
		`{"content":[null,{"x":[1,{"y":"z"}]}],"Content":[1]}`, `{"content":[{"type":"text","text":"a` + "\x01" + `"}]}`,
		`{"content":[{"type":"text","text":"a\x"}]}`, `{"content":[{"type":"text" "text":"a"}]}`, `{"content":[{"type":"text","text":"a"},]}`,
		`{"content":[[[[1]]]],"role":"user"}`, `{"role":"user","content":[{"type":"text","text":"\ud800"}]} `,
	} {
		f.Add([]byte(`{"type":"user","uuid":"u","message":` + m + `,"isMeta":false}`))
		f.Add([]byte(`{"message":` + m + `,"type":"assistant","message":` + m + `}`))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want, werr := decodeEntry(line, &arena{}, nil, 0, false)
		got, gerr := decodeEntry(line, &arena{}, nil, 0, true)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("decodeEntry(%q): eager error %v, else %v", line, gerr, werr)
		}
		if werr != nil {
			return
		}
		opts := []cmp.Option{cmpopts.IgnoreUnexported(Entry{}), cmpopts.EquateEmpty()}
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Fatalf("decodeEntry(%q) (-else +eager):\n%s", line, diff)
		}
		wm, wok, werr := want.DecodeMessage()
		gm, gok, gerr := got.DecodeMessage()
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || wok != gok {
			t.Fatalf("DecodeMessage of %q: eager %v %v, else %v %v", line, gok, gerr, wok, werr)
		}
		if diff := cmp.Diff(wm, gm, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("DecodeMessage of %q (-else +eager):\n%s", line, diff)
		}
		for _, b := range gm.Content {
			for _, raw := range [][]byte{b.Input, b.Content} {
				if len(raw) > 0 && !within(raw, got.bodyBytes()) {
					t.Fatalf("DecodeMessage of %q: a block's raw field is not in the entry's body", line)
				}
			}
		}
	})
}

// TestEntrySize: an Entry fits the 576-byte size class of Go's allocator.
// A load keeps one per line (about 100,000 for a 400 MB transcript), so
// the next class, 640 bytes, would cost 6 MB there.
func TestEntrySize(t *testing.T) {
	if size := unsafe.Sizeof(Entry{}); size > 576 {
		t.Errorf("an Entry takes %d bytes, more than the 576 of its size class", size)
	}
}
