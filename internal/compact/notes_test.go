package compact

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
)

// fixedNotes are notes whose Summary answers as set.
type fixedNotes struct {
	summary, covered string
	err              error
}

func (n fixedNotes) Summary(context.Context) (string, string, error) {
	return n.summary, n.covered, n.err
}

func TestFromNotes(t *testing.T) {
	w := tokens.Window{Size: 200_000, MaxOutput: 32_000}
	big := strings.Repeat("x", 4*3_000) // 3,000 tokens
	use := model.Block{Type: model.BlockToolUse, ID: "t", Name: "Bash", Input: []byte(`{}`)}
	history := []model.Message{
		msg("user", []string{"a"}, model.TextBlock("q")),
		msg("assistant", []string{"b"}, model.TextBlock(big)),
		msg("user", []string{"c"}, model.TextBlock(big)),
		msg("assistant", []string{"d"}, model.TextBlock(big), use),
		msg("user", []string{"e"}, model.ToolResultBlock("t", big, false)),
		msg("assistant", []string{"f"}, model.TextBlock(big)),
		msg("user", []string{"g"}, model.TextBlock("short")),
		msg("assistant", []string{"h"}, model.TextBlock("short")),
	}
	tail := preservedStart(history, w) // 10,000 tokens and 5 texts: from c
	if tail != 2 {
		t.Fatalf("preservedStart = %d; the test expects 2", tail)
	}
	for _, tc := range []struct {
		name     string
		notes    Notes
		trigger  string
		window   tokens.Window
		want     int
		fromNote bool
	}{
		{"no notes", nil, TriggerAuto, w, tail, false},
		{"empty notes", fixedNotes{}, TriggerAuto, w, tail, false},
		{"unreadable notes", fixedNotes{err: errors.New("boom")}, TriggerAuto, w, tail, false},
		{"manual compaction summarises", fixedNotes{summary: "N", covered: "h"}, TriggerManual, w, tail, false},
		{"covering everything keeps the tail", fixedNotes{summary: "N", covered: "h"}, TriggerAuto, w, tail, true},
		{"coverage unknown keeps the tail", fixedNotes{summary: "N"}, TriggerAuto, w, tail, true},
		{"uncovered messages are kept", fixedNotes{summary: "N", covered: "a"}, TriggerAuto, w, 1, true},
		{"covered message gone", fixedNotes{summary: "N", covered: "zz"}, TriggerAuto, w, tail, false},
		{"would not fit", fixedNotes{summary: "N", covered: "a"}, TriggerAuto, tokens.Window{Size: 35_000, MaxOutput: 4_000}, tail, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Config{Window: tc.window, Notes: tc.notes})
			s, keep, ok := m.fromNotes(t.Context(), history, tail, tc.trigger, nil, nil)
			if ok != tc.fromNote || keep != tc.want || (ok && s != "N") {
				t.Errorf("fromNotes = %q, %d, %v; want keep %d, %v", s, keep, ok, tc.want, tc.fromNote)
			}
		})
	}
	t.Run("never starts on results", func(t *testing.T) {
		// Covered up to a call: its results are kept, so the call is too.
		m := New(Config{Window: w, Notes: fixedNotes{summary: "N", covered: "d"}})
		if _, keep, ok := m.fromNotes(t.Context(), history, len(history), TriggerAuto, nil, nil); !ok || keep != 3 {
			t.Errorf("keep %d (%v), want 3", keep, ok)
		}
	})
}

// TestFromNotesEarly: an early compaction keeps exactly what the notes do
// not cover, at least the newest call and its results, never starting on
// results; it is not made when the notes do not say what they cover, or
// when what they leave uncovered is too large to gain much.
func TestFromNotesEarly(t *testing.T) {
	w := tokens.Window{Size: 200_000, MaxOutput: 32_000}
	big := strings.Repeat("x", 4*3_000) // 3,000 tokens
	call := func(id string) model.Block {
		return model.Block{Type: model.BlockToolUse, ID: id, Name: "Bash", Input: []byte(`{}`)}
	}
	history := []model.Message{
		msg("user", []string{"a"}, model.TextBlock("the task")),
		msg("assistant", []string{"b"}, call("t1")),
		msg("user", []string{"c"}, model.ToolResultBlock("t1", big, false)),
		msg("assistant", []string{"d"}, call("t2")),
		msg("user", []string{"e"}, model.ToolResultBlock("t2", big, false)),
		msg("assistant", []string{"f"}, call("t3")),
		msg("user", []string{"g"}, model.ToolResultBlock("t3", big, false)),
	}
	for _, tc := range []struct {
		name    string
		notes   fixedNotes
		earlyAt int64
		want    int
		ok      bool
	}{
		{"covered up to a call: from its call", fixedNotes{summary: "N", covered: "d"}, 20_000, 3, true},
		{"covered up to a result: after it", fixedNotes{summary: "N", covered: "c"}, 20_000, 3, true},
		{"everything covered: the newest call stays", fixedNotes{summary: "N", covered: "g"}, 20_000, 5, true},
		{"coverage unknown", fixedNotes{summary: "N"}, 20_000, 0, false},
		{"covered message gone", fixedNotes{summary: "N", covered: "zz"}, 20_000, 0, false},
		{"empty notes", fixedNotes{covered: "g"}, 20_000, 0, false},
		{"too much uncovered", fixedNotes{summary: "N", covered: "a"}, 10_000, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Config{Window: w, Notes: tc.notes, EarlyAt: tc.earlyAt})
			s, keep, ok := m.fromNotesEarly(t.Context(), history, nil, nil)
			if ok != tc.ok || (ok && (keep != tc.want || s != "N")) {
				t.Errorf("fromNotesEarly = %q, %d, %v; want keep %d, %v", s, keep, ok, tc.want, tc.ok)
			}
		})
	}
}
