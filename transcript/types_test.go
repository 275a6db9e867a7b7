package transcript_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// TestResumeAddsNothingAfterAFinishedTurn: what follows the last reply
// without asking for one (2.1.332's records, a /compact's summary,
// re-read files and command output, side records of any type) does not
// make the turn look cut short, so no "Continue from where you left off."
// or "No response requested." is invented (issue 15 item 14).
func TestResumeAddsNothingAfterAFinishedTurn(t *testing.T) {
	attach := func(s *script, parent, kind string, rendered bool, version string) string {
		f := map[string]any{"type": "attachment", "version": version, "attachment": map[string]any{"type": kind}}
		if rendered {
			f["rendered"] = []map[string]any{{"content": "<system-reminder>\n" + kind + "\n</system-reminder>"}}
			f["renderedRole"] = "system"
		}
		return s.add(parent, f)
	}
	tests := []struct {
		name  string
		build func(s *script)
		want  []string
	}{
		{"prompt_snapshot after the reply", func(s *script) {
			p := s.user("", "hi")
			a := s.assistant(p, "m1", text("hello"))
			attach(s, a[0], "prompt_snapshot", false, "2.1.332")
			s.raw(`{"type":"atis-latch","atis":"","sessionId":"sess"}`)
			s.raw(`{"type":"cost-state","sessionId":"sess","totalCostUSD":0}`)
		}, []string{"user: hi", "assistant: hello"}},
		{"cairn's /compact with nothing after it", func(s *script) {
			p := s.user("", "hi")
			a := s.assistant(p, "m1", text("hello"))
			b := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": a[0], "version": "cairn-0.1.0",
				"compactMetadata": map[string]any{"trigger": "manual", "preTokens": 10}})
			sum := s.add(b, map[string]any{"type": "user", "isCompactSummary": true, "isVisibleInTranscriptOnly": true, "version": "cairn-0.1.0",
				"message": map[string]any{"role": "user", "content": "Summary: hi and hello."}})
			f := map[string]any{"type": "attachment", "version": "cairn-0.1.0", "attachment": map[string]any{"type": "file"},
				"rendered": []map[string]any{{"content": "<system-reminder>\nfile\n</system-reminder>"}}, "renderedRole": "user"}
			s.add(sum, f)
		}, []string{"user: Summary: hi and hello. | <system-reminder>\nfile\n</system-reminder>"}},
		{"a local command's output after the reply", func(s *script) {
			p := s.user("", "hi")
			a := s.assistant(p, "m1", text("hello"))
			c := s.user(a[0], "<command-name>/compact</command-name>")
			s.user(c, "<local-command-stdout>Compacted </local-command-stdout>")
		}, []string{"user: hi", "assistant: hello", "user: <command-name>/compact</command-name>\n | <local-command-stdout>Compacted </local-command-stdout>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s script
			tt.build(&s)
			c := load(t, s.bytes(), transcript.LoadOptions{})
			if c.Repaired != 0 {
				t.Errorf("the resume added %d entries; want none", c.Repaired)
			}
			sentQuietly(t, c, tt.want)
		})
	}
}

// TestResumeAfterHeadlessPlanExit: a headless run that ended at its plan
// (ExitPlanMode's result, no reply) did not crash: the resume answers it
// with "No response requested." alone, as Claude Code 2.1.332 does, and
// invents no "Continue from where you left off." prompt.
func TestResumeAfterHeadlessPlanExit(t *testing.T) {
	var s script
	p := s.user("", "plan it")
	a := s.assistant(p, "m1", map[string]any{"type": "tool_use", "id": "toolu_plan", "name": "ExitPlanMode", "input": map[string]any{"plan": "1. Stop."}})
	s.result(a[0], "toolu_plan", "The plan is saved; the run ended there.")
	c := load(t, s.bytes(), transcript.LoadOptions{})
	want := []string{"user: plan it", "assistant: use:toolu_plan", "user: result:toolu_plan", "assistant: " + transcript.NoResponseText}
	if d := cmp.Diff(want, summary(c.Messages())); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}
}

// TestResumeAfterACrashBeforeTheResponseLine: Claude Code killed after
// writing its prompt, the prompt's attachments and a last-prompt record
// naming the response, but before the response's own line: the resume
// answers the prompt with "No response requested." alone and says nothing
// of the missing leaf, as Claude Code 2.1.332 does (the matrix's
// killed-unflushed scenario holds this to the real program).
func TestResumeAfterACrashBeforeTheResponseLine(t *testing.T) {
	var s script
	p := s.user("", "run a slow command")
	a := s.add(p, map[string]any{"type": "attachment", "version": "2.1.332", "attachment": map[string]any{"type": "date"},
		"rendered": []map[string]any{{"content": "<system-reminder>\ndate\n</system-reminder>"}}, "renderedRole": "user"})
	s.add(a, map[string]any{"type": "attachment", "version": "2.1.332", "attachment": map[string]any{"type": "prompt_snapshot"}})
	s.lastPrompt("00000000-0000-4000-8000-999999999999")
	c := load(t, s.bytes(), transcript.LoadOptions{})
	sentQuietly(t, c, []string{"user: <system-reminder>\ndate\n</system-reminder>\n | run a slow command", "assistant: " + transcript.NoResponseText})
}

// sentQuietly checks that c sends want (see summary) and warned of
// nothing.
func sentQuietly(t *testing.T, c *transcript.Conversation, want []string) {
	t.Helper()
	if d := cmp.Diff(want, summary(c.Messages())); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}
	if len(c.Warnings) > 0 {
		t.Errorf("warnings: %q", c.Warnings)
	}
}

// TestMissingLeafReadsNoMore: a last-prompt record naming a line the file
// lacks (a crash's) is found out by a search of the file's bytes, so the
// load still stops at the last compact boundary, with or without a cache,
// instead of reading and decoding the whole file to look for the line.
func TestMissingLeafReadsNoMore(t *testing.T) {
	var s script
	p := s.user("", "old work")
	big := strings.Repeat("x", 4<<10)
	for i := range 600 {
		a := s.assistant(p, fmt.Sprintf("m%d", i), text(big))
		p = s.user(a[0], "more")
	}
	b := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": p, "content": "Conversation compacted",
		"compactMetadata": map[string]any{"trigger": "manual", "preTokens": 10}})
	sum := s.add(b, map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "Summary."}})
	q := s.user(sum, "go on")
	s.assistant(q, "mlast", text("done"))
	s.lastPrompt("00000000-0000-4000-8000-999999999999")
	data := s.bytes()
	for _, cache := range []*transcript.LineCache{nil, {}} {
		c := load(t, data, transcript.LoadOptions{Cache: cache})
		if c.BytesRead > int64(len(data))/4 {
			t.Errorf("cache %v: read %d of %d bytes: the load went past the compact boundary", cache != nil, c.BytesRead, len(data))
		}
		sentQuietly(t, c, []string{"user: Summary.\n | go on", "assistant: done"})
	}
}

// TestLastPromptLeafOfOtherBytes: a last-prompt record naming a uuid of
// other bytes than letters, digits and dashes (which a line may write
// escaped, or as invalid UTF-8 both decode alike) is looked for by
// decoding, not by a search of the file's bytes: the load resumes there.
func TestLastPromptLeafOfOtherBytes(t *testing.T) {
	var s script
	p := s.user("", "first")
	s.raw(`{"parentUuid":"` + p + `","isSidechain":false,"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"at the leaf"}]},"uuid":"u1\xff","sessionId":"sess"}`)
	s.raw(`{"parentUuid":"u1\xff","isSidechain":false,"type":"user","message":{"role":"user","content":"later"},"uuid":"u2","sessionId":"sess"}`)
	s.raw(`{"type":"last-prompt","lastPrompt":"p","leafUuid":"u1\xff","sessionId":"sess"}`)
	data := bytes.ReplaceAll(s.bytes(), []byte(`\xff`), []byte{0xff})
	c := load(t, data, transcript.LoadOptions{NoRepair: true})
	if want := "u1\ufffd"; c.Leaf != want {
		t.Errorf("leaf %q, want %q", c.Leaf, want)
	}
}

// TestUnknownLineTypes: lines of a type nobody knows (a newer Claude
// Code's) stay out of the conversation, and one warning names the first.
func TestUnknownLineTypes(t *testing.T) {
	var s script
	p := s.user("", "hi")
	s.raw(`{"type":"hologram-state","sessionId":"sess","x":1}`)
	a := s.assistant(p, "m1", text("hello"))
	s.raw(`{"type":"quantum-latch","sessionId":"sess"}`)
	s.raw(`{"type":"quantum-latch","sessionId":"sess"}`)
	s.lastPrompt(a[0])
	c := load(t, s.bytes(), transcript.LoadOptions{})
	if d := cmp.Diff([]string{"user: hi", "assistant: hello"}, summary(c.Messages())); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `"quantum-latch"`) {
		t.Errorf("warnings %q; want one naming the first unknown type read", c.Warnings)
	}
	for _, known := range []string{"queue-operation", "atis-latch", "api-request", "api-request-shape", "api-request-blob", "cost-state", "mode", "tools-used", "last-prompt"} {
		if !transcript.KnownLineType(known) {
			t.Errorf("KnownLineType(%q) = false; Claude Code 2.1.332 writes it", known)
		}
	}
}

func TestResultHasKey(t *testing.T) {
	for _, tc := range []struct {
		result string
		want   bool
	}{
		{`{"plan":"p","filePath":"f"}`, true},
		{`{"Plan":"p"}`, true},
		{`{"\u0070lan":"p"}`, true},
		{`{"x":{"plan":"p"}}`, false},
		{`{"planned":1}`, false},
		{`["plan"]`, false},
		{`"plan"`, false},
	} {
		line := `{"type":"user","uuid":"u1","toolUseResult":` + tc.result + `}`
		e, err := transcript.DecodeEntry([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if got := e.ResultHasKey("plan"); got != tc.want {
			t.Errorf("%s: ResultHasKey(plan) = %v, want %v", tc.result, got, tc.want)
		}
		// Set by code, not read from a line: checked as it is.
		built := transcript.Entry{Type: "user", ToolUseResult: []byte(tc.result)}
		if got := built.ResultHasKey("plan"); got != tc.want {
			t.Errorf("%s set by code: ResultHasKey(plan) = %v, want %v", tc.result, got, tc.want)
		}
	}
	if bad := (transcript.Entry{ToolUseResult: []byte(`{"plan":`)}); bad.ResultHasKey("plan") {
		t.Error("invalid JSON has no keys")
	}
}

// AttachmentType reads the type encoding/json would decode, from a line
// or from an entry built by code.
func TestAttachmentType(t *testing.T) {
	for _, tc := range []struct {
		attachment, want string
	}{
		{`{"type":"plan_file_reference","planContent":"p"}`, "plan_file_reference"},
		{`{"content":"x","type":"todo"}`, "todo"},
		{`{"Type":"todo"}`, "todo"},
		{`{"type":"a","TYPE":"b"}`, "b"},
		{`{"type":"a","type":null}`, "a"},
		{`{"\u0074ype":"t\u00e9"}`, "té"},
		{`{"type":5}`, ""},
		{`{"x":{"type":"inner"}}`, ""},
		{`["type"]`, ""},
		{`null`, ""},
	} {
		line := `{"type":"attachment","uuid":"u1","attachment":` + tc.attachment + `}`
		e, err := transcript.DecodeEntry([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if got := e.AttachmentType(); got != tc.want {
			t.Errorf("%s: AttachmentType = %q, want %q", tc.attachment, got, tc.want)
		}
		built := transcript.Entry{Type: transcript.TypeAttachment, Attachment: []byte(tc.attachment)}
		if got := built.AttachmentType(); got != tc.want {
			t.Errorf("%s set by code: AttachmentType = %q, want %q", tc.attachment, got, tc.want)
		}
		var a struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(tc.attachment), &a) == nil && a.Type != tc.want {
			t.Errorf("%s: encoding/json decodes type %q, the table says %q", tc.attachment, a.Type, tc.want)
		}
	}
	if bad := (transcript.Entry{Attachment: []byte(`{"type":"x"`)}); bad.AttachmentType() != "" {
		t.Error("invalid JSON has no type")
	}
}
