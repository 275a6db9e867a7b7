package tui_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// staticSession is a session that only has a history: enough to draw.
type staticSession struct{ history []model.Message }

func (s *staticSession) ID() string        { return "bench" }
func (s *staticSession) Path() string      { return "" }
func (s *staticSession) ModelName() string { return "claude-sonnet-4-5" }
func (s *staticSession) Run(context.Context, string) iter.Seq2[engine.Event, error] {
	return func(func(engine.Event, error) bool) {}
}
func (s *staticSession) Compact(context.Context, string) (*engine.Compaction, error) { return nil, nil }
func (s *staticSession) Pin(context.Context, string) (compact.Pin, error)            { return compact.Pin{}, nil }
func (s *staticSession) History() []model.Message                                    { return s.history }
func (s *staticSession) Used(context.Context) (int64, error)                         { return 123_456, nil }
func (s *staticSession) Window() tokens.Window {
	return tokens.Window{Size: 200_000, MaxOutput: 32_000}
}
func (s *staticSession) RewindPlan(string) (*filehistory.Plan, error) {
	return &filehistory.Plan{}, nil
}
func (s *staticSession) Rewind(context.Context, string, bool, bool) (*filehistory.Plan, error) {
	return nil, nil
}
func (s *staticSession) Close() error                         { return nil }
func (s *staticSession) SetModel(string) error                { return nil }
func (s *staticSession) Rename(context.Context, string) error { return nil }
func (s *staticSession) Title() string                        { return "" }

// coreTools are the core tools, which say how their calls are drawn.
var coreTools, _ = tool.NewRegistry(tools.Core()...)

func (s *staticSession) Tools() *tool.Registry { return coreTools }

// syntheticHistory is n messages of a working session: prompts, replies
// in Markdown with lists and code, tool calls and their results.
func syntheticHistory(n int) []model.Message {
	var msgs []model.Message
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(fmt.Sprintf("step %d: make the parser handle case %d", i, i))}, IDs: []string{fmt.Sprintf("u%d", i)}})
		call := modeltest.ToolUse(fmt.Sprintf("toolu_%d", i), "Bash", fmt.Sprintf(`{"command":"go test ./parser -run Case%d"}`, i))
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: []model.Block{
			model.TextBlock(fmt.Sprintf("## Case %d\n\nThe parser fails on **case %d** because:\n\n- the lexer drops the `%d` token\n- the error is swallowed\n\n```go\nfunc parse%d(s string) error {\n\treturn nil\n}\n```", i, i, i, i)),
			call,
		}})
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(call.ID, strings.Repeat(fmt.Sprintf("ok  \texample.com/parser\t0.%03ds\n", i%1000), 6), false)}})
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock(fmt.Sprintf("Case %d passes now.", i))}})
	}
	return msgs[:n]
}

func newBenchModel(b *testing.B, n int) *tui.Model {
	m := tui.New(tui.Options{Session: &staticSession{history: syntheticHistory(n)}, Now: func() time.Time { return epoch }})
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	return m
}

// BenchmarkFrame draws the newest screen of a 5,000-message session.
func BenchmarkFrame(b *testing.B) {
	m := newBenchModel(b, 5000)
	m.View()
	b.ResetTimer()
	for b.Loop() {
		m.View()
	}
}

// BenchmarkScroll pages up through a 5,000-message session, a frame per
// key, from the newest message to the first and back: every frame
// renders the messages that come into view (their Markdown first).
func BenchmarkScroll(b *testing.B) {
	m := newBenchModel(b, 5000)
	m.View()
	pgup := tea.KeyPressMsg{Code: tea.KeyPgUp}
	end := tea.KeyPressMsg{Code: tea.KeyEnd, Mod: tea.ModCtrl}
	var worst time.Duration
	frames := 0
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		m.Update(pgup)
		f := m.View().Content
		if d := time.Since(start); d > worst {
			worst = d
		}
		frames++
		if strings.Contains(f, "step 0:") {
			m.Update(end)
		}
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms/frame")
}

// BenchmarkOpen is the first frame of a resumed 5,000-message session:
// loading the items and drawing the newest screen.
func BenchmarkOpen(b *testing.B) {
	h := syntheticHistory(5000)
	for b.Loop() {
		m := tui.New(tui.Options{Session: &staticSession{history: h}, Now: func() time.Time { return epoch }})
		m.Update(tea.WindowSizeMsg{Width: width, Height: height})
		m.View()
	}
}

// TestPagingReachesFirst pages up from the newest message of a
// 400-message session to the first: every frame fills the screen
// exactly, and the first prompt comes into view. How long a frame takes
// is BenchmarkScroll's to measure (its ns/op is one frame; the budget is
// 16 ms), not a test's.
func TestPagingReachesFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("draws thousands of messages")
	}
	m := tui.New(tui.Options{Session: &staticSession{history: syntheticHistory(400)}, Now: func() time.Time { return epoch }})
	m.Update(tea.WindowSizeMsg{Width: width, Height: height})
	if f := ansi.Strip(m.View().Content); !strings.Contains(f, "step 99: make the parser") {
		t.Fatalf("the first frame does not show the newest message:\n%s", f)
	}
	for frames := 1; ; frames++ {
		m.Update(tea.KeyPressMsg{Code: tea.KeyPgUp})
		f := ansi.Strip(m.View().Content)
		if n := strings.Count(f, "\n") + 1; n != height {
			t.Fatalf("frame %d has %d lines, want %d:\n%s", frames, n, height, f)
		}
		if strings.Contains(f, "step 0: make the parser") {
			return
		}
		if frames > 2_000 {
			t.Fatalf("%d pages up and the first prompt is not in view:\n%s", frames, f)
		}
	}
}
