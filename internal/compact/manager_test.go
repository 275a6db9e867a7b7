package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

func msg(role string, ids []string, blocks ...model.Block) model.Message {
	return model.Message{Role: role, Content: blocks, IDs: ids}
}

func TestPreservedStart(t *testing.T) {
	w := tokens.Window{Size: 200_000, MaxOutput: 32_000}
	big := strings.Repeat("x", 4*6_000) // 6,000 tokens
	use := model.Block{Type: model.BlockToolUse, ID: "t", Name: "Bash", Input: []byte(`{}`)}
	tests := []struct {
		name    string
		history []model.Message
		want    int
	}{
		{"keeps 10K tokens and 5 texts", []model.Message{
			msg("user", []string{"a"}, model.TextBlock("q")),
			msg("assistant", []string{"b"}, model.TextBlock(big)),
			msg("user", []string{"c"}, model.TextBlock(big)),
			msg("assistant", []string{"d"}, model.TextBlock(big)),
			msg("user", []string{"e"}, model.TextBlock("short")),
			msg("assistant", []string{"f"}, model.TextBlock("short")),
		}, 1}, // 5 text messages are only reached at b
		{"never starts on results whose call is summarised", []model.Message{
			msg("user", []string{"a"}, model.TextBlock("q")),
			msg("assistant", []string{"b"}, model.TextBlock(strings.Repeat(big, 8)), use), // over the 40K cap
			msg("user", []string{"c"}, model.ToolResultBlock("t", big, false)),
			msg("assistant", []string{"d"}, model.TextBlock("done")),
		}, 3},
		{"only messages the transcript holds", []model.Message{
			msg("user", []string{"a"}, model.TextBlock("q")),
			msg("assistant", []string{"b"}, model.TextBlock("x")),
			msg("user", nil, model.TextBlock("synthetic")),
			msg("assistant", []string{"d"}, model.TextBlock("y")),
		}, 3},
		{"the first message is always summarised", []model.Message{
			msg("user", []string{"a"}, model.TextBlock("q")),
			msg("assistant", []string{"b"}, model.TextBlock("x")),
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := preservedStart(tt.history, w); got != tt.want {
				t.Errorf("preservedStart = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLatestRequestsCarryOver(t *testing.T) {
	history := []model.Message{
		msg("user", []string{"a"}, model.TextBlock("first request"), model.TextBlock("<system-reminder>\ndate\n</system-reminder>")),
		msg("assistant", []string{"b"}, model.TextBlock("ok")),
		msg("user", []string{"c"}, model.TextBlock("[Request interrupted by user]")),
		msg("user", []string{"d"}, model.TextBlock("second request")),
	}
	a, ok := latestRequests(history, len(history))
	if !ok {
		t.Fatal("no requests found")
	}
	// A later compaction finds them in the survivors it left, beside a
	// result message, and adds what was typed since.
	later := []model.Message{
		msg("user", []string{"s"}, model.TextBlock(summaryText("S", ""))),
		msg("user", []string{"r"}, append([]model.Block{model.ToolResultBlock("t", "out", false)}, a.Rendered...)...),
		msg("assistant", []string{"x"}, model.TextBlock("ok")),
		msg("user", []string{"y"}, model.TextBlock("third request")),
		msg("user", []string{"z"}, model.TextBlock("fourth request")),
	}
	texts := func(a engine.Attachment) []string {
		var got []string
		for _, blk := range a.Rendered {
			got = append(got, strings.TrimSuffix(strings.TrimPrefix(blk.Text, requestHeader), "\n</system-reminder>"))
		}
		return got
	}
	// The first request (the task) and the last three survive.
	later = append(later, msg("user", []string{"v"}, model.TextBlock("fifth request")))
	b, _ := latestRequests(later, len(later))
	if diff := cmp.Diff([]string{"first request", "third request", "fourth request", "fifth request"}, texts(b)); diff != "" {
		t.Errorf("carried requests (-want +got):\n%s", diff)
	}
	// A request the kept tail holds is not carried as well: it would be
	// sent twice.
	c, _ := latestRequests(later, len(later)-2)
	if diff := cmp.Diff([]string{"first request", "second request", "third request"}, texts(c)); diff != "" {
		t.Errorf("carried requests with the last two kept (-want +got):\n%s", diff)
	}
}

func TestSummaryHelpers(t *testing.T) {
	if got := extractSummary("thinking...\n<summary>\nthe gist\n</summary>\ntrailing"); got != "the gist" {
		t.Errorf("extractSummary = %q", got)
	}
	if got := extractSummary("no tags at all"); got != "no tags at all" {
		t.Errorf("extractSummary without tags = %q", got)
	}
	orig := []model.Message{msg("user", nil, model.TextBlock("q")), msg("assistant", nil, model.TextBlock("a"))}
	out := appendInstruction(orig, "SUM")
	if len(out) != 3 || out[2].Text() != "SUM" || len(orig) != 2 {
		t.Errorf("after an assistant message the instruction is a new user message: %+v", out)
	}
	out = appendInstruction(out[:3], "AGAIN")
	if len(out) != 3 || len(out[2].Content) != 2 || out[2].Content[1].Text != "AGAIN" {
		t.Errorf("after a user message the instruction joins it: %+v", out)
	}
	if s := shorten(strings.Repeat("é", 100), 50); !strings.Contains(s, "characters cut") {
		t.Errorf("shorten: %q", s)
	}
	parts := chunks([]string{strings.Repeat("a", 30), strings.Repeat("b", 30), strings.Repeat("c", 500)}, 100)
	if len(parts) < 2 {
		t.Errorf("chunks = %d parts", len(parts))
	}
	for _, p := range parts {
		if len(p) > 100 {
			t.Errorf("a part of %d bytes exceeds 100", len(p))
		}
	}
}

func TestTrimKeepsTheNewestResults(t *testing.T) {
	var h []model.Message
	for i := range 6 {
		h = append(h, msg("user", nil, model.ToolResultBlock(string(rune('a'+i)), "result", false)))
	}
	out := trim(h)
	cleared := 0
	for _, m := range out {
		if m.Content[0].ResultText() == clearedText {
			cleared++
		}
	}
	if cleared != 3 || h[0].Content[0].ResultText() != "result" {
		t.Errorf("cleared %d of 6 (want the 3 oldest), and the input must not change", cleared)
	}
}

// TestTruncateNeverCutsTheNewest: the last resort drops the oldest
// history but keeps the newest call with its results, and a newest
// message that cannot fit at all is an error, not a silent cut.
func TestTruncateNeverCutsTheNewest(t *testing.T) {
	w := tokens.Window{Size: 8_192, MaxOutput: 4_096}
	call := model.Block{Type: model.BlockToolUse, ID: "t", Name: "Bash", Input: []byte(`{}`)}
	huge := strings.Repeat("x", 4*10_000)
	m := New(Config{Window: w, Transcript: &countTranscript{}})
	_, err := m.truncate(t.Context(), []model.Message{msg("user", []string{"a"}, model.TextBlock(huge))}, nil, nil, 10_000)
	if !errors.Is(err, ErrDoesNotFit) {
		t.Errorf("a 10,000-token prompt in an 8K window: %v, want ErrDoesNotFit", err)
	}
	history := []model.Message{
		msg("user", []string{"a"}, model.TextBlock("the task")),
		msg("assistant", []string{"b"}, call),
		msg("user", []string{"c"}, model.ToolResultBlock("t", strings.Repeat("y", 4*4_000), false)),
	}
	res, err := m.truncate(t.Context(), history, nil, nil, 4_100)
	if err != nil {
		t.Fatalf("a 4,000-token result fits the 6,144-token effective window, yet: %v", err)
	}
	// Over half the window, the result would once have been dropped with
	// its call; now only the task is.
	if want := "dropped the oldest 1 messages"; !strings.Contains(res.report.Summary, want) {
		t.Errorf("truncate: %q, want %q", res.report.Summary, want)
	}
}

// countTranscript is a Transcript that keeps nothing.
type countTranscript struct{ n int }

func (c *countTranscript) Leaf() string { return "root" }
func (c *countTranscript) NewEntry(typ, parent string) transcript.Entry {
	c.n++
	return transcript.Entry{Type: typ, ParentUUID: parent, UUID: fmt.Sprint("e", c.n)}
}
func (c *countTranscript) Append(context.Context, ...transcript.Entry) error { return nil }
func (c *countTranscript) Reload(context.Context) ([]model.Message, error)   { return nil, nil }
func (c *countTranscript) Path() string                                      { return "" }
