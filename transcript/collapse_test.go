package transcript_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/transcript"
)

// collapse writes a context_collapse_commit folding spans, each given as
// from, to, summary.
func (s *script) collapse(parent string, spans ...[3]string) string {
	var list []map[string]string
	for _, sp := range spans {
		list = append(list, map[string]string{"fromUuid": sp[0], "toUuid": sp[1], "summary": sp[2]})
	}
	return s.add(parent, map[string]any{"type": "system", "subtype": "context_collapse_commit", "content": "Context collapsed", "level": "info",
		"collapseMetadata": map[string]any{"trigger": "staged", "preTokens": 9000, "tokensSaved": 4000, "spans": list}})
}

// TestLoadCollapsed: the loader collects the spans the commits of the
// chain it loads folded, in commit order; a rewind before a commit drops
// it, and a compact boundary makes earlier commits moot.
func TestLoadCollapsed(t *testing.T) {
	s := &script{}
	u1 := s.user("", "first")
	a1 := s.assistant(u1, "m1", text("one"))
	u2 := s.user(a1[0], "second")
	a2 := s.assistant(u2, "m2", text("two"))
	c1 := s.collapse(a2[0], [3]string{u1, a1[0], "S1"})
	u3 := s.user(c1, "third")
	a3 := s.assistant(u3, "m3", text("three"))
	c2 := s.collapse(a3[0], [3]string{u2, a2[0], "S2"}, [3]string{u3, a3[0], "S3"})
	u4 := s.user(c2, "fourth")
	a4 := s.assistant(u4, "m4", text("four"))
	s.lastPrompt(a4[0])
	b := s.bytes()

	t.Run("the chain", func(t *testing.T) {
		c := load(t, b, transcript.LoadOptions{})
		want := []transcript.CollapseSpan{{u1, a1[0], "S1"}, {u2, a2[0], "S2"}, {u3, a3[0], "S3"}}
		if diff := cmp.Diff(want, c.Collapsed); diff != "" {
			t.Errorf("Collapsed (-want +got):\n%s", diff)
		}
		// The commits are not messages: the history stays whole.
		want2 := []string{"user: first", "assistant: one", "user: second", "assistant: two", "user: third", "assistant: three", "user: fourth", "assistant: four"}
		if diff := cmp.Diff(want2, summary(c.Messages())); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
	})
	t.Run("rewound before a commit", func(t *testing.T) {
		c := load(t, b, transcript.LoadOptions{Leaf: a3[0]})
		if diff := cmp.Diff([]transcript.CollapseSpan{{u1, a1[0], "S1"}}, c.Collapsed); diff != "" {
			t.Errorf("Collapsed (-want +got):\n%s", diff)
		}
	})
	t.Run("none", func(t *testing.T) {
		if c := load(t, b, transcript.LoadOptions{Leaf: a2[0]}); c.Collapsed != nil {
			t.Errorf("Collapsed = %v before any commit", c.Collapsed)
		}
	})
}

func TestLoadCollapsedStopsAtCompaction(t *testing.T) {
	s := &script{}
	u := s.user("", "go")
	a := s.assistant(u, "m1", text("ok"))
	c := s.collapse(a[0], [3]string{u, a[0], "old"})
	cb := s.add("", map[string]any{"type": "system", "subtype": "compact_boundary", "logicalParentUuid": c, "content": "Conversation compacted", "compactMetadata": map[string]any{"trigger": "auto", "preTokens": 1}})
	sum := s.add(cb, map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "summary"}})
	a2 := s.assistant(sum, "m2", text("on"))
	s.lastPrompt(a2[0])
	if got := load(t, s.bytes(), transcript.LoadOptions{}).Collapsed; got != nil {
		t.Errorf("Collapsed = %v: a commit before the compaction counts", got)
	}
}

func TestLoadCollapsedBadMetadata(t *testing.T) {
	s := &script{}
	u := s.user("", "go")
	bad := s.add(u, map[string]any{"type": "system", "subtype": "context_collapse_commit", "collapseMetadata": "not an object"})
	half := s.collapse(bad, [3]string{u, "", "no end"})
	a := s.assistant(half, "m1", text("ok"))
	s.lastPrompt(a[0])
	c := load(t, s.bytes(), transcript.LoadOptions{})
	if c.Collapsed != nil || len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "context collapse commit") {
		t.Errorf("Collapsed %v, warnings %q", c.Collapsed, c.Warnings)
	}
}

// TestCollapseCommitRoundTrip: a commit cairn writes reads back with its
// metadata.
func TestCollapseCommitRoundTrip(t *testing.T) {
	e := transcript.Entry{Type: transcript.TypeSystem, Subtype: transcript.SubtypeCollapseCommit, UUID: "u", ParentUUID: "p",
		Extra: map[string]json.RawMessage{"collapseMetadata": json.RawMessage(`{"trigger":"blocking","preTokens":9,"tokensSaved":3,"spans":[{"fromUuid":"a","toUuid":"b","summary":"s"}]}`)}}
	line, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := transcript.DecodeEntry(line)
	if err != nil {
		t.Fatal(err)
	}
	md, err := back.DecodeCollapseMetadata()
	if err != nil {
		t.Fatal(err)
	}
	want := &transcript.CollapseMetadata{Trigger: "blocking", PreTokens: 9, TokensSaved: 3, Spans: []transcript.CollapseSpan{{"a", "b", "s"}}}
	if diff := cmp.Diff(want, md); diff != "" || !back.IsCollapseCommit() {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}
