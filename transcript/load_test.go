package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

var update = flag.Bool("update", false, "rewrite golden files")

// script builds transcripts line by line in Claude Code's layout.
type script struct {
	lines []string
	n     int
	leaf  string
}

func (s *script) id() string {
	s.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.n)
}

func (s *script) add(parent string, fields map[string]any) string {
	id := s.id()
	fields["uuid"] = id
	if parent == "" {
		fields["parentUuid"] = nil
	} else {
		fields["parentUuid"] = parent
	}
	fields["sessionId"] = "sess"
	fields["timestamp"] = fmt.Sprintf("2026-11-30T10:00:%02d.000Z", s.n%60)
	fields["isSidechain"] = fields["isSidechain"] == true
	b, _ := json.Marshal(fields)
	s.lines = append(s.lines, string(b))
	s.leaf = id
	return id
}

func (s *script) raw(line string) { s.lines = append(s.lines, line) }

func (s *script) user(parent, text string) string {
	return s.add(parent, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// assistant writes one line per block of a response, chained, and returns
// the uuid of each line.
func (s *script) assistant(parent, msgID string, blocks ...map[string]any) []string {
	var ids []string
	for _, b := range blocks {
		parent = s.add(parent, map[string]any{"type": "assistant", "requestId": "req_" + msgID, "message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": "m",
			"content": []any{b}, "stop_reason": "tool_use",
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100},
		}})
		ids = append(ids, parent)
	}
	return ids
}

func (s *script) result(parent, toolUseID, content string) string {
	return s.add(parent, map[string]any{"type": "user", "sourceToolAssistantUUID": parent, "toolUseResult": map[string]any{"stdout": content},
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolUseID, "content": content}}}})
}

func (s *script) lastPrompt(leaf string) {
	s.raw(fmt.Sprintf(`{"type":"last-prompt","lastPrompt":"p","leafUuid":%q,"sessionId":"sess"}`, leaf))
}

func (s *script) bytes() []byte { return []byte(strings.Join(s.lines, "\n") + "\n") }

func text(t string) map[string]any { return map[string]any{"type": "text", "text": t} }
func toolUse(id, name string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{"x": id}}
}

func load(t *testing.T, b []byte, opts transcript.LoadOptions) *transcript.Conversation {
	t.Helper()
	n := 0
	if opts.NewUUID == nil {
		opts.NewUUID = func() string { n++; return fmt.Sprintf("repair-%d", n) }
	}
	c, err := transcript.Load(context.Background(), transcript.BytesSource(b), opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// summary renders messages compactly: one string per message.
func summary(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		var parts []string
		for _, b := range m.Content {
			switch b.Type {
			case model.BlockText:
				parts = append(parts, b.Text)
			case model.BlockToolUse:
				parts = append(parts, "use:"+b.ID)
			case model.BlockToolResult:
				p := "result:" + b.ToolUseID
				if b.IsError != nil && *b.IsError {
					p += "!"
				}
				parts = append(parts, p)
			default:
				parts = append(parts, b.Type)
			}
		}
		out = append(out, m.Role+": "+strings.Join(parts, " | "))
	}
	return out
}

func TestLoadChains(t *testing.T) {
	tests := []struct {
		name     string
		build    func(s *script) transcript.LoadOptions
		want     []string
		warnings []string // substrings, in order
	}{
		{
			name: "linear",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "hello")
				a := s.assistant(u, "m1", text("hi"))
				s.lastPrompt(a[0])
				return transcript.LoadOptions{}
			},
			want: []string{"user: hello", "assistant: hi"},
		},
		{
			name: "parallel tool calls re-attach the side-branch result",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "go")
				a := s.assistant(u, "m1", text("two calls"), toolUse("A", "Bash"), toolUse("B", "Read"))
				s.result(a[1], "A", "out A") // hangs off A: off the chain
				rb := s.result(a[2], "B", "out B")
				f := s.assistant(rb, "m2", text("done"))
				s.lastPrompt(f[0])
				return transcript.LoadOptions{}
			},
			want: []string{"user: go", "assistant: two calls | use:A | use:B", "user: result:A | result:B", "assistant: done"},
		},
		{
			name: "a compact boundary hides history and splices the preserved tail",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "old question")
				a := s.assistant(u, "m1", text("old answer"))
				u2 := s.user(a[0], "kept question")
				kept := s.assistant(u2, "m2", text("kept answer"))
				b := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": kept[0], "content": "Conversation compacted",
					"compactMetadata": map[string]any{"trigger": "auto", "preTokens": 1000, "preservedSegment": map[string]any{"headUuid": u2, "anchorUuid": "", "tailUuid": kept[0]}}})
				sum := s.add(b, map[string]any{"type": "user", "isCompactSummary": true, "isVisibleInTranscriptOnly": true, "message": map[string]any{"role": "user", "content": "SUMMARY"}})
				// Patch the anchor in: the summary's uuid is only known now.
				s.lines[len(s.lines)-2] = strings.Replace(s.lines[len(s.lines)-2], `"anchorUuid":""`, fmt.Sprintf(`"anchorUuid":%q`, sum), 1)
				n := s.user(sum, "new question")
				f := s.assistant(n, "m3", text("new answer"))
				s.lastPrompt(f[0])
				return transcript.LoadOptions{}
			},
			want: []string{"user: SUMMARY\n | kept question", "assistant: kept answer", "user: new question", "assistant: new answer"},
		},
		{
			name: "history mode follows compactions back to the start",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "old question")
				a := s.assistant(u, "m1", text("old answer"))
				b := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": a[0], "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "manual", "preTokens": 10}})
				sum := s.add(b, map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "SUMMARY"}})
				n := s.user(sum, "new question")
				s.lastPrompt(n)
				return transcript.LoadOptions{History: true}
			},
			want: []string{"user: old question", "assistant: old answer", "user: SUMMARY\n | new question"},
		},
		{
			name: "snipped messages leave the chain, their children re-pointed",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "first")
				a := s.assistant(u, "m1", text("noise"))
				u2 := s.user(a[0], "more noise")
				a2 := s.assistant(u2, "m2", text("answer"))
				sb := s.add(a2[0], map[string]any{"type": "system", "subtype": "snip_boundary", "snipMetadata": map[string]any{"removedUuids": []string{a[0], u2}}})
				n := s.user(sb, "next")
				s.lastPrompt(n)
				return transcript.LoadOptions{}
			},
			want: []string{"user: first", "assistant: answer", "user: next", "assistant: No response requested."},
		},
		{
			name: "a turn cut short in a tool call resumes with an error result and a reply, as Claude Code 2.1.332 resumes it",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "run it")
				s.lastPrompt(u)
				s.assistant(u, "m1", toolUse("T", "Bash"))
				return transcript.LoadOptions{}
			},
			want: []string{"user: run it", "assistant: use:T", "user: result:T!", "assistant: No response requested."},
		},
		{
			name: "a prompt written just before a crash is not lost",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "one")
				a := s.assistant(u, "m1", text("ok"))
				s.lastPrompt(a[0])
				s.user(a[0], "two, acknowledged then crashed")
				return transcript.LoadOptions{}
			},
			want: []string{"user: one", "assistant: ok", "user: two, acknowledged then crashed", "assistant: No response requested."},
		},
		{
			name: "an explicit leaf rewinds the conversation",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "one")
				a := s.assistant(u, "m1", text("ok"))
				u2 := s.user(a[0], "two")
				s.assistant(u2, "m2", text("ok2"))
				return transcript.LoadOptions{Leaf: a[0]}
			},
			want: []string{"user: one", "assistant: ok"},
		},
		{
			name: "a missing parent starts the conversation there",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("99999999-0000-4000-8000-000000000000", "orphan")
				s.assistant(u, "m1", text("ok"))
				return transcript.LoadOptions{}
			},
			want:     []string{"user: orphan", "assistant: ok"},
			warnings: []string{"parent 99999999-0000-4000-8000-000000000000 is not in the file"},
		},
		{
			name: "a parent loop stops the walk",
			build: func(s *script) transcript.LoadOptions {
				s.raw(`{"parentUuid":"L2","isSidechain":false,"type":"user","message":{"role":"user","content":"a"},"uuid":"L1","sessionId":"sess"}`)
				s.raw(`{"parentUuid":"L1","isSidechain":false,"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"b"}]},"uuid":"L2","sessionId":"sess"}`)
				return transcript.LoadOptions{}
			},
			want:     []string{"user: a", "assistant: b"},
			warnings: []string{"form a loop"},
		},
		{
			name: "a duplicate uuid: the later line counts",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "q")
				s.raw(fmt.Sprintf(`{"parentUuid":%q,"isSidechain":false,"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"first copy"}]},"uuid":"D","sessionId":"sess"}`, u))
				s.raw(fmt.Sprintf(`{"parentUuid":%q,"isSidechain":false,"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"second copy"}]},"uuid":"D","sessionId":"sess"}`, u))
				return transcript.LoadOptions{}
			},
			want: []string{"user: q", "assistant: second copy"},
		},
		{
			name: "garbage, null bytes and a torn tail are skipped by line",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "q")
				s.raw("not json at all")
				a := s.assistant(u, "m1", text("ok"))
				s.lines[len(s.lines)-1] = "\x00\x00\x00" + s.lines[len(s.lines)-1]
				s.raw(`{"parentUuid":"` + a[0] + `","type":"user","message":{"role":"us`)
				return transcript.LoadOptions{}
			},
			want:     []string{"user: q", "assistant: ok"},
			warnings: []string{"line 4 (byte", "line 3 (byte", "line 2 (byte"},
		},
		{
			name: "sidechain lines are never the leaf",
			build: func(s *script) transcript.LoadOptions {
				u := s.user("", "q")
				s.assistant(u, "m1", text("main"))
				s.add(u, map[string]any{"type": "user", "isSidechain": true, "message": map[string]any{"role": "user", "content": "sub-agent"}})
				return transcript.LoadOptions{}
			},
			want: []string{"user: q", "assistant: main"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{}
			opts := tt.build(s)
			data := s.bytes()
			if tt.name == "garbage, null bytes and a torn tail are skipped by line" {
				data = bytes.TrimSuffix(data, []byte("\n"))
			}
			c := load(t, data, opts)
			if diff := cmp.Diff(tt.want, summary(c.Messages())); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if len(c.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d", c.Warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(c.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to mention %q", i, c.Warnings[i], w)
				}
			}
			assertValidForAPI(t, c.Messages())
		})
	}
}

// assertValidForAPI checks what the Messages API insists on: the first
// message is the user's, and every tool_use is answered in the next message
// and only there.
func assertValidForAPI(t *testing.T, msgs []model.Message) {
	t.Helper()
	if len(msgs) > 0 && msgs[0].Role != model.RoleUser {
		t.Errorf("first message is %s", msgs[0].Role)
	}
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Role == m.Role {
			t.Errorf("messages %d and %d are both %s", i-1, i, m.Role)
		}
		var calls []string
		if m.Role == model.RoleAssistant {
			for _, b := range m.Content {
				if b.Type == model.BlockToolUse {
					calls = append(calls, b.ID)
				}
			}
		}
		if m.Role == model.RoleUser {
			for _, b := range m.Content {
				if b.Type != model.BlockToolResult {
					continue
				}
				found := false
				if i > 0 {
					for _, u := range msgs[i-1].ToolUses() {
						found = found || u.ID == b.ToolUseID
					}
				}
				if !found {
					t.Errorf("message %d: tool_result %s answers no tool_use", i, b.ToolUseID)
				}
			}
		}
		if len(calls) == 0 {
			continue
		}
		if i+1 >= len(msgs) {
			t.Errorf("message %d: tool_use %v never answered", i, calls)
			continue
		}
		answered := map[string]bool{}
		for _, b := range msgs[i+1].Content {
			if b.Type == model.BlockToolResult {
				answered[b.ToolUseID] = true
			}
		}
		for _, c := range calls {
			if !answered[c] {
				t.Errorf("message %d: tool_use %s not answered in the next message", i, c)
			}
		}
	}
}

// TestLoadSkipsHistoryBeforeBoundary proves resume cost does not grow with
// what came before the last compact boundary.
func TestLoadSkipsHistoryBeforeBoundary(t *testing.T) {
	s := &script{}
	parent := s.user("", "start")
	filler := strings.Repeat("x", 4000)
	for i := range 2000 { // about 8 MB of old history
		a := s.assistant(parent, fmt.Sprintf("old%d", i), text(filler))
		parent = s.user(a[0], "again")
	}
	b := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": parent, "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "auto", "preTokens": 1}})
	sum := s.add(b, map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "SUMMARY"}})
	a := s.assistant(sum, "new", text("fresh"))
	s.lastPrompt(a[0])
	data := s.bytes()
	c := load(t, data, transcript.LoadOptions{})
	if diff := cmp.Diff([]string{"user: SUMMARY", "assistant: fresh"}, summary(c.Messages())); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if c.BytesRead > 512<<10 {
		t.Errorf("read %d of %d bytes; history before the boundary should be skipped", c.BytesRead, len(data))
	}
}

// TestClaudeCodeSample loads a real Claude Code 2.1.197 transcript (with a
// manual compaction and parallel calls) and compares the view with the one
// Claude Code sent when it resumed the session.
func TestClaudeCodeSample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c := load(t, data, transcript.LoadOptions{})
	if len(c.Warnings) > 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}
	if c.Repaired != 0 {
		t.Errorf("a finished session needed %d repairs", c.Repaired)
	}
	msgs := c.Messages()
	assertValidForAPI(t, msgs)
	got, err := jsonw.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	json.Indent(&pretty, got, "", "  ")
	golden := filepath.Join("testdata", "cc-2.1.197-manual-compact.view.json")
	if *update {
		os.WriteFile(golden, pretty.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), pretty.String()); diff != "" {
		t.Errorf("view differs from golden (-want +got):\n%s", diff)
	}
	// What Claude Code sent on resume, in order (COMPAT.md): the summary,
	// the preserved reply, the local-command lines and the continue prompt,
	// the re-read files, the synthetic reply, the new prompt.
	order := []string{"This session is being continued", "Second task done", "<local-command-caveat>", "Continue from where you left off.",
		"Result of calling the Read tool:\n1\tline one", "No response requested.", "PEER-TASK-3"}
	flat := pretty.String()
	pos := 0
	for _, s := range order {
		i := strings.Index(flat[pos:], jsonString(s))
		if i < 0 {
			t.Fatalf("%q missing or out of order in the view", s)
		}
		pos += i
	}
	for _, gone := range []string{"PEER-TASK-1", "PEER-TASK-2"} {
		if strings.Contains(flat, gone) {
			t.Errorf("the view holds %q from before the compaction", gone)
		}
	}
}

// jsonString is s as it appears inside an encoded JSON string.
func jsonString(s string) string {
	b := jsonw.String(s)
	return string(b[1 : len(b)-1])
}

func TestContextTokens(t *testing.T) {
	s := &script{}
	u := s.user("", strings.Repeat("q", 400)) // 100 tokens, before the usage: not counted
	a := s.assistant(u, "m1", text("x"), toolUse("A", "Bash"), toolUse("B", "Bash"))
	s.result(a[1], "A", strings.Repeat("r", 800)) // 200
	rb := s.result(a[2], "B", strings.Repeat("r", 400))
	s.lastPrompt(rb)
	c := load(t, s.bytes(), transcript.LoadOptions{})
	// usage 10+5+100 = 115; after the first line of m1: its other lines
	// (tool_use names and inputs) and both results.
	want := int64(115) + (1 + 3) + (1 + 3) + 200 + 100
	// The repair adds the synthetic reply (6).
	want += 6
	if got := c.ContextTokens(); got != want {
		t.Errorf("ContextTokens = %d, want %d", got, want)
	}
}

func TestContextTokensIgnoresPreservedUsage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cc-2.1.197-manual-compact.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c := load(t, data, transcript.LoadOptions{})
	if !c.Preserved["e4b38694-5212-4ec2-9db5-11e8d6bc8250"] {
		t.Fatal("the preserved reply is not marked")
	}
	// The last reply reported 1154+18418+13 = 19585; the preserved one
	// (20,917) must never be taken as the size.
	if got := c.ContextTokens(); got < 19585 || got > 19585+200 {
		t.Errorf("ContextTokens = %d, want the last reply's 19585 plus a little", got)
	}
}

// TestCompactionCutAfterBoundary: a crash (or a torn write) between a
// compaction's boundary and its summary leaves a boundary with nothing
// after it; the session resumes from before the compaction.
func TestCompactionCutAfterBoundary(t *testing.T) {
	s := &script{}
	u := s.user("", "question")
	a := s.assistant(u, "m1", text("answer"))
	s.lastPrompt(a[0])
	s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": a[0], "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "auto", "preTokens": 1}})
	c := load(t, s.bytes(), transcript.LoadOptions{})
	if diff := cmp.Diff([]string{"user: question", "assistant: answer"}, summary(c.Messages())); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "no summary after it") {
		t.Errorf("warnings %q", c.Warnings)
	}
}
