package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

func TestShortID(t *testing.T) {
	// Expected values computed with JavaScript:
	// parseInt(uuid.replace(/-/g, '').slice(0, 10), 16).toString(36).slice(0, 6)
	tests := map[string]string{
		"a1b2c3d4-e5f6-7890-abcd-ef1234567890": "8v1krm",
		"00000000-0000-4000-8000-000000000000": "0",
		"0000000f-ffff-4000-8000-000000000000": "35r",
		"ffffffff-ffff-4fff-bfff-ffffffffffff": "e13wu1",
		"3f2504e0-4f89-11d3-9a0c-0305e82c3301": "3gl7va",
		"12zz-x":                               "i", // only the leading hex digits count
	}
	for uuid, want := range tests {
		if got := compact.ShortID(uuid); got != want {
			t.Errorf("ShortID(%q) = %q, want %q", uuid, got, want)
		}
	}
	if a, b := compact.ShortID("u1"), compact.ShortID("u2"); a == b || a == "" {
		t.Errorf("ids without hex digits: %q and %q", a, b)
	}
}

func TestStripTag(t *testing.T) {
	tests := map[string]string{
		"fix it\n[id:8v1krm]": "fix it",
		"[id:35r]":            "",
		"fix it":              "fix it",
		"see [id:8v1krm] now": "see [id:8v1krm] now",
		"a\n[id:8v1krm]\nb":   "a\n[id:8v1krm]\nb",
	}
	for in, want := range tests {
		if got := compact.StripTag(in); got != want {
			t.Errorf("StripTag(%q) = %q, want %q", in, got, want)
		}
	}
}

// uid returns the i-th uuid of a test conversation: real uuids, so
// their short ids differ.
func uid(i int) string {
	return fmt.Sprintf("%08x-%04x-4000-8000-%012x", uint32(i+1)*0x9e3779b1, i, i)
}

func user(ids []string, blocks ...model.Block) model.Message {
	return model.Message{Role: model.RoleUser, Content: blocks, IDs: ids}
}

func assistant(id string, blocks ...model.Block) model.Message {
	return model.Message{Role: model.RoleAssistant, Content: blocks, IDs: []string{id}}
}

func call(id, name string) model.Block {
	return model.Block{Type: model.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(`{"file_path":"/p/a.go"}`)}
}

func result(id, text string) model.Block { return model.ToolResultBlock(id, text, false) }

func TestMarkTags(t *testing.T) {
	reminder := model.TextBlock("<system-reminder>\nthe date\n</system-reminder>")
	tag := func(i int) string { return compact.Tag(uid(i)) }
	tests := []struct {
		name string
		in   model.Message
		want []model.Block // nil: untouched
	}{
		{"prompt", user([]string{uid(0)}, model.TextBlock("fix it")),
			[]model.Block{model.TextBlock("fix it\n" + tag(0))}},
		{"prompt with reminders after it", user([]string{uid(1), uid(2)}, model.TextBlock("fix it"), reminder),
			[]model.Block{model.TextBlock("fix it\n" + tag(1)), reminder}},
		{"tool results", user([]string{uid(3)}, result("t1", "out")),
			[]model.Block{result("t1", "out"), model.TextBlock(tag(3))}},
		{"meta only", user([]string{uid(4)}, reminder), nil},
		{"tool results with a reminder", user([]string{uid(6)}, result("t2", "out"), reminder),
			[]model.Block{result("t2", "out"), reminder, model.TextBlock(tag(6))}},
		{"empty", user([]string{uid(7)}), nil},
		{"assistant", assistant(uid(5), model.TextBlock("hi")), nil},
		{"not in the transcript", user(nil, model.TextBlock("hi")), nil},
	}
	s := compact.NewSnip(compact.SnipConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []model.Message{tt.in}
			before := fmt.Sprint(in)
			out := s.Mark(in)
			if fmt.Sprint(in) != before {
				t.Error("Mark changed its input")
			}
			want := tt.in.Content
			if tt.want != nil {
				want = tt.want
			}
			if diff := cmp.Diff(want, out[0].Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if again := s.Mark(in); fmt.Sprint(again) != fmt.Sprint(out) {
				t.Error("a second Mark differs from the first")
			}
			if got, want := s.MarkWeight(in), tokens.EstimateFloor(out)-tokens.EstimateFloor(in); got != want {
				t.Errorf("MarkWeight = %d, the tags weigh %d", got, want)
			}
		})
	}
	var all []model.Message
	for _, tt := range tests {
		all = append(all, tt.in)
	}
	for i := range 200 { // texts of every length modulo the estimate's 4 bytes a token
		all = append(all, user([]string{uid(100 + i)}, model.TextBlock(strings.Repeat("x", i))))
	}
	if got, want := s.MarkWeight(all), tokens.EstimateFloor(s.Mark(all))-tokens.EstimateFloor(all); got != want || got == 0 {
		t.Errorf("MarkWeight of the whole history = %d, the tags weigh %d", got, want)
	}
}

// snipLog is a transcript in memory for the snip layer.
type snipLog struct {
	written []transcript.Entry
	lines   []transcript.Entry
	n       int
}

func (l *snipLog) Leaf() string {
	if len(l.written) == 0 {
		return ""
	}
	return l.written[len(l.written)-1].UUID
}

func (l *snipLog) NewEntry(typ, parent string) transcript.Entry {
	l.n++
	return transcript.Entry{Type: typ, UUID: fmt.Sprintf("line-%d", l.n), ParentUUID: parent}
}

func (l *snipLog) Append(_ context.Context, entries ...transcript.Entry) error {
	l.written = append(l.written, entries...)
	return nil
}

func (l *snipLog) Reload(context.Context) ([]model.Message, error) { return nil, nil }
func (l *snipLog) Path() string                                    { return "" }
func (l *snipLog) Lines(context.Context) ([][]*transcript.Entry, error) {
	// In two pieces, as a session's chain read back and carried on comes.
	half := len(l.lines) / 2
	return [][]*transcript.Entry{pointers(l.lines[:half]), pointers(l.lines[half:])}, nil
}

// conversation is a history with one message of each kind the Snip tool
// must refuse, and the transcript lines it was read from.
func conversation() ([]model.Message, []transcript.Entry, map[string]int) {
	big := strings.Repeat("output line\n", 400)
	h := []model.Message{
		user([]string{uid(0)}, model.TextBlock("This session continues an earlier conversation that was compacted to fit the context window. The summary below covers the part that was compacted.\n\nwork")),
		assistant(uid(1), model.TextBlock("ok")),
		user([]string{uid(2), uid(20)}, model.TextBlock("start"), model.TextBlock("<system-reminder>\nCalled the Read tool\n</system-reminder>")),
		assistant(uid(3), call("t1", "Read")),
		user([]string{uid(4)}, result("t1", big)),
		assistant(uid(5), call("t2", "TodoWrite")),
		user([]string{uid(6)}, result("t2", "todos updated")),
		assistant(uid(7), call("t3", "ExitPlanMode")),
		user([]string{uid(8)}, result("t3", "plan approved")),
		assistant(uid(9), call("t4", "Bash")),
		user([]string{uid(10)}, model.ToolResultBlock("t4", "denied by the user", true)),
		assistant(uid(11), model.TextBlock("understood")),
		user([]string{uid(12)}, model.TextBlock("remember the port is 8080")),
		assistant(uid(13), model.TextBlock("noted")),
		user([]string{uid(14), uid(21)}, model.TextBlock("more"), model.TextBlock("<system-reminder>\nContents of /p/CLAUDE.md:\n\nbe nice\n</system-reminder>")),
		assistant(uid(15), model.TextBlock("sure")),
		user([]string{uid(16)}, model.TextBlock("now tidy up")),
		assistant(uid(17), call("t5", "Read")),
		user([]string{uid(18)}, result("t5", big)),
		assistant(uid(19), call("t6", compact.SnipToolName)),
	}
	var lines []transcript.Entry
	for _, m := range h {
		for _, id := range m.IDs {
			e := transcript.Entry{Type: m.Role, UUID: id}
			if m.Role == model.RoleUser {
				e.Type = transcript.TypeUser
			}
			lines = append(lines, e)
		}
	}
	at := func(id string) *transcript.Entry {
		for i := range lines {
			if lines[i].UUID == id {
				return &lines[i]
			}
		}
		panic(id)
	}
	at(uid(0)).IsCompactSummary = true
	c := at(uid(20))
	c.Type, c.ParentUUID = transcript.TypeAttachment, uid(0)
	c.Attachment = json.RawMessage(`{"type":"file","filename":"/p/a.go"}`)
	n := at(uid(21))
	n.Type, n.Attachment = transcript.TypeAttachment, json.RawMessage(`{"type":"nested_memory"}`)
	at(uid(10)).Extra = map[string]json.RawMessage{"permissionDecision": json.RawMessage(`{"decision":"deny","by":"user","reason":"no","mode":"default"}`)}
	index := map[string]int{}
	for i, m := range h {
		index[m.IDs[0]] = i
	}
	return h, lines, index
}

func TestSnipRefuses(t *testing.T) {
	h, lines, _ := conversation()
	tag := func(i int) string { return compact.ShortID(h[i].IDs[0]) }
	tests := []struct {
		name, id, want string
	}{
		{"compaction summary", h[0].IDs[0], "summary of an earlier compaction"},
		{"what compaction carries", tag(2), "compaction keeps verbatim"},
		{"todo list", tag(6), "todo list"},
		{"plan", tag(8), "plan"},
		{"permission decision", tag(10), "permission decision (deny, by user)"},
		{"pinned", tag(12), "pinned"},
		{"instruction files", "[id:" + tag(14) + "]", "instruction files"},
		{"latest request", tag(16), "latest request"},
		{"current turn", tag(18), "current turn"},
		{"the call itself", h[19].IDs[0], "current turn"},
		{"unknown", "zzzzzz", "no message in the conversation has this id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &snipLog{lines: lines}
			pins := compact.NewPins(nil)
			pins.Add(compact.Pin{Text: "remember the port is 8080", Message: uid(12), Line: "pin-line"})
			s := compact.NewSnip(compact.SnipConfig{Transcript: log, History: func() []model.Message { return h }, Pins: pins})
			// A good id beside the bad one: nothing is snipped at all.
			_, err := s.Remove(t.Context(), []string{tag(4), tt.id}, "")
			var refused *compact.RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Remove: %v, want a refusal", err)
			}
			if len(refused.Refusals) != 1 || !strings.Contains(refused.Refusals[0].Reason, tt.want) {
				t.Errorf("refusals %+v, want one saying %q", refused.Refusals, tt.want)
			}
			if len(log.written) != 0 {
				t.Errorf("a refused snip wrote %d lines", len(log.written))
			}
		})
	}
}

func TestSnipRemovesAPair(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepHistory=%v", keep), func(t *testing.T) {
			h, lines, index := conversation()
			log := &snipLog{lines: lines}
			s := compact.NewSnip(compact.SnipConfig{Transcript: log, History: func() []model.Message { return h }, KeepHistory: keep})
			// The tool result names the pair: its call leaves with it.
			rm, err := s.Remove(t.Context(), []string{"[id:" + compact.ShortID(uid(4)) + "]"}, "read already")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{uid(3), uid(4)}, rm.UUIDs); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if len(log.written) != 1 {
				t.Fatalf("%d lines written, want the boundary", len(log.written))
			}
			b := log.written[0]
			var md struct {
				RemovedUUIDs []string `json:"removedUuids"`
			}
			if err := json.Unmarshal(b.SnipMetadata, &md); err != nil || b.Type != transcript.TypeSystem || b.Subtype != transcript.SubtypeSnipBoundary {
				t.Fatalf("boundary %+v (%v)", b, err)
			}
			if diff := cmp.Diff(rm.UUIDs, md.RemovedUUIDs); diff != "" {
				t.Errorf("removedUuids (-want +got):\n%s", diff)
			}

			history := h[:index[uid(18)]+1] // the next request: after the Snip call's result
			p := &engine.Prep{History: history}
			st := &compact.State{Prep: p, Send: history, Used: 1000, Freed: map[string]int64{}, Window: tokens.Window{Size: 1_000_000}}
			freed, err := s.Apply(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if freed < 1000 {
				t.Errorf("freed %d tokens, want the pair's", freed)
			}
			for _, m := range st.Send {
				if slices.Contains(m.IDs, uid(3)) || slices.Contains(m.IDs, uid(4)) {
					t.Fatalf("the request still carries the snipped pair")
				}
			}
			if len(st.Send) != len(history)-2 {
				t.Errorf("%d messages sent, want %d", len(st.Send), len(history)-2)
			}
			if p.Replaced == keep {
				t.Errorf("history replaced = %v with KeepHistory %v", p.Replaced, keep)
			}
			// The next request frees nothing more.
			p2 := &engine.Prep{History: p.History}
			st2 := &compact.State{Prep: p2, Send: p.History, Freed: map[string]int64{}, Window: tokens.Window{Size: 1_000_000}}
			if freed, _ := s.Apply(t.Context(), st2); freed != 0 || p2.Replaced {
				t.Errorf("the second request freed %d, replaced %v", freed, p2.Replaced)
			}
			// The message the pair sat between keep their tags.
			if diff := cmp.Diff(st.Send, st2.Send); diff != "" {
				t.Errorf("two requests after the snip differ (-first +second):\n%s", diff)
			}
			// Snipping it again is refused: it is gone.
			if _, err := s.Remove(t.Context(), []string{compact.ShortID(uid(4))}, ""); err == nil {
				t.Error("a snipped message was snipped again")
			}
		})
	}
}

func TestSnipNudge(t *testing.T) {
	h, lines, _ := conversation()
	history := h[:len(h)-1] // a request goes out after the last result
	s := compact.NewSnip(compact.SnipConfig{Transcript: &snipLog{lines: lines}, NudgeEvery: 3})
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // compacts at 67,000; nudges from 46,900
	apply := func(used int64, system []model.SystemBlock) []model.Message {
		t.Helper()
		p := &engine.Prep{History: history, System: system}
		st := &compact.State{Prep: p, Send: history, Used: used, Freed: map[string]int64{}, Window: w}
		if _, err := s.Apply(t.Context(), st); err != nil {
			t.Fatal(err)
		}
		return st.Send
	}
	nudged := func(send []model.Message) string {
		last := send[len(send)-1].Content
		if txt := last[len(last)-1].Text; strings.Contains(txt, compact.SnipToolName) {
			return txt
		}
		return ""
	}
	if n := nudged(apply(10_000, nil)); n != "" {
		t.Fatalf("nudged far from the limit: %s", n)
	}
	send := apply(50_000, nil)
	n := nudged(send)
	if n == "" {
		t.Fatal("no nudge near the limit")
	}
	if !strings.Contains(n, compact.Tag(uid(4))) {
		t.Errorf("the nudge does not name the largest snippable result:\n%s", n)
	}
	for _, i := range []int{16, 18, 6} { // latest request, current turn, todo list
		if strings.Contains(n, compact.Tag(uid(i))) {
			t.Errorf("the nudge offers %s, which may not be snipped:\n%s", compact.Tag(uid(i)), n)
		}
	}
	last := send[len(send)-1].Content
	if _, ok := last[len(last)-2].Extra["cache_control"]; !ok {
		t.Error("no cache breakpoint before the nudge")
	}
	// Not again on the next requests, then again.
	if nudged(apply(50_000, nil)) != "" || nudged(apply(50_000, nil)) != "" {
		t.Error("nudged on consecutive requests")
	}
	three := []model.SystemBlock{{Text: "a", Cache: true}, {Text: "b", Cache: true}, {Text: "c", Cache: true}}
	send = apply(50_000, three)
	if nudged(send) == "" {
		t.Fatal("no nudge after NudgeEvery requests")
	}
	last = send[len(send)-1].Content
	if _, ok := last[len(last)-2].Extra["cache_control"]; ok {
		t.Error("a breakpoint beyond the API's four")
	}
}

func TestPinsSurviveAndResume(t *testing.T) {
	pins := compact.NewPins(nil)
	pins.Add(compact.Pin{Text: "the port is 8080", Line: "l1"})
	pins.Add(compact.Pin{Text: "use tabs", Message: "m1", Line: "l2"})
	pins.Add(compact.Pin{Text: "the port is 8080", Line: "l3"}) // recorded again
	if got := len(pins.List()); got != 2 {
		t.Fatalf("%d pins, want 2", got)
	}
	if !pins.Pinned([]string{"x", "m1"}) || !pins.Pinned([]string{"l3"}) || pins.Pinned([]string{"l1"}) {
		t.Error("Pinned answers wrongly")
	}
	var entries []*transcript.Entry
	for i, a := range pins.Survivors(t.Context()) {
		if !strings.Contains(a.Rendered[0].Text, pins.List()[i].Text) {
			t.Errorf("survivor %d renders %q", i, a.Rendered[0].Text)
		}
		e := transcript.Entry{Type: transcript.TypeAttachment, UUID: fmt.Sprintf("s%d", i)}
		e.Attachment, e.Extra = transcript.EncodeAttachment(a.Type, a.Data, a.Rendered)
		entries = append(entries, &e)
	}
	again := compact.NewPins(entries)
	want := []compact.Pin{{Text: "the port is 8080", Line: "s0"}, {Text: "use tabs", Message: "m1", Line: "s1"}}
	if diff := cmp.Diff(want, again.List()); diff != "" {
		t.Errorf("pins read back (-want +got):\n%s", diff)
	}
	// A pinned message's own line renders nothing.
	a := compact.PinAttachment(compact.Pin{Text: "x", Message: "m"}, false)
	_, extra := transcript.EncodeAttachment(a.Type, a.Data, a.Rendered)
	if got := string(extra["rendered"]); got != `[{"content":[]}]` {
		t.Errorf("rendered %s", got)
	}
}

func FuzzTag(f *testing.F) {
	f.Add("fix it", "a1b2c3d4-e5f6-7890-abcd-ef1234567890")
	f.Add("", "u1")
	f.Add("x\n[id:abc]", "00000000-0000-4000-8000-000000000000")
	f.Fuzz(func(t *testing.T, text, uuid string) {
		id := compact.ShortID(uuid)
		if id == "" || len(id) > 6 || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("ShortID(%q) = %q", uuid, id)
		}
		if got := compact.StripTag(text + "\n" + compact.Tag(uuid)); got != text {
			t.Fatalf("StripTag(%q + tag) = %q", text, got)
		}
	})
}

// countLines counts how often the snip layer reads the transcript back.
type countLines struct {
	snipLog
	reads int
}

func (l *countLines) Lines(ctx context.Context) ([][]*transcript.Entry, error) {
	l.reads++
	return l.snipLog.Lines(ctx)
}

// TestSnipNudgeWaitsForTheCompactionDecision: over the auto-compaction
// threshold the reminder is made only when the request goes out as the
// layers left it (compaction off, or failed while the request still
// fits), never for a request the summary replaces, and never inside the
// summary request itself.
func TestSnipNudgeWaitsForTheCompactionDecision(t *testing.T) {
	h, lines, _ := conversation()
	history := h[:len(h)-1]
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // compacts at 67,000; 85% of the effective window is 68,000
	summarizer := func(fail error) *modeltest.Scripted {
		return &modeltest.Scripted{Answer: func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
			for _, m := range req.Messages {
				for _, b := range m.Content {
					if strings.Contains(b.Text, compact.SnipToolName) {
						t.Error("the summary request carries the snip reminder")
					}
				}
			}
			if fail != nil {
				return nil, fail
			}
			return []model.Block{model.TextBlock("<summary>S</summary>")}, nil
		}}
	}
	tests := []struct {
		name      string
		cfg       compact.Config
		used      int64
		wantNudge bool
	}{
		{"under the threshold", compact.Config{Model: summarizer(nil)}, 50_000, true},
		{"compaction off", compact.Config{Disabled: true}, 67_500, true},
		{"compaction failed, the request fits", compact.Config{Model: summarizer(errors.New("down"))}, 67_500, true},
		{"compacted", compact.Config{Model: summarizer(nil)}, 67_500, false},
		// The usage a transcript recorded is under the threshold and the
		// request weighed as itself (the floor) over it: the Manager
		// compacts, which the layer cannot know when it runs.
		{"compacted by the floor", compact.Config{Model: summarizer(nil)}, 50_000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &countLines{snipLog: snipLog{lines: lines}}
			tt.cfg.Window, tt.cfg.Transcript, tt.cfg.ModelName = w, log, "m"
			mgr := compact.New(tt.cfg)
			mgr.AddLayer(compact.NewSnip(compact.SnipConfig{Transcript: log}))
			p := &engine.Prep{History: history, Used: tt.used}
			if tt.name == "compacted by the floor" {
				// A first prompt of 280 KB: 70,000 tokens by the estimate.
				p.History = slices.Clone(history)
				p.History[0].Content = []model.Block{model.TextBlock(strings.Repeat("word ", 56_000))}
			}
			if err := mgr.Prepare(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			send := p.Send
			if send == nil {
				send = p.History
			}
			got := false
			for _, m := range send {
				for _, b := range m.Content {
					got = got || strings.Contains(b.Text, compact.SnipToolName)
				}
			}
			if tt.wantNudge != (p.Compaction == nil) {
				t.Fatalf("compacted: %v", p.Compaction != nil)
			}
			if got != tt.wantNudge {
				t.Errorf("nudged = %v, want %v (compaction: %v)", got, tt.wantNudge, p.Compaction != nil)
			}
			if !tt.wantNudge && log.reads > 0 {
				t.Errorf("the transcript was read back %d times for a reminder never sent", log.reads)
			}
		})
	}
}
