package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/transcript"
)

// reloadTranscript reads a compaction back as its summary and the
// messages its boundary preserves, from the messages it was given.
type reloadTranscript struct {
	countTranscript
	byID map[string]model.Message
	last []model.Message
}

func newReloadTranscript(h []model.Message) *reloadTranscript {
	r := &reloadTranscript{byID: map[string]model.Message{}}
	for _, m := range h {
		r.byID[m.IDs[0]] = m
	}
	return r
}

func (r *reloadTranscript) Append(_ context.Context, entries ...transcript.Entry) error {
	if len(entries) < 2 || entries[0].Subtype != transcript.SubtypeCompactBoundary {
		return nil
	}
	var md struct {
		PreservedMessages struct{ Uuids []string } `json:"preservedMessages"`
	}
	if err := json.Unmarshal(entries[0].CompactMetadata, &md); err != nil {
		return err
	}
	out := []model.Message{msg("user", []string{entries[1].UUID}, model.TextBlock("summary S"))}
	seen := map[string]bool{}
	for _, id := range md.PreservedMessages.Uuids {
		if m, ok := r.byID[id]; ok && !seen[m.IDs[0]] {
			seen[m.IDs[0]] = true
			out = append(out, m)
		}
	}
	r.byID[entries[1].UUID] = out[0]
	r.last = out
	return nil
}

func (r *reloadTranscript) Reload(context.Context) ([]model.Message, error) { return r.last, nil }

// tinyBlocks is a history of steps calls with one-word results: little
// content, many blocks.
func tinyBlocks(steps int) []model.Message {
	h := []model.Message{msg("user", []string{"p0"}, model.TextBlock("start"))}
	for i := range steps {
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Read", Input: []byte(`{}`)}
		h = append(h,
			msg("assistant", []string{fmt.Sprint("a", i)}, model.TextBlock("ok"), call),
			msg("user", []string{fmt.Sprint("r", i)}, model.ToolResultBlock(call.ID, "x", false)))
	}
	return h
}

// TestFloorEnds: a history whose blocks' framing puts it over the
// threshold while its content is far under it compacts, and when what a
// compaction keeps is still over by the same weighing, the compaction
// counts as failed, the breaker stops it, and the last resort keeps only
// what fits by that weighing: the requests after it go out, rather than a
// compaction (or a truncation) on every request.
func TestFloorEnds(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	h := tinyBlocks(200)
	at := streamWindow.AutoCompactAt()
	if est, floor := tokens.EstimateRequest(nil, nil, h), tokens.EstimateFloor(h); est >= at || floor < at {
		t.Fatalf("the history's content is %d tokens and its floor %d; want the content under the threshold (%d) and the floor over", est, floor, at)
	}
	m := &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) {
		return []model.Block{model.TextBlock("S")}, nil
	}}
	mgr := layered(m, newReloadTranscript(h), now)
	compactions := 0
	var last *engine.Prep
	for range MaxFailures + 3 {
		p := &engine.Prep{History: h, Used: tokens.EstimateRequest(nil, nil, h)} // no usage after a compaction
		if err := mgr.Prepare(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		if p.Compaction != nil {
			compactions++
		}
		h, last = p.History, p
	}
	if compactions > MaxFailures+1 || last.Compaction != nil {
		t.Errorf("%d compactions in %d requests, the last one compacted too (%v); want at most %d and the last sent", compactions, MaxFailures+3, last.Compaction != nil, MaxFailures+1)
	}
	if floor := tokens.EstimateFloor(h); floor >= at {
		t.Errorf("the history ends at a floor of %d, over the threshold %d", floor, at)
	}
}

// TestMeterAfterACompaction: once a compaction (here a /compact) replaced
// the history, the meter counts the new history as it is, not less what
// the layers took off the old one.
func TestMeterAfterACompaction(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	h := lightHistory(20)
	m := &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) {
		return []model.Block{model.TextBlock("S")}, nil
	}}
	mgr := layered(m, newReloadTranscript(h), now)
	p := &engine.Prep{History: h, Used: tokens.EstimateMessages(h)}
	if err := mgr.Prepare(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.Compaction != nil || mgr.Projected(p.Used) >= p.Used {
		t.Fatalf("the layers took nothing off (compaction %v, meter %d of %d): the test needs them to", p.Compaction != nil, mgr.Projected(p.Used), p.Used)
	}
	after, _, err := mgr.Compact(t.Context(), p.History, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if est := tokens.EstimateRequest(nil, nil, after); mgr.Projected(est) != est {
		t.Errorf("the meter after /compact shows %d; the new history is %d", mgr.Projected(est), est)
	}
}

// uuidOf is the transcript uuid of message i: its first digits, which a
// tag is made from, differ for each i.
func uuidOf(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-000000000000", i) }

// idsOf is uuidOf(i) as a message's ids.
func idsOf(i int) []string { return []string{uuidOf(i)} }

// summarizer answers every summary request with a summary, recording the
// requests in asked when it is not nil.
func summarizer(asked *[]*model.Request) *modeltest.Scripted {
	return &modeltest.Scripted{Answer: func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		if asked != nil {
			*asked = append(*asked, req)
		}
		return []model.Block{model.TextBlock("<summary>S</summary>")}, nil
	}}
}

// defaultLayers is a Manager over w with the layers a session has by
// default: snip, then micro-compaction of Bash results, whose last request
// was at since (two hours before now: the cache is cold) and which
// cleared the results cleared names.
func defaultLayers(m model.Model, w tokens.Window, tr Transcript, now, since time.Time, cleared map[string]bool) *Manager {
	mgr := New(Config{Model: m, ModelName: "claude-test", Window: w, Transcript: tr, Now: func() time.Time { return now }})
	mgr.AddLayer(NewSnip(SnipConfig{}))
	mgr.AddLayer(NewMicro(MicroConfig{Tools: []string{"Bash"}, Transcript: tr, Cleared: cleared, Since: since}))
	return mgr
}

// TestFloorCountsTheTags: the snip layer leaves its tags to the Manager
// until it knows the request goes out as it is, and the floor that
// decides counts them all the same. Here the history's floor is under
// the threshold without its tags and over it with them: it compacts.
func TestFloorCountsTheTags(t *testing.T) {
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // compacts at 67,000
	var h []model.Message
	for i := range 3_500 { // 9 tokens a message, 3 more with a tag: 63,000 and 73,500
		h = append(h,
			msg("user", idsOf(2*i), model.TextBlock("x")),
			msg("assistant", idsOf(2*i+1), model.TextBlock("ok")))
	}
	h = append(h, msg("user", idsOf(7_000), model.TextBlock("go on")))
	snip := NewSnip(SnipConfig{})
	at := w.AutoCompactAt()
	if bare, tagged := tokens.EstimateFloor(h), tokens.EstimateFloor(snip.Mark(h)); bare >= at || tagged < at {
		t.Fatalf("floor %d without the tags and %d with them; want the threshold %d between", bare, tagged, at)
	}
	mgr := New(Config{Model: summarizer(nil), ModelName: "claude-test", Window: w, Transcript: newReloadTranscript(h)})
	mgr.AddLayer(snip)
	p := &engine.Prep{History: h, Used: 20_000}
	if err := mgr.Prepare(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.Compaction == nil {
		t.Errorf("not compacted: the floor left out the tags")
	}
}

// TestFloorCountsTheClearing: micro-compaction leaves its clearing to
// the Manager, and the floor that decides counts it all the same. Here
// the history's floor is over the threshold as it is and far under it
// with micro's clearing: the request goes out cleared, not compacted.
func TestFloorCountsTheClearing(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // compacts at 67,000
	h := []model.Message{msg("user", idsOf(0), model.TextBlock("build it"))}
	for i := range 8 { // the first result 80,000 tokens, the others small
		out := "ok"
		if i == 0 {
			out = strings.Repeat("BIG ", 80_000)
		}
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Bash", Input: []byte(`{}`)}
		h = append(h, msg("assistant", idsOf(2*i+1), call), msg("user", idsOf(2*i+2), model.ToolResultBlock(call.ID, out, false)))
	}
	if floor := tokens.EstimateFloor(h); floor < w.AutoCompactAt() {
		t.Fatalf("the history's floor is %d: the test needs it over the threshold %d", floor, w.AutoCompactAt())
	}
	mgr := defaultLayers(summarizer(nil), w, &recTranscript{}, now, now.Add(-2*time.Hour), nil)
	p := &engine.Prep{History: h, Used: 20_000}
	if err := mgr.Prepare(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.Compaction != nil {
		t.Fatal("compacted: the floor left out micro's clearing")
	}
	if p.Send == nil || p.Send[2].Content[0].ResultText() != ClearedText || !strings.Contains(p.Send[2].Text(), "[id:") {
		t.Error("the request does not carry the first result cleared and tagged")
	}
	if got, want := mgr.Projected(p.Used), tokens.EstimateFloor(p.Send); got > want {
		t.Errorf("the meter shows %d; the request sent weighs %d", got, want)
	}
}

// noReload is a transcript whose compacted session cannot be read back.
type noReload struct{ recTranscript }

func (*noReload) Reload(context.Context) ([]model.Message, error) {
	return nil, errors.New("the disk went away")
}

// TestClearingSurvivesAFailedReadBack: a compaction that was written but
// could not be read back fails after its cleanup reset the layers; the
// request then goes out as the layers left it, with the results micro
// cleared for it (the floor counted them cleared, and the transcript
// records them so).
func TestClearingSurvivesAFailedReadBack(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // compacts at 67,000; a request under 68,000 still fits
	h := []model.Message{msg("user", idsOf(0), model.TextBlock("build it"))}
	for i := range 8 { // the first result 1,100 tokens
		out := "ok"
		if i == 0 {
			out = strings.Repeat("BIG ", 1_100)
		}
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Bash", Input: []byte(`{}`)}
		h = append(h, msg("assistant", idsOf(2*i+1), call), msg("user", idsOf(2*i+2), model.ToolResultBlock(call.ID, out, false)))
	}
	mgr := defaultLayers(summarizer(nil), w, &noReload{}, now, now.Add(-2*time.Hour), nil)
	p := &engine.Prep{History: h, Used: 68_600} // 67,500 once micro cleared the first result
	if err := mgr.Prepare(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.Compaction != nil || len(p.Notices) == 0 {
		t.Fatalf("compaction %v, notices %q: the test needs a compaction that failed after its write", p.Compaction != nil, p.Notices)
	}
	if p.Send == nil {
		t.Fatal("the request is the history as it is")
	}
	if got := p.Send[2].Content[0].ResultText(); got != ClearedText {
		t.Errorf("the request carries the result micro cleared, %d bytes of it", len(got))
	}
}

// TestReminderWeighsTheRequest: the snip reminder is made from the
// request as the layers leave it, micro's clearing done: a result a
// resume restored as cleared is a placeholder in the request and is not
// named as one of the largest messages to snip.
func TestReminderWeighsTheRequest(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // reminds from 46,900, compacts at 67,000
	h := []model.Message{msg("user", idsOf(0), model.TextBlock("build it"))}
	for i := range 2 { // t0 3,000 tokens, cleared before the resume; t1 1,000
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Bash", Input: []byte(`{}`)}
		out := strings.Repeat("out ", 3_000-2_000*i)
		h = append(h, msg("assistant", idsOf(2*i+1), call), msg("user", idsOf(2*i+2), model.ToolResultBlock(call.ID, out, false)))
	}
	h = append(h, msg("assistant", idsOf(5), model.TextBlock("built")), msg("user", idsOf(6), model.TextBlock("now test it")))
	mgr := defaultLayers(nil, w, &recTranscript{}, now, now.Add(-time.Minute), map[string]bool{"t0": true})
	p := &engine.Prep{History: h, Used: 50_000}
	if err := mgr.Prepare(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.Compaction != nil || p.Send == nil {
		t.Fatalf("compacted %v, sent the history as it is %v", p.Compaction != nil, p.Send == nil)
	}
	reminder := p.Send[len(p.Send)-1].Text()
	if !strings.Contains(reminder, "- "+Tag(uuidOf(4))) {
		t.Fatalf("the reminder does not name t1's result (%s): %q", Tag(uuidOf(4)), reminder)
	}
	if strings.Contains(reminder, "- "+Tag(uuidOf(2))) {
		t.Errorf("the reminder names t0's result, which the request carries cleared: %q", reminder)
	}
}
