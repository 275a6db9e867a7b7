package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/transcript"
)

// foldModel answers fold requests with a summary for each part they
// list, or, when fail is set, fails every request with it.
func foldModel(fail error) *modeltest.Scripted {
	return &modeltest.Scripted{Answer: func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		if fail != nil {
			return nil, fail
		}
		var body strings.Builder
		for _, m := range req.Messages {
			for _, b := range m.Content {
				body.WriteString(b.Text)
			}
		}
		var out strings.Builder
		for _, m := range partRE.FindAllStringSubmatch(body.String(), -1) {
			n := m[1] + m[2]
			fmt.Fprintf(&out, "<fold n=%q>S%s</fold>\n", n, n)
		}
		return []model.Block{model.TextBlock(out.String())}, nil
	}}
}

var partRE = regexp.MustCompile(`(?m)^(\d+)\. from |<part n="(\d+)">`)

// linesTranscript is a memTranscript whose lines say what messages are
// made of.
type linesTranscript struct {
	memTranscript
	lines []transcript.Entry
}

func (l *linesTranscript) Lines(context.Context) ([][]*transcript.Entry, error) {
	return [][]*transcript.Entry{pointers(l.lines)}, nil
}

// pointers returns pointers to the elements of entries.
func pointers(entries []transcript.Entry) []*transcript.Entry {
	out := make([]*transcript.Entry, len(entries))
	for i := range entries {
		out[i] = &entries[i]
	}
	return out
}

func text(s string) model.Block { return model.TextBlock(s) }

// history is a conversation of turns, each a prompt and two tool steps of
// about 1,000 tokens, with what must never be folded sprinkled in.
func protectedHistory() ([]model.Message, map[string]string) {
	big := strings.Repeat("w", 4_000)
	why := map[string]string{}
	var h []model.Message
	n := 0
	add := func(role string, reason string, blocks ...model.Block) {
		n++
		id := fmt.Sprintf("m%02d", n)
		h = append(h, model.Message{Role: role, Content: blocks, IDs: []string{id}})
		if reason != "" {
			why[id] = reason
		}
	}
	step := func(tool string, reason string) {
		id := fmt.Sprintf("toolu_%d", n)
		add(model.RoleAssistant, reason, model.Block{Type: model.BlockToolUse, ID: id, Name: tool, Input: json.RawMessage(`{}`)})
		add(model.RoleUser, reason, model.ToolResultBlock(id, big, false))
	}
	add(model.RoleUser, "first", text("<system-reminder>\nAs you answer, use this context:\n# claudeMd\nContents of /p/CLAUDE.md:\nrules\n</system-reminder>"), text("start the work"))
	step("Bash", "")
	step("TodoWrite", "todo")
	add(model.RoleAssistant, "", text("first part done"))
	add(model.RoleUser, "", text("second request"))
	step("Bash", "")
	step("Bash", "denied") // its result line records a denial
	step("Bash", "pinned")
	add(model.RoleAssistant, "", text("second part done"))
	add(model.RoleUser, "", text("third request"))
	step("Bash", "")
	step("ExitPlanMode", "plan")
	step("Bash", "")
	add(model.RoleAssistant, "", text("third part done"))
	add(model.RoleUser, "prompt", text("fourth request"))
	step("Bash", "")
	step("Bash", "")
	add(model.RoleAssistant, "", text("fourth part done"))
	add(model.RoleUser, "prompt", text("fifth request"))
	step("Bash", "")
	add(model.RoleAssistant, "", text("fifth part done"))
	add(model.RoleUser, "prompt", text("sixth request"))
	step("Bash", "recent")
	step("Bash", "recent")
	return h, why
}

// TestCollapseNeverFoldsWhatIsProtected folds a conversation past the
// blocking threshold: every span folded is free of protected messages, the
// history stays whole, and what is sent holds the summaries.
func TestCollapseNeverFoldsWhatIsProtected(t *testing.T) {
	h, why := protectedHistory()
	tr := &linesTranscript{}
	for _, m := range h {
		e := transcript.Entry{Type: transcript.TypeUser, UUID: m.IDs[0]}
		if why[m.IDs[0]] == "denied" && m.Role == model.RoleUser {
			e.Extra = map[string]json.RawMessage{"permissionDecision": json.RawMessage(`{"decision":"deny","by":"user"}`)}
		}
		tr.lines = append(tr.lines, e)
	}
	pins := &compact.Pins{}
	for id, r := range why {
		if r == "pinned" {
			pins.Add(compact.Pin{Text: "x", Message: id})
		}
	}
	fm := foldModel(nil)
	c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", Transcript: tr, Pins: pins, SpanTokens: 2_500, KeepRecent: 0.1})
	defer c.Close()
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // blocks at 23,000
	orig := encodeAll(t, h)
	p := &engine.Prep{History: h}
	st := &compact.State{Prep: p, Send: h, Used: 30_000, Freed: map[string]int64{}, Window: w}
	freed, err := c.Apply(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	spans := c.Committed()
	if len(spans) == 0 || freed <= 0 || len(fm.Requests()) != 1 {
		t.Fatalf("%d spans committed, %d freed, %d fold requests (notices %q)", len(spans), freed, len(fm.Requests()), p.Notices)
	}
	at := map[string]int{}
	for i, m := range h {
		at[m.IDs[0]] = i
	}
	folded := map[string]bool{}
	for _, s := range spans {
		for i := at[s.FromUUID]; i <= at[s.ToUUID]; i++ {
			id := h[i].IDs[0]
			folded[id] = true
			if r := why[id]; r != "" {
				t.Errorf("%s (%s) was folded", id, r)
			}
		}
	}
	if !folded["m02"] || !folded["m08"] || !folded["m16"] {
		t.Errorf("folded %v: the ordinary steps of the first turns should be", folded)
	}
	if diff := cmp.Diff(orig, encodeAll(t, h)); diff != "" {
		t.Errorf("the history changed:\n%s", diff)
	}
	var summaries int
	for _, m := range st.Send {
		for _, b := range m.Content {
			if strings.HasPrefix(b.Text, "[Collapsed: S") {
				summaries++
			}
		}
	}
	if summaries != len(spans) || len(st.Send) >= len(h) {
		t.Errorf("%d summaries sent for %d spans; %d messages sent of %d", summaries, len(spans), len(st.Send), len(h))
	}
	// The commit line records the spans.
	if len(tr.entries) != 1 || !tr.entries[0].IsCollapseCommit() {
		t.Fatalf("transcript %+v", tr.entries)
	}
	md, err := tr.entries[0].DecodeCollapseMetadata()
	if err != nil || md.Trigger != compact.CollapseBlocking || !cmp.Equal(md.Spans, spans) || md.TokensSaved != freed {
		t.Errorf("commit %+v, %v", md, err)
	}
	// The next request sends the same projection, and frees nothing new.
	st2 := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: 30_000 - freed, Freed: map[string]int64{}, Window: w}
	if f, _ := c.Apply(t.Context(), st2); f != 0 || !cmp.Equal(encodeAll(t, st.Send), encodeAll(t, st2.Send)) {
		t.Errorf("the next request freed %d or sent another projection", f)
	}
}

func encodeAll(t *testing.T, msgs []model.Message) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestCollapseResumeProjection: a layer given the spans a transcript
// records sends exactly what the live one sent; spans that no longer
// apply (a message snipped away, a tool call parted from its result) are
// sent whole.
func TestCollapseResumeProjection(t *testing.T) {
	h, _ := protectedHistory()
	fm := foldModel(nil)
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000}
	live := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", SpanTokens: 2_500, KeepRecent: 0.1})
	defer live.Close()
	st := &compact.State{Prep: &engine.Prep{}, Send: h, Used: 30_000, Freed: map[string]int64{}, Window: w}
	if _, err := live.Apply(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	resumed := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", Collapsed: live.Committed()})
	st2 := &compact.State{Prep: &engine.Prep{}, Send: h, Used: 1_000, Freed: map[string]int64{}, Window: w}
	if _, err := resumed.Apply(t.Context(), st2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(encodeAll(t, st.Send), encodeAll(t, st2.Send)); diff != "" {
		t.Errorf("resumed projection (-live +resumed):\n%s", diff)
	}
	bad := compact.NewCollapse(compact.CollapseConfig{Collapsed: []transcript.CollapseSpan{
		{FromUUID: "gone", ToUUID: "m03", Summary: "x"},
		{FromUUID: "m03", ToUUID: "m04", Summary: "starts on results"},
		{FromUUID: "m02", ToUUID: "m02", Summary: "parts a call from its result"},
	}})
	st3 := &compact.State{Prep: &engine.Prep{}, Send: h, Used: 1_000, Freed: map[string]int64{}, Window: w}
	if _, err := bad.Apply(t.Context(), st3); err != nil {
		t.Fatal(err)
	}
	if len(st3.Send) != len(h) {
		t.Errorf("spans that do not apply were folded: %d messages of %d", len(st3.Send), len(h))
	}
}

// TestCollapseThresholds: with a window large enough that 95% of it comes
// before the auto-compaction threshold, a context past the staging and
// commit thresholds only starts a background fold, and one past 95%
// folds before the request goes.
func TestCollapseThresholds(t *testing.T) {
	w := tokens.Window{Size: 1_000_000, MaxOutput: 32_000} // effective 980,000: stages at 773,600, blocks at 931,000, compacts at 967,000
	h, _ := protectedHistory()
	for _, tt := range []struct {
		name    string
		used    int64
		folded  bool // in this request
		started bool // in the background
	}{
		{"below staging", 700_000, false, false},
		{"past commit, below 95%", 920_000, false, true},
		{"past 95%", 940_000, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fm := foldModel(nil)
			events := make(chan compact.CollapseEvent, 8)
			c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", KeepRecent: 0.001, SpanTokens: 2_500,
				Notify: func(e compact.CollapseEvent) { events <- e }})
			defer c.Close()
			st := &compact.State{Prep: &engine.Prep{}, Send: h, Used: tt.used, Freed: map[string]int64{}, Window: w}
			freed, err := c.Apply(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if got := freed > 0; got != tt.folded {
				t.Errorf("freed %d in this request, want folded = %v", freed, tt.folded)
			}
			started := false
			for len(events) > 0 {
				started = started || (<-events).Kind == "started"
			}
			if started != tt.started {
				t.Errorf("a background fold started = %v, want %v", started, tt.started)
			}
			if !started {
				return
			}
			if e := <-events; e.Kind != "staged" || e.Spans == 0 {
				t.Fatalf("event %+v", e)
			}
			// Ready: the next request past the commit threshold commits it.
			st = &compact.State{Prep: &engine.Prep{}, Send: h, Used: tt.used, Freed: map[string]int64{}, Window: w}
			if freed, _ := c.Apply(t.Context(), st); freed <= 0 || len(c.Committed()) == 0 {
				t.Errorf("the staged fold was not committed: freed %d", freed)
			}
		})
	}
}

// TestCollapseFailedFoldNotRetriedAtOnce: a synchronous fold that fails at
// the blocking threshold is not sent again, in the background, by the
// same request: the retry waits until the context has grown.
func TestCollapseFailedFoldNotRetriedAtOnce(t *testing.T) {
	h, _ := protectedHistory()
	fm := foldModel(fmt.Errorf("overloaded"))
	var events []string
	c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", SpanTokens: 2_500, KeepRecent: 0.1,
		Notify: func(e compact.CollapseEvent) { events = append(events, e.Kind) }})
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // blocks at 23,000
	for range 2 {
		st := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: 30_000, Freed: map[string]int64{}, Window: w}
		if _, err := c.Apply(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if len(fm.Requests()) != 1 || len(events) != 0 {
		t.Errorf("%d fold requests, events %q: want the one that failed only", len(fm.Requests()), events)
	}
}

// TestCollapseStagedPinnedNotCommitted: a message pinned while its span
// was being folded in the background is not folded: the span is dropped
// at the commit.
func TestCollapseStagedPinnedNotCommitted(t *testing.T) {
	w := tokens.Window{Size: 1_000_000, MaxOutput: 32_000} // commits at 870,300, blocks at 931,000
	h, _ := protectedHistory()
	events := make(chan compact.CollapseEvent, 8)
	pins := &compact.Pins{}
	c := compact.NewCollapse(compact.CollapseConfig{Model: foldModel(nil), ModelName: "m", KeepRecent: 0.001, SpanTokens: 2_500, Pins: pins,
		Notify: func(e compact.CollapseEvent) { events <- e }})
	defer c.Close()
	st := &compact.State{Prep: &engine.Prep{}, Send: h, Used: 920_000, Freed: map[string]int64{}, Window: w}
	if _, err := c.Apply(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if e := <-events; e.Kind != "started" {
		t.Fatalf("event %+v", e)
	}
	if e := <-events; e.Kind != "staged" || e.Spans == 0 {
		t.Fatalf("event %+v", e)
	}
	for _, m := range h {
		pins.Add(compact.Pin{Text: "x", Message: m.IDs[0]})
	}
	st = &compact.State{Prep: &engine.Prep{}, Send: h, Used: 920_000, Freed: map[string]int64{}, Window: w}
	if freed, _ := c.Apply(t.Context(), st); freed != 0 || len(c.Committed()) != 0 {
		t.Errorf("freed %d, committed %+v: a pinned message was folded", freed, c.Committed())
	}
}

// callingModel answers every request with a tool call after a line of
// text, as a model that ignores the fold instruction does.
func callingModel() *modeltest.Scripted {
	return &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) {
		return []model.Block{model.TextBlock("Let me look at the file first."), modeltest.ToolUse("toolu_x", "Read", `{}`)}, nil
	}}
}

// TestCollapseFoldAnsweredWithCall: a fold request answered with a tool
// call instead of summaries folds nothing — the text before the call is
// not a summary of the span.
func TestCollapseFoldAnsweredWithCall(t *testing.T) {
	h := []model.Message{{Role: model.RoleUser, Content: []model.Block{text("start the work")}, IDs: []string{"p1"}}}
	for i := range 10 {
		id := fmt.Sprintf("toolu_%d", i)
		h = append(h,
			model.Message{Role: model.RoleAssistant, Content: []model.Block{{Type: model.BlockToolUse, ID: id, Name: "Bash", Input: json.RawMessage(`{}`)}}, IDs: []string{fmt.Sprintf("a%d", i)}},
			model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(id, strings.Repeat("w", 8_000), false)}, IDs: []string{fmt.Sprintf("r%d", i)}})
	}
	fm := callingModel()
	c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", Transcript: &memTranscript{}, SpanTokens: 100_000, KeepRecent: 0.1})
	defer c.Close()
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // blocks at 23,000
	st := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: 30_000, Freed: map[string]int64{}, Window: w}
	if _, err := c.Apply(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if n := len(fm.Requests()); n != 1 {
		t.Fatalf("%d fold requests, want 1", n)
	}
	if spans := c.Committed(); len(spans) != 0 {
		t.Errorf("committed %+v: the preamble of a tool call became a summary", spans)
	}
}

// TestCollapseStopsAfterFailuresInARow: folds that keep failing stop after
// three in a row, with one notice saying so; the context may grow as it
// likes, no more fold requests go out.
func TestCollapseStopsAfterFailuresInARow(t *testing.T) {
	h, _ := protectedHistory()
	fm := foldModel(fmt.Errorf("overloaded"))
	c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", SpanTokens: 2_500, KeepRecent: 0.1})
	defer c.Close()
	w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // blocks at 23,000
	var notices []string
	for used := int64(24_000); used < 40_000; used += 1_500 {
		st := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: used, Freed: map[string]int64{}, Window: w}
		if _, err := c.Apply(t.Context(), st); err != nil {
			t.Fatal(err)
		}
		notices = append(notices, st.Prep.Notices...)
	}
	if n := len(fm.Requests()); n != 3 {
		t.Errorf("%d fold requests, want 3 and then none", n)
	}
	off := 0
	for _, n := range notices {
		if strings.Contains(n, "no more folds this session") {
			off++
		}
	}
	if off != 1 {
		t.Errorf("notices %q: want one saying collapse stopped", notices)
	}
}
