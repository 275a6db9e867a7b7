package transcript_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// micro writes a microcompact_boundary clearing ids.
func (s *script) micro(parent string, ids ...any) string {
	return s.add(parent, map[string]any{"type": "system", "subtype": "microcompact_boundary", "content": "Context microcompacted", "level": "info",
		"microcompactMetadata": map[string]any{"trigger": "count", "preTokens": 5000, "tokensSaved": 1200, "compactedToolIds": ids}})
}

// TestLoadCleared: the loader collects the results cleared by the
// microcompact boundaries of the chain it loads, and only those.
func TestLoadCleared(t *testing.T) {
	s := &script{}
	u := s.user("", "go")
	a1 := s.assistant(u, "m1", toolUse("t1", "Read"))
	r1 := s.result(a1[0], "t1", "one")
	a2 := s.assistant(r1, "m2", toolUse("t2", "Read"))
	r2 := s.result(a2[0], "t2", "two")
	b1 := s.micro(r2, "t1")
	a3 := s.assistant(b1, "m3", toolUse("t3", "Bash"))
	r3 := s.result(a3[0], "t3", "three")
	b2 := s.micro(r3, "t2")
	a4 := s.assistant(b2, "m4", text("done"))
	s.lastPrompt(a4[0])
	b := s.bytes()

	t.Run("the chain", func(t *testing.T) {
		c := load(t, b, transcript.LoadOptions{})
		if diff := cmp.Diff(map[string]bool{"t1": true, "t2": true}, c.Cleared); diff != "" {
			t.Errorf("Cleared (-want +got):\n%s", diff)
		}
		// The boundaries are not messages.
		want := []string{"user: go", "assistant: use:t1", "user: result:t1", "assistant: use:t2", "user: result:t2",
			"assistant: use:t3", "user: result:t3", "assistant: done"}
		if diff := cmp.Diff(want, summary(c.Messages())); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
		if got := c.LastAssistantTime(); !got.Equal(time.Date(2026, 11, 30, 10, 0, 10, 0, time.UTC)) {
			t.Errorf("LastAssistantTime = %v", got)
		}
	})
	t.Run("rewound before a boundary", func(t *testing.T) {
		c := load(t, b, transcript.LoadOptions{Leaf: r3})
		if diff := cmp.Diff(map[string]bool{"t1": true}, c.Cleared); diff != "" {
			t.Errorf("Cleared (-want +got):\n%s", diff)
		}
	})
	t.Run("none", func(t *testing.T) {
		c := load(t, b, transcript.LoadOptions{Leaf: r2})
		if c.Cleared != nil {
			t.Errorf("Cleared = %v before any boundary", c.Cleared)
		}
	})
}

// TestLoadClearedStopsAtCompaction: boundaries before a compaction are
// not read (nor would they apply: the compaction started afresh).
func TestLoadClearedStopsAtCompaction(t *testing.T) {
	s := &script{}
	u := s.user("", "go")
	a1 := s.assistant(u, "m1", toolUse("t1", "Read"))
	r1 := s.result(a1[0], "t1", "one")
	b1 := s.micro(r1, "t1")
	a2 := s.assistant(b1, "m2", text("ok"))
	cb := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": a2[0], "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "auto", "preTokens": 1}})
	sum := s.add(cb, map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "summary"}})
	a3 := s.assistant(sum, "m3", toolUse("t9", "Read"))
	r9 := s.result(a3[0], "t9", "nine")
	s.micro(r9, "t9")
	s.lastPrompt(s.leaf)
	c := load(t, s.bytes(), transcript.LoadOptions{})
	if diff := cmp.Diff(map[string]bool{"t9": true}, c.Cleared); diff != "" {
		t.Errorf("Cleared (-want +got):\n%s", diff)
	}
}

func TestLoadClearedBadMetadata(t *testing.T) {
	s := &script{}
	u := s.user("", "go")
	b := s.add(u, map[string]any{"type": "system", "subtype": "microcompact_boundary", "microcompactMetadata": "not an object"})
	a := s.assistant(b, "m1", text("ok"))
	s.lastPrompt(a[0])
	c := load(t, s.bytes(), transcript.LoadOptions{})
	if c.Cleared != nil || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "microcompact boundary") {
		t.Errorf("Cleared %v, warnings %q", c.Cleared, c.Warnings)
	}
}

// TestMicrocompactBoundaryRoundTrip: a boundary cairn writes reads back
// with its metadata.
func TestMicrocompactBoundaryRoundTrip(t *testing.T) {
	e := transcript.Entry{Type: transcript.TypeSystem, Subtype: transcript.SubtypeMicrocompactBoundary, UUID: "u", ParentUUID: "p",
		Extra: map[string]json.RawMessage{"microcompactMetadata": json.RawMessage(`{"trigger":"time","preTokens":9,"tokensSaved":3,"compactedToolIds":["a","b"]}`)}}
	line, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := transcript.DecodeEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	md, err := back.DecodeMicrocompactMetadata()
	if err != nil {
		t.Fatal(err)
	}
	want := &transcript.MicrocompactMetadata{Trigger: "time", PreTokens: 9, TokensSaved: 3, CompactedToolIDs: []string{"a", "b"}}
	if diff := cmp.Diff(want, md); diff != "" || !back.IsMicrocompactBoundary() {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}
