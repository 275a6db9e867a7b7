package transcript_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// lines decodes a script's lines as they are, without the loader's walk
// and repairs, so a test sees what Messages alone does with them.
func lines(t *testing.T, s *script) *transcript.Conversation {
	t.Helper()
	var c transcript.Conversation
	for _, l := range bytes.Split(bytes.TrimSpace(s.bytes()), []byte("\n")) {
		e, err := transcript.DecodeEntry(l)
		if err != nil {
			t.Fatal(err)
		}
		c.Entries = append(c.Entries, e)
	}
	return &c
}

// numbered renders messages as summary does, each prefixed with the
// numbers of the script lines it was built from.
func numbered(msgs []model.Message) []string {
	out := summary(msgs)
	for i, m := range msgs {
		var n []string
		for _, id := range m.IDs {
			n = append(n, strings.TrimLeft(id[strings.LastIndexByte(id, '-')+1:], "0"))
		}
		out[i] = "[" + strings.Join(n, " ") + "] " + out[i]
	}
	return out
}

func result(toolUseID, content string) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": toolUseID, "content": content}
}

// userBlocks writes a user line of content blocks.
func (s *script) userBlocks(parent string, blocks ...map[string]any) string {
	return s.add(parent, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": blocks}})
}

// TestMessagesShapes holds Messages to what it makes of each shape of
// line it merges, pairs or drops.
func TestMessagesShapes(t *testing.T) {
	tests := []struct {
		name     string
		build    func(s *script)
		want     []string
		warnings []string
	}{
		{"consecutive user lines join at a newline", func(s *script) {
			p := s.user("", "one")
			p = s.user(p, "two")
			p = s.user(p, "three")
			s.assistant(p, "m1", text("ok"))
		}, []string{"[1 2 3] user: one\n | two\n | three", "[4] assistant: ok"}, nil},
		{"tool results move to the front of a merged user message", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"))
			p := s.user(a[0], "typed meanwhile")
			p = s.userBlocks(p, result("A", "done"))
			s.assistant(p, "m2", text("ok"))
		}, []string{"[1] user: go", "[2] assistant: use:A", "[3 4] user: result:A | typed meanwhile", "[5] assistant: ok"}, nil},
		{"a response over several lines is one message, its parallel results one message", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", map[string]any{"type": "thinking", "thinking": "hm", "signature": "x"}, text("two calls"), toolUse("A", "Bash"), toolUse("B", "Read"))
			p := s.result(a[3], "A", "a")
			p = s.result(p, "B", "b")
			s.assistant(p, "m2", text("done"))
		}, []string{"[1] user: go", "[2 3 4 5] assistant: thinking | two calls | use:A | use:B", "[6 7] user: result:A | result:B", "[8] assistant: done"}, nil},
		{"response lines between their results join the response", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"))
			p := s.result(a[0], "A", "a")
			b := s.assistant(p, "m1", toolUse("B", "Bash"))
			p = s.result(b[0], "B", "b")
			s.assistant(p, "m2", text("done"))
		}, []string{"[1] user: go", "[2 4] assistant: use:A | use:B", "[3 5] user: result:A | result:B", "[6] assistant: done"}, nil},
		{"results out of order, repeated, or answering nothing", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"), toolUse("B", "Bash"))
			p := s.userBlocks(a[1], result("B", "b"), result("X", "x"), result("A", "a"), result("B", "again"))
			s.assistant(p, "m2", text("done"))
		}, []string{"[1] user: go", "[2 3] assistant: use:A | use:B", "[4] user: result:B | result:A", "[5] assistant: done"}, nil},
		{"a call without a result gets an error result", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"), toolUse("B", "Bash"))
			p := s.result(a[1], "B", "b")
			s.assistant(p, "m2", toolUse("C", "Bash"))
		}, []string{"[1] user: go", "[2 3] assistant: use:A | use:B", "[4] user: result:A! | result:B", "[5] assistant: use:C", "[] user: result:C!"}, nil},
		{"a tool_use id used again keeps its first use", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"))
			p := s.result(a[0], "A", "a")
			b := s.assistant(p, "m2", text("again"), toolUse("A", "Bash"))
			p = s.result(b[1], "A", "a2")
			s.assistant(p, "m3", text("done"))
		}, []string{"[1] user: go", "[2] assistant: use:A", "[3] user: result:A", "[4 5] assistant: again", "[6] user: (no content)", "[7] assistant: done"}, nil},
		{"an API error message Claude Code made up is left out", func(s *script) {
			p := s.user("", "go")
			p = s.add(p, map[string]any{"type": "assistant", "isApiErrorMessage": true, "message": map[string]any{
				"id": "e1", "role": "assistant", "model": "<synthetic>", "content": []any{text("API Error: overloaded")}}})
			p = s.user(p, "again")
			p = s.add(p, map[string]any{"type": "assistant", "isApiErrorMessage": true, "message": map[string]any{
				"id": "e2", "role": "assistant", "model": "m", "content": []any{text("Prompt is too long")}}})
			s.assistant(p, "m1", text("ok"))
		}, []string{"[1 3] user: go\n | again", "[4 5] assistant: Prompt is too long | ok"}, nil},
		{"a 2.1.332 system reminder after results folds into the last result", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"), toolUse("B", "Bash"))
			p := s.result(a[1], "A", "a")
			p = s.result(p, "B", "b")
			p = s.add(p, map[string]any{"type": "attachment", "version": "2.1.332", "renderedRole": "system",
				"attachment": map[string]any{"type": "critical_system_reminder", "content": "careful"}})
			s.assistant(p, "m2", text("done"))
		}, []string{"[1] user: go", "[2 3] assistant: use:A | use:B", "[4 5 6] user: result:A | result:B", "[7] assistant: done"}, nil},
		{"white-space responses go, their neighbours join", func(s *script) {
			p := s.user("", "one")
			a := s.assistant(p, "m1", text("  \n"))
			p = s.user(a[0], "two")
			a = s.assistant(p, "m2", text("first"))
			a = s.assistant(a[0], "m3", text("second"))
			s.user(a[0], "three")
		}, []string{"[1 3] user: one\n | two", "[4 5] assistant: first | second", "[6] user: three"}, nil},
		{"a chain that starts with a response says its start is missing", func(s *script) {
			a := s.assistant("", "m1", text("hello"))
			s.user(a[0], "hi")
		}, []string{"[] user: " + transcript.MissingStartText, "[1] assistant: hello", "[2] user: hi"}, nil},
		{"orphaned results alone at the start", func(s *script) {
			p := s.userBlocks("", result("X", "x"))
			s.assistant(p, "m1", text("ok"))
		}, []string{"[1] user: [Orphaned tool result removed due to conversation resume]", "[2] assistant: ok"}, nil},
		{"a long turn: a late line of its first response still joins it", func(s *script) {
			s.assistant(longTurn(s), "m0", text("late"))
		}, longTurnWant("[1] user: go", fmt.Sprintf("[2 %d] assistant: use:T0 | late", 2+2*longTurnLen)), nil},
		{"after a prompt, a line of an earlier response starts a message", func(s *script) {
			a := s.assistant(longTurn(s), "done", text("done"))
			a = s.assistant(s.user(a[0], "next"), "sure", text("sure"))
			s.assistant(a[0], "m0", text("late"))
		}, append(longTurnWant("[1] user: go", "[2] assistant: use:T0"), fmt.Sprintf("[%d] assistant: done", 2+2*longTurnLen),
			fmt.Sprintf("[%d] user: next", 3+2*longTurnLen), fmt.Sprintf("[%d %d] assistant: sure | late", 4+2*longTurnLen, 5+2*longTurnLen)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s script
			tt.build(&s)
			c := lines(t, &s)
			got := c.Messages()
			want := tt.want
			if d := cmp.Diff(want, numbered(got)); d != "" {
				t.Errorf("messages (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.warnings, c.Warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			// The messages share the entries' blocks: appending to them
			// changes neither the next call's messages nor each other.
			for i := range got {
				got[i].Content = append(got[i].Content, model.TextBlock("appended"))
				got[i].IDs = append(got[i].IDs, "appended")
			}
			if d := cmp.Diff(want, numbered(c.Messages())); d != "" {
				t.Errorf("after appending to the messages, a second call differs (-want +got):\n%s", d)
			}
			for i, m := range got {
				if n := len(m.Content); m.Content[n-1].Text != "appended" || (n > 1 && m.Content[n-2].Text == "appended") {
					t.Errorf("message %d: an append to another message wrote into it", i)
				}
			}
		})
	}
}

// longTurnLen is how many responses longTurn writes: more than Messages
// looks through one by one.
const longTurnLen = 40

// longTurn writes a prompt and a turn of longTurnLen responses m0, m1, …
// each a call T0, T1, … and its result; it returns the last line.
func longTurn(s *script) string {
	p := s.user("", "go")
	for i := range longTurnLen {
		a := s.assistant(p, fmt.Sprintf("m%d", i), toolUse(fmt.Sprintf("T%d", i), "Bash"))
		p = s.result(a[0], fmt.Sprintf("T%d", i), "r")
	}
	return p
}

// longTurnWant is what Messages makes of longTurn, given its first two
// messages.
func longTurnWant(prompt, first string) []string {
	out := []string{prompt, first, "[3] user: result:T0"}
	for i := 1; i < longTurnLen; i++ {
		out = append(out, fmt.Sprintf("[%d] assistant: use:T%d", 2+2*i, i), fmt.Sprintf("[%d] user: result:T%d", 3+2*i, i))
	}
	return out
}

// TestMessagesFoldedResult checks the text a folded reminder leaves in the
// result it joins.
func TestMessagesFoldedResult(t *testing.T) {
	var s script
	a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"))
	p := s.result(a[0], "A", "output")
	for _, c := range []string{"one", "two"} {
		p = s.add(p, map[string]any{"type": "attachment", "version": "2.1.332", "renderedRole": "system",
			"attachment": map[string]any{"type": "critical_system_reminder", "content": c}})
	}
	msgs := lines(t, &s).Messages()
	i := slices.IndexFunc(msgs, func(m model.Message) bool { return len(m.Content) > 0 && m.Content[0].Type == model.BlockToolResult })
	if i < 0 {
		t.Fatalf("no tool result in %q", summary(msgs))
	}
	want := "output\n\n" + transcript.WrapSystemReminder("one") + "\n\n" + transcript.WrapSystemReminder("two")
	if got := msgs[i].Content[0].ResultText(); got != want {
		t.Errorf("folded result = %q, want %q", got, want)
	}
}
