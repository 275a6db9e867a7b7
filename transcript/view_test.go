package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
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
		c.Entries = append(c.Entries, &e)
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
		{"a response of calls all made before says it was interrupted", func(s *script) {
			a := s.assistant(s.user("", "go"), "m1", toolUse("A", "Bash"))
			p := s.result(a[0], "A", "a")
			b := s.assistant(p, "m2", toolUse("A", "Bash"))
			p = s.result(b[0], "A", "a2")
			s.assistant(p, "m3", text("done"))
		}, []string{"[1] user: go", "[2] assistant: use:A", "[3] user: result:A", "[4] assistant: [Tool use interrupted]", "[5] user: (no content)", "[6] assistant: done"}, nil},
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

// randomTranscript writes a chain of lines of every shape Messages treats
// apart, in random order and proportions.
func randomTranscript(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	parent := ""
	var toolIDs, msgIDs []string
	k := 0
	line := func(fields map[string]any) {
		k++
		id := fmt.Sprintf("u%05d", k)
		fields["uuid"] = id
		if parent == "" {
			fields["parentUuid"] = nil
		} else {
			fields["parentUuid"] = parent
		}
		fields["sessionId"] = "s"
		fields["timestamp"] = "2026-11-30T10:00:00.000Z"
		fields["isSidechain"] = false
		if _, ok := fields["version"]; !ok {
			if r.IntN(2) == 0 {
				fields["version"] = "2.1.332"
			} else {
				fields["version"] = "2.1.197"
			}
		}
		j, _ := json.Marshal(fields)
		b.Write(j)
		b.WriteByte('\n')
		parent = id
	}
	pick := func(list []string, fresh func() string) string {
		if len(list) > 0 && r.IntN(3) > 0 {
			return list[len(list)-1-r.IntN(min(len(list), 4))]
		}
		return fresh()
	}
	texts := []string{"hello", "  ", "", "\n", "more text", "x"}
	textBlock := func() map[string]any { return map[string]any{"type": "text", "text": texts[r.IntN(len(texts))]} }
	result := func() map[string]any {
		id := pick(toolIDs, func() string { return fmt.Sprintf("orphan%d", r.IntN(5)) })
		var content any = "out"
		switch r.IntN(3) {
		case 1:
			content = []any{map[string]any{"type": "text", "text": "res"}}
		case 2:
			content = []any{}
		}
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
	}
	for range n {
		switch r.IntN(9) {
		case 0, 1: // user
			var content any
			switch r.IntN(4) {
			case 0:
				content = texts[r.IntN(len(texts))]
			case 1:
				content = []any{textBlock()}
			case 2:
				var bl []any
				for range r.IntN(4) {
					if r.IntN(2) == 0 {
						bl = append(bl, result())
					} else {
						bl = append(bl, textBlock())
					}
				}
				content = bl
			case 3:
				content = []any{result()}
			}
			f := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}}
			if r.IntN(3) == 0 {
				f["isMeta"] = true
			}
			line(f)
		case 2, 3: // tool results, one or parallel
			var bl []any
			for range 1 + r.IntN(3) {
				bl = append(bl, result())
			}
			line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": bl}})
		case 4, 5, 6: // assistant line
			mid := pick(msgIDs, func() string { id := fmt.Sprintf("msg%d", len(msgIDs)); msgIDs = append(msgIDs, id); return id })
			if r.IntN(10) == 0 {
				mid = ""
			}
			var bl []any
			for range r.IntN(3) {
				switch r.IntN(4) {
				case 0:
					bl = append(bl, textBlock())
				case 1:
					bl = append(bl, map[string]any{"type": "thinking", "thinking": "hm", "signature": "s"})
				default:
					id := pick(toolIDs, func() string { id := fmt.Sprintf("toolu%d", len(toolIDs)); toolIDs = append(toolIDs, id); return id })
					if r.IntN(3) > 0 {
						id = fmt.Sprintf("toolu%d", len(toolIDs))
						toolIDs = append(toolIDs, id)
					}
					bl = append(bl, map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}})
				}
			}
			if r.IntN(20) == 0 { // many parallel calls, answered in any order
				var res []any
				for range 17 + r.IntN(4) {
					id := fmt.Sprintf("toolu%d", len(toolIDs))
					toolIDs = append(toolIDs, id)
					bl = append(bl, map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}})
					if r.IntN(8) > 0 {
						res = append(res, map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"})
					}
				}
				r.Shuffle(len(res), func(i, j int) { res[i], res[j] = res[j], res[i] })
				line(map[string]any{"type": "assistant", "message": map[string]any{"id": mid, "role": "assistant", "model": "m", "content": bl}})
				line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": res}})
				continue
			}
			if bl == nil && r.IntN(2) == 0 {
				bl = []any{}
			}
			msg := map[string]any{"id": mid, "role": "assistant", "model": "m", "content": bl}
			f := map[string]any{"type": "assistant", "message": msg}
			if r.IntN(15) == 0 {
				f["isApiErrorMessage"] = true
				if r.IntN(2) == 0 {
					msg["model"] = transcript.SyntheticModel
				}
			}
			line(f)
		case 7: // attachment
			f := map[string]any{"type": "attachment", "attachment": map[string]any{"type": "critical_system_reminder", "content": "remember " + texts[r.IntN(len(texts))]}}
			switch r.IntN(4) {
			case 0:
				f["version"] = "2.1.332"
				f["renderedRole"] = "system"
			case 1:
				f["version"] = "2.1.332"
				f["renderedRole"] = "user"
			case 2:
				f["attachment"] = map[string]any{"type": "todo_reminder"}
			}
			if r.IntN(4) == 0 {
				f["rendered"] = []any{map[string]any{"content": []any{map[string]any{"type": "text", "text": "rendered"}}}}
			}
			line(f)
		case 8: // system
			f := map[string]any{"type": "system", "subtype": "local_command", "content": "out " + texts[r.IntN(len(texts))]}
			if r.IntN(3) == 0 {
				f["subtype"] = "informational"
			}
			line(f)
		}
	}
	return b.Bytes()
}

// TestMessagesRandom holds Messages, on random transcripts read as they
// are and through the loader, to what it promises whatever the lines: the
// API's alternation, every call answered once in the next message, each
// line in at most one message, and messages that share arrays with each
// other and the entries without an append to one reaching another.
func TestMessagesRandom(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 7))
		data := randomTranscript(r, 1+r.IntN(60))
		var raw transcript.Conversation
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			e, err := transcript.DecodeEntry(l)
			if err != nil {
				t.Fatal(err)
			}
			raw.Entries = append(raw.Entries, &e)
		}
		n := 0
		loaded, err := transcript.Load(context.Background(), transcript.BytesSource(data), transcript.LoadOptions{NewUUID: func() string { n++; return fmt.Sprintf("new-%d", n) }})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*transcript.Conversation{&raw, loaded} {
			if err := checkMessages(c); err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, data)
			}
		}
	}
}

func checkMessages(c *transcript.Conversation) error {
	first := c.Messages()
	again := c.Messages()
	if !reflect.DeepEqual(first, again) {
		return fmt.Errorf("a second call differs:\n%q\n%q", summary(first), summary(again))
	}
	seen := make(map[string]bool)
	for i, m := range first {
		if i == 0 && m.Role != model.RoleUser || i > 0 && m.Role == first[i-1].Role {
			return fmt.Errorf("message %d is from %s after %s", i, m.Role, first[max(i-1, 0)].Role)
		}
		// The API takes an empty message only as the last response.
		if len(m.Content) == 0 && (m.Role == model.RoleUser || i < len(first)-1) {
			return fmt.Errorf("message %d (%s) is empty", i, m.Role)
		}
		for _, id := range m.IDs {
			if seen[id] {
				return fmt.Errorf("line %s is in two messages", id)
			}
			seen[id] = true
		}
		var calls []string
		if i > 0 && first[i-1].Role == model.RoleAssistant {
			for _, b := range first[i-1].Content {
				if b.Type == model.BlockToolUse {
					calls = append(calls, b.ID)
				}
			}
		}
		var results []string
		for _, b := range m.Content {
			if b.Type == model.BlockToolResult {
				results = append(results, b.ToolUseID)
			}
		}
		if m.Role == model.RoleUser && !slices.Equal(slices.Sorted(slices.Values(calls)), slices.Sorted(slices.Values(results))) {
			return fmt.Errorf("message %d answers %q, the calls before it are %q", i, results, calls)
		}
	}
	for i := range first {
		first[i].Content = append(first[i].Content, model.TextBlock("appended"))
		first[i].IDs = append(first[i].IDs, "appended")
	}
	for i, m := range first {
		if !equalOrEmpty(m.Content[:len(m.Content)-1], again[i].Content) || !equalOrEmpty(m.IDs[:len(m.IDs)-1], again[i].IDs) ||
			m.Content[len(m.Content)-1].Text != "appended" || m.IDs[len(m.IDs)-1] != "appended" {
			return fmt.Errorf("message %d: appending to the messages of one call changed the messages of another", i)
		}
	}
	if third := c.Messages(); !reflect.DeepEqual(third, again) {
		return fmt.Errorf("appending to the messages changed what a later call returns")
	}
	return nil
}

// equalOrEmpty reports whether a and b are deeply equal or both empty.
func equalOrEmpty[T any](a, b []T) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}
