package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/transcript"
)

// memTranscript is a Transcript that keeps what is appended.
type memTranscript struct {
	entries []transcript.Entry
	n       int
}

func (m *memTranscript) Leaf() string {
	if len(m.entries) == 0 {
		return "root"
	}
	return m.entries[len(m.entries)-1].UUID
}
func (m *memTranscript) NewEntry(typ, parent string) transcript.Entry {
	m.n++
	return transcript.Entry{Type: typ, ParentUUID: parent, UUID: fmt.Sprintf("e%d", m.n)}
}
func (m *memTranscript) Append(_ context.Context, entries ...transcript.Entry) error {
	m.entries = append(m.entries, entries...)
	return nil
}
func (m *memTranscript) Reload(context.Context) ([]model.Message, error) { return nil, nil }
func (m *memTranscript) Path() string                                    { return "" }

// calls builds a conversation of tool calls, one response each: names[i]
// is called as toolu_<i+1> and answers with size bytes.
func calls(size int, names ...string) []model.Message {
	h := []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock("go")}}}
	for i, n := range names {
		id := fmt.Sprintf("toolu_%d", i+1)
		h = append(h,
			model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockToolUse, ID: id, Name: n, Input: json.RawMessage(`{}`)}}},
			model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(id, strings.Repeat("r", size), false)}})
	}
	return h
}

func repeat(n int, name string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name
	}
	return out
}

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func apply(t *testing.T, m *compact.Micro, history []model.Message, now time.Time) (*compact.State, int64) {
	t.Helper()
	p := &engine.Prep{History: history, Tools: []model.ToolSpec{{Name: "Read"}, {Name: "TodoWrite"}, {Name: "Bash"}}}
	st := &compact.State{Prep: p, Send: history, Used: 50_000, Freed: map[string]int64{}, Window: tokens.Window{Size: 200_000, MaxOutput: 32_000}, Now: now}
	freed, err := m.Apply(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	return st, freed
}

// clearedIDs returns the ids of the results in msgs that hold the
// placeholder, and checks every tool_use still has its result.
func clearedIDs(t *testing.T, msgs []model.Message) []string {
	t.Helper()
	var out []string
	open := map[string]bool{}
	for _, m := range msgs {
		for _, b := range m.Content {
			switch b.Type {
			case model.BlockToolUse:
				open[b.ID] = true
			case model.BlockToolResult:
				if !open[b.ToolUseID] {
					t.Errorf("result %s without its call", b.ToolUseID)
				}
				delete(open, b.ToolUseID)
				if b.ResultText() == compact.ClearedText {
					out = append(out, b.ToolUseID)
				}
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("calls without results: %v", open)
	}
	return out
}

func TestMicroCountTrigger(t *testing.T) {
	names := append(repeat(7, "Read"), "TodoWrite", "Bash")
	tests := []struct {
		name    string
		cfg     compact.MicroConfig
		cleared []string
	}{
		{"under the count", compact.MicroConfig{Count: 9, KeepRecent: 3, ClearAtLeast: -1}, nil},
		{"at the count keeps the newest", compact.MicroConfig{Count: 8, KeepRecent: 3, ClearAtLeast: -1},
			[]string{"toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"}},
		{"default keeps 5", compact.MicroConfig{Count: 8, ClearAtLeast: -1},
			[]string{"toolu_1", "toolu_2", "toolu_3"}},
		{"not enough to free", compact.MicroConfig{Count: 8, KeepRecent: 3, ClearAtLeast: 5 * 1000}, nil},
		{"enough to free", compact.MicroConfig{Count: 8, KeepRecent: 3, ClearAtLeast: 5 * 990}, []string{"toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"}},
		{"only the tools named", compact.MicroConfig{Count: 2, KeepRecent: 1, ClearAtLeast: -1, Tools: []string{"TodoWrite", "Bash"}}, []string{"toolu_8"}},
		{"disabled", compact.MicroConfig{Count: 1, KeepRecent: 1, ClearAtLeast: -1, Disabled: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			history := calls(4000, names...) // 1,000 tokens a result
			before := fmt.Sprint(history)
			m := newMicro(tt.cfg)
			st, freed := apply(t, m, history, t0)
			if diff := cmp.Diff(tt.cleared, clearedIDs(t, st.Send)); diff != "" {
				t.Errorf("cleared (-want +got):\n%s", diff)
			}
			if want := int64(len(tt.cleared)) * (1000 - tokens.Estimate(compact.ClearedText)); freed != want {
				t.Errorf("freed %d tokens, want %d", freed, want)
			}
			if fmt.Sprint(history) != before {
				t.Error("the history itself was changed")
			}
		})
	}
}

func TestMicroTimeTrigger(t *testing.T) {
	tests := []struct {
		name    string
		since   time.Time
		now     time.Time
		cleared int
	}{
		{"new session", time.Time{}, t0, 0},
		{"cache warm", t0, t0.Add(59 * time.Minute), 0},
		{"cache cold", t0, t0.Add(time.Hour), 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &memTranscript{}
			m := newMicro(compact.MicroConfig{KeepRecent: 2, Since: tt.since, Transcript: tr}) // count 30: never here
			st, _ := apply(t, m, calls(4000, repeat(9, "Read")...), tt.now)
			if got := len(clearedIDs(t, st.Send)); got != tt.cleared {
				t.Errorf("%d cleared, want %d", got, tt.cleared)
			}
			if tt.cleared > 0 {
				md, err := tr.entries[0].DecodeMicrocompactMetadata()
				if err != nil || md.Trigger != compact.MicroTime {
					t.Errorf("boundary %+v, %v", md, err)
				}
			}
		})
	}
}

// TestMicroBatchesAreStable: a result cleared stays cleared in every later
// request, and nothing else changes until the next batch.
func TestMicroBatchesAreStable(t *testing.T) {
	tr := &memTranscript{}
	m := newMicro(compact.MicroConfig{Count: 6, KeepRecent: 2, ClearAtLeast: -1, Transcript: tr})
	names := repeat(12, "Read")
	var sends [][]string
	var total int64
	for n := 1; n <= len(names); n++ {
		st, freed := apply(t, m, calls(4000, names[:n]...), t0.Add(time.Duration(n)*time.Minute))
		total += freed
		sends = append(sends, clearedIDs(t, st.Send))
	}
	// Batches at 6 live results: after call 6 (1–4 cleared), after call
	// 10 (5–8 cleared).
	for n, got := range sends {
		var want []string
		switch {
		case n+1 >= 10:
			want = []string{"toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5", "toolu_6", "toolu_7", "toolu_8"}
		case n+1 >= 6:
			want = []string{"toolu_1", "toolu_2", "toolu_3", "toolu_4"}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d cleared (-want +got):\n%s", n+1, diff)
		}
	}
	if len(tr.entries) != 2 {
		t.Fatalf("%d boundaries written, want 2", len(tr.entries))
	}
	var saved int64
	for i, e := range tr.entries {
		md, err := e.DecodeMicrocompactMetadata()
		if err != nil {
			t.Fatal(err)
		}
		if e.Subtype != transcript.SubtypeMicrocompactBoundary || md.Trigger != compact.MicroCount || len(md.CompactedToolIDs) != 4 || md.PreTokens != 50_000 {
			t.Errorf("boundary %d: %s %+v", i, e.Subtype, md)
		}
		saved += md.TokensSaved
	}
	if saved != total || total != 8*(1000-tokens.Estimate(compact.ClearedText)) {
		t.Errorf("tokens saved: boundaries %d, Apply %d", saved, total)
	}
	if diff := cmp.Diff(sends[len(sends)-1], m.Cleared()); diff != "" {
		t.Errorf("Cleared() (-want +got):\n%s", diff)
	}
	// A compaction starts afresh.
	m.Reset()
	if st, _ := apply(t, m, calls(4000, names[:4]...), t0.Add(20*time.Minute)); len(clearedIDs(t, st.Send)) != 0 || len(m.Cleared()) != 0 {
		t.Error("cleared after a reset")
	}
}

// TestMicroResumed: a session resumed with the cleared ids sends them
// cleared without a new boundary.
func TestMicroResumed(t *testing.T) {
	tr := &memTranscript{}
	m := newMicro(compact.MicroConfig{Transcript: tr, Cleared: map[string]bool{"toolu_1": true, "toolu_3": true}, Since: t0})
	st, freed := apply(t, m, calls(4000, repeat(4, "Read")...), t0.Add(time.Minute))
	if diff := cmp.Diff([]string{"toolu_1", "toolu_3"}, clearedIDs(t, st.Send)); diff != "" {
		t.Errorf("cleared (-want +got):\n%s", diff)
	}
	if freed != 0 || len(tr.entries) != 0 {
		t.Errorf("freed %d, %d boundaries: resuming clears nothing new", freed, len(tr.entries))
	}
}

func TestMicroServerSide(t *testing.T) {
	history := calls(4000, append(repeat(40, "Read"), "TodoWrite")...)
	cfg := compact.MicroConfig{ServerSide: true, KeepRecent: 4, ServerTrigger: 30_000, Since: t0}

	t.Run("warm cache: the server clears", func(t *testing.T) {
		m := newMicro(cfg)
		st, freed := apply(t, m, history, t0.Add(4*time.Minute))
		if len(clearedIDs(t, st.Send)) != 0 || freed != 0 {
			t.Error("cleared client-side while the cache is warm")
		}
		want := `{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":30000},"keep":{"type":"tool_uses","value":4},"clear_at_least":{"type":"input_tokens","value":10000},"exclude_tools":["TodoWrite"]}]}`
		if got := string(st.Prep.ContextManagement); got != want {
			t.Errorf("context_management\n got %s\nwant %s", got, want)
		}
		if diff := cmp.Diff([]string{compact.ContextManagementBeta}, st.Prep.Betas); diff != "" {
			t.Errorf("betas (-want +got):\n%s", diff)
		}
	})
	t.Run("cold cache: cleared client-side too", func(t *testing.T) {
		m := newMicro(cfg)
		st, _ := apply(t, m, history, t0.Add(2*time.Hour))
		if got := len(clearedIDs(t, st.Send)); got != 36 {
			t.Errorf("%d cleared, want all Read results but the newest 4", got)
		}
		if st.Prep.ContextManagement == nil {
			t.Error("no context_management")
		}
	})
	t.Run("nothing to clear: no edit", func(t *testing.T) {
		m := newMicro(cfg)
		st, _ := apply(t, m, calls(10, "TodoWrite"), t0)
		if st.Prep.ContextManagement != nil || st.Prep.Betas != nil {
			t.Errorf("edit without compactable results: %s", st.Prep.ContextManagement)
		}
	})
}

// TestManagerFreedCountsMicro: the Manager reports what the layer freed,
// each result once.
func TestManagerFreedCountsMicro(t *testing.T) {
	now := t0
	mgr := compact.New(compact.Config{Window: tokens.Window{Size: 1_000_000, MaxOutput: 32_000}, Now: func() time.Time { return now }})
	mgr.AddLayer(newMicro(compact.MicroConfig{Count: 3, KeepRecent: 1, ClearAtLeast: -1}))
	names := repeat(6, "Read")
	for n := 1; n <= len(names); n++ {
		now = now.Add(time.Minute)
		h := calls(4000, names[:n]...)
		p := &engine.Prep{History: h, Used: tokens.EstimateMessages(h)}
		if err := mgr.Prepare(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		if n >= 3 && p.Send == nil {
			t.Errorf("request %d: nothing projected", n)
		}
	}
	// Batches after calls 3 (1, 2) and 5 (3, 4).
	if got, want := mgr.Freed()["micro"], 4*(1000-tokens.Estimate(compact.ClearedText)); got != want {
		t.Errorf("Freed()[micro] = %d, want %d", got, want)
	}
}

// BenchmarkMicroApply is the layer's cost on every request of a long
// session: 300 Read results, 150K tokens, 240 of them cleared already.
func BenchmarkMicroApply(b *testing.B) {
	history := calls(2000, repeat(300, "Read")...)
	cleared := map[string]bool{}
	for i := 1; i <= 240; i++ {
		cleared[fmt.Sprintf("toolu_%d", i)] = true
	}
	m := newMicro(compact.MicroConfig{Cleared: cleared, Count: 1000})
	w := tokens.Window{Size: 200_000, MaxOutput: 32_000}
	b.ReportAllocs()
	for b.Loop() {
		st := &compact.State{Prep: &engine.Prep{History: history}, Send: history, Freed: map[string]int64{}, Window: w, Now: t0}
		if _, err := m.Apply(context.Background(), st); err != nil {
			b.Fatal(err)
		}
	}
}

// newMicro is the layer with the core tools whose results can be
// obtained again, as a session's registry lists them.
func newMicro(cfg compact.MicroConfig) *compact.Micro {
	if cfg.Tools == nil {
		cfg.Tools = []string{"Read", "Bash", "Grep", "Glob", "WebFetch", "Edit", "Write"}
	}
	return compact.NewMicro(cfg)
}

// TestMicroFindsTheCallFarFromItsResult: a result is matched to the
// latest call with its id before it, wherever that call is — in the
// message before (the usual case), further back, or again after an
// earlier call of the same id to another tool.
func TestMicroFindsTheCallFarFromItsResult(t *testing.T) {
	use := func(id, name string) model.Block {
		return model.Block{Type: model.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(`{}`)}
	}
	result := func(id string) model.Block { return model.ToolResultBlock(id, strings.Repeat("r", 4000), false) }
	history := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("go")}},
		{Role: model.RoleAssistant, Content: []model.Block{use("far", "Read"), use("dup", "TodoWrite")}},
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("meanwhile")}},
		{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("still")}},
		{Role: model.RoleUser, Content: []model.Block{result("far"), result("dup")}},
		{Role: model.RoleAssistant, Content: []model.Block{use("dup", "Read"), use("near", "TodoWrite")}},
		{Role: model.RoleUser, Content: []model.Block{result("dup"), result("near")}},
		{Role: model.RoleAssistant, Content: []model.Block{use("last", "Read")}},
		{Role: model.RoleUser, Content: []model.Block{result("last")}},
	}
	m := newMicro(compact.MicroConfig{Count: 1, KeepRecent: 1, ClearAtLeast: -1, Tools: []string{"Read"}})
	st, _ := apply(t, m, history, t0)
	var cleared []string
	for i, msg := range st.Send {
		for _, b := range msg.Content {
			if b.Type == model.BlockToolResult && b.ResultText() == compact.ClearedText {
				cleared = append(cleared, fmt.Sprint(i, b.ToolUseID))
			}
		}
	}
	// The Read results but the newest: "far" three messages after its
	// call, the second "dup" (a Read), not the first (a TodoWrite).
	if diff := cmp.Diff([]string{"4far", "6dup"}, cleared); diff != "" {
		t.Errorf("cleared (-want +got):\n%s", diff)
	}
}

// TestMicroRecordAfterCompaction: a clearing made on a request that is
// compacted anyway is not recorded (the compaction's boundary makes it
// moot), though the summary reads the results cleared; one made on a
// request that goes out as it is, over the threshold, is.
func TestMicroRecordAfterCompaction(t *testing.T) {
	w := tokens.Window{Size: 200_000, MaxOutput: 32_000}
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprint("auto-compaction off: ", disabled), func(t *testing.T) {
			tr := &memTranscript{}
			var summarised []model.Message
			mdl := &modeltest.Scripted{Answer: func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
				summarised = req.Messages
				return []model.Block{model.TextBlock("<summary>done</summary>")}, nil
			}}
			mgr := compact.New(compact.Config{Model: mdl, Window: w, Transcript: tr, Disabled: disabled, Now: func() time.Time { return t0.Add(2 * time.Hour) }})
			mgr.AddLayer(newMicro(compact.MicroConfig{Tools: []string{"Read"}, Transcript: tr, Since: t0}))
			h := calls(4000, repeat(60, "Read")...)
			for i := range h {
				h[i].IDs = []string{fmt.Sprint("m", i)}
			}
			p := &engine.Prep{History: h, Used: w.AutoCompactAt() + 100_000}
			if err := mgr.Prepare(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			var micro, boundary int
			for _, e := range tr.entries {
				switch {
				case e.IsMicrocompactBoundary():
					micro++
				case e.IsCompactBoundary():
					boundary++
				}
			}
			if disabled {
				if micro != 1 || boundary != 0 || len(clearedIDs(t, p.Send)) != 55 {
					t.Errorf("sent as it is: %d clearings and %d compactions recorded, %d results cleared; want 1, 0, 55", micro, boundary, len(clearedIDs(t, p.Send)))
				}
				return
			}
			if micro != 0 || boundary != 1 {
				t.Errorf("compacted: %d clearings and %d compactions recorded, want 0 and 1", micro, boundary)
			}
			if got := len(clearedIDs(t, summarised)); got != 55 {
				t.Errorf("the summary read %d results cleared, want 55", got)
			}
		})
	}
}
