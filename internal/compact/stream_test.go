package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/retry"
	"github.com/cairn-dev/cairn/transcript"
)

// recTranscript is a Transcript that keeps what is appended.
type recTranscript struct {
	countTranscript
	entries []transcript.Entry
}

func (r *recTranscript) Append(_ context.Context, entries ...transcript.Entry) error {
	r.entries = append(r.entries, entries...)
	return nil
}

// longHistory is a conversation of 40 steps, far over a small window:
// tagged user messages, tool calls of a compactable tool and their
// results, an image.
func longHistory() []model.Message {
	var h []model.Message
	for i := range 40 {
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Bash", Input: []byte(fmt.Sprintf(`{"command":"make %d"}`, i))}
		prompt := msg("user", []string{fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)}, model.TextBlock(fmt.Sprintf("step %d: %s", i, strings.Repeat("words ", 200))))
		if i == 3 {
			prompt.Content = append(prompt.Content, model.Block{Type: model.BlockImage, Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"base64","media_type":"image/png","data":"AAAA"}`)}})
		}
		h = append(h, prompt,
			msg("assistant", []string{fmt.Sprint("a", i)}, model.TextBlock("running it"), call),
			msg("user", []string{fmt.Sprint("r", i)}, model.ToolResultBlock(call.ID, strings.Repeat(fmt.Sprintf("output %d ", i), 400), false)))
	}
	return h
}

var streamWindow = tokens.Window{Size: 8_192, MaxOutput: 1_024}

// lightHistory is longHistory's first steps with one-line prompts and
// shorter results: a history that micro-compaction brings well under
// streamWindow's threshold, from over it.
func lightHistory(steps int) []model.Message {
	h := slices.Clone(longHistory()[:3*steps])
	for i := 0; i < len(h); i += 3 {
		h[i].Content = []model.Block{model.TextBlock(fmt.Sprintf("step %d", i/3))}
		id := h[i+2].Content[0].ToolUseID
		h[i+2].Content = []model.Block{model.ToolResultBlock(id, strings.Repeat(fmt.Sprintf("output %d ", i/3), 120), false)}
	}
	return h
}

// layered returns a Manager with snip and micro-compaction (the cache
// cold, so micro clears) over model m, as an agent sets it up.
func layered(m model.Model, tr Transcript, now time.Time) *Manager {
	mgr := New(Config{Model: m, ModelName: "claude-test", Window: streamWindow, Transcript: tr, Now: func() time.Time { return now }})
	mgr.AddLayer(NewSnip(SnipConfig{}))
	mgr.AddLayer(NewMicro(MicroConfig{Tools: []string{"Bash"}, Transcript: tr, Since: now.Add(-2 * time.Hour)}))
	return mgr
}

// wantParts is what the summary requests of history carry, from copies:
// the history as the layers send it, images stripped, trimmed, rendered
// whole and cut into parts; each part after the first follows the
// summary summaries(k) the parts before it ended with.
func wantParts(t *testing.T, history []model.Message, now time.Time, summaries func(k int) string) []string {
	t.Helper()
	ref := layered(nil, &countTranscript{}, now)
	st := &State{Prep: &engine.Prep{History: history}, Send: history, Used: tokens.EstimateMessages(history), Freed: map[string]int64{}, Window: streamWindow, Now: now, managed: true}
	for _, l := range ref.layers {
		if _, err := l.Apply(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	budget := streamWindow.Effective() + streamWindow.OutputReserve() - int64(ref.summaryMax())
	parts := chunks(render(trim(withoutImages(st.Send))), budget/2*tokens.BytesPerToken)
	if len(parts) < 4 {
		t.Fatalf("%d parts: the history should need several", len(parts))
	}
	for i := 1; i < len(parts); i++ {
		parts[i] = "Summary of the conversation before this part:\n" + summaries(i-1) + "\n\nThe next part:\n" + parts[i]
	}
	return parts
}

// TestPrepareAsksThePartsInTurn: a resumed history far over the window is
// summarised in parts through Prepare as the copies it no longer makes
// would have it — tags, cleared results, stripped images, part
// boundaries — each part asked with the summary of the ones before it,
// and a part that fails and is retried is sent again as it was.
func TestPrepareAsksThePartsInTurn(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, retried := range []bool{false, true} {
		t.Run(fmt.Sprint("retried ", retried), func(t *testing.T) {
			history := longHistory()
			var got []string
			scripted := &modeltest.Scripted{Answer: func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
				got = append(got, req.Messages[0].Content[0].Text)
				if retried && n == 1 {
					return nil, &model.APIError{Status: 529, Type: "overloaded_error"}
				}
				return []model.Block{model.TextBlock(fmt.Sprintf("<summary>S%d</summary>", n))}, nil
			}}
			var m model.Model = scripted
			if retried {
				m = retry.New(scripted, retry.Options{Sleep: func(context.Context, time.Duration) error { return nil }})
			}
			mgr := layered(m, &recTranscript{}, now)
			p := &engine.Prep{History: history, Used: tokens.EstimateMessages(history)}
			if err := mgr.Prepare(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			want := wantParts(t, history, now, func(k int) string {
				if retried && k >= 1 {
					k++ // request 1 failed; the part was asked again as request 2
				}
				return fmt.Sprint("S", k)
			})
			if retried {
				want = append(want[:2], want[1:]...) // the second part, twice
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("summary requests (-want +got):\n%s", diff)
			}
			if p.Compaction == nil {
				t.Fatalf("no compaction (notices %q)", p.Notices)
			}
		})
	}
}

// TestPrepareCancelledMidCompaction: cancelling while a part is asked
// stops the summary there — no later part is rendered or asked — and
// nothing is written: no compaction, and no last-resort truncation of a
// history that could not be summarised.
func TestPrepareCancelledMidCompaction(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	history := longHistory()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	asked := 0
	m := &modeltest.Scripted{Answer: func(ctx context.Context, n int, _ *model.Request) ([]model.Block, error) {
		asked++
		if n == 1 {
			cancel()
			return nil, ctx.Err()
		}
		return []model.Block{model.TextBlock(fmt.Sprint("S", n))}, nil
	}}
	tr := &recTranscript{}
	mgr := layered(m, tr, now)
	p := &engine.Prep{History: history, Used: tokens.EstimateMessages(history)}
	err := mgr.Prepare(ctx, p)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare = %v, want the cancellation", err)
	}
	if asked != 2 {
		t.Errorf("%d summary requests, want 2: none after the one cancelled", asked)
	}
	for _, e := range tr.entries {
		if e.IsCompactBoundary() {
			t.Errorf("a compaction was written after the cancellation: %s", e.CompactMetadata)
		}
	}
	if p.Replaced || p.Compaction != nil || mgr.failures != 0 {
		t.Errorf("replaced %v, compaction %+v, failures %d: a cancellation is not a compaction, nor a failed one", p.Replaced, p.Compaction, mgr.failures)
	}
}

// TestPartsRenderedWhenDue: a part's lines are read only when its request
// is due — when request k is sent, no line beyond part k (and the one
// that did not fit in it) has been rendered — so the parts are never all
// rendered up front.
func TestPartsRenderedWhenDue(t *testing.T) {
	history := longHistory()
	v := summaryView{msgs: history}
	all := render(trim(history))
	read := 0
	lines := func(yield func(string) bool) {
		for l := range v.trimmed().lines() {
			read++
			if !yield(l) {
				return
			}
		}
	}
	mgr := New(Config{Window: streamWindow})
	budget := streamWindow.Effective() + streamWindow.OutputReserve() - int64(mgr.summaryMax())
	parts := chunks(all, budget/2*tokens.BytesPerToken)
	var readAt []int
	mgr.cfg.Model = &modeltest.Scripted{Answer: func(_ context.Context, n int, _ *model.Request) ([]model.Block, error) {
		readAt = append(readAt, read)
		return []model.Block{model.TextBlock(fmt.Sprint("S", n))}, nil
	}}
	if _, err := mgr.summarizeChunks(t.Context(), iter.Seq[string](lines), nil, nil, "", budget); err != nil {
		t.Fatal(err)
	}
	if len(readAt) != len(parts) {
		t.Fatalf("%d requests for %d parts", len(readAt), len(parts))
	}
	through := 0
	for k, p := range parts {
		through += strings.Count(p, "\n")
		if limit := min(through+1, len(all)); readAt[k] > limit {
			t.Errorf("request %d sent with %d lines rendered, want at most %d", k, readAt[k], limit)
		}
	}
}

// plainLayer is a layer that does nothing and may read tags: after it,
// the Manager cannot leave snip's tags to the end.
type plainLayer struct{}

func (plainLayer) Name() string                                 { return "plain" }
func (plainLayer) Apply(context.Context, *State) (int64, error) { return 0, nil }

// TestTagsLeftToTheEnd: at the threshold, snip leaves its tags to the
// Manager, which adds them as far as the summary reads or, when the
// request goes out after all, to all of it. Every request is the one the
// tags added at once give: a summary of the whole history, a request
// that micro-compaction brought under the threshold (with the snip
// reminder after the tags), one sent as it is when the summary failed.
func TestTagsLeftToTheEnd(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := streamWindow.AutoCompactAt()
	for _, tc := range []struct {
		name      string
		steps     int
		used      int64
		fail      bool
		summaries int  // requests for the summary
		compacted bool // or the request goes out
	}{
		{"summary of the whole history", 4, at + 100, false, 1, true},
		// The usage agrees with the history: micro's clearing brings the
		// request itself under the threshold, not only the count.
		{"micro brings it under", 20, 0, false, 0, false},
		{"the summary fails, the request fits", 4, at + 100, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			history, used := longHistory()[:3*tc.steps], tc.used
			if used == 0 {
				history = lightHistory(tc.steps)
				used = tokens.EstimateMessages(history)
				if used < at {
					t.Fatalf("the light history comes to %d tokens, under the threshold %d", used, at)
				}
			}
			run := func(eager bool) ([]*model.Request, *engine.Prep) {
				var reqs []*model.Request
				m := &modeltest.Scripted{Answer: func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
					reqs = append(reqs, req)
					if tc.fail {
						return nil, errors.New("overloaded")
					}
					return []model.Block{model.TextBlock("S")}, nil
				}}
				mgr := layered(m, &recTranscript{}, now)
				if eager {
					mgr.AddLayer(plainLayer{})
				}
				p := &engine.Prep{History: history, Used: used}
				if err := mgr.Prepare(t.Context(), p); err != nil {
					t.Fatal(err)
				}
				return reqs, p
			}
			reqs, p := run(false)
			wantReqs, want := run(true)
			if len(reqs) != tc.summaries || len(wantReqs) != tc.summaries || (p.Compaction != nil) != tc.compacted {
				t.Fatalf("%d summary requests (%d tagged at once), compaction %v; want %d, %v", len(reqs), len(wantReqs), p.Compaction != nil, tc.summaries, tc.compacted)
			}
			for i := range reqs {
				if diff := cmp.Diff(wantReqs[i].Messages, reqs[i].Messages); diff != "" {
					t.Errorf("summary request %d (-tagged at once +tagged at the end):\n%s", i, diff)
				}
			}
			if p.Compaction == nil {
				if diff := cmp.Diff(want.Send, p.Send); diff != "" {
					t.Errorf("request sent (-tagged at once +tagged at the end):\n%s", diff)
				}
				if sent := fmt.Sprint(p.Send); !strings.Contains(sent, "[id:") || !strings.Contains(sent, "Snip tool") {
					t.Error("the request sent lacks its tags or the snip reminder")
				}
			} else if len(reqs) == 0 || !strings.Contains(fmt.Sprint(reqs[0].Messages), "[id:") {
				t.Error("the summary request has no tags")
			}
		})
	}
}

// TestWhatIsSentCountsToo: a usage lower than what the history holds (a
// transcript whose recorded usage a server's clearing or another tool's
// count made low) does not let a request over the threshold go out:
// micro-compaction's estimate of what it freed took the count below
// zero, while the request it left was more than twice the threshold.
// What is sent is weighed as itself (tokens.EstimateFloor) too. A small
// history with the same usage goes out as it is.
func TestWhatIsSentCountsToo(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := streamWindow.AutoCompactAt()
	for _, tc := range []struct {
		name       string
		history    []model.Message
		serverSide bool
		compacted  bool
	}{
		{"over the threshold as sent", longHistory()[:3*12], false, true},
		{"under it", lightHistory(3), false, false},
		// The server clears results before it counts: the request's
		// results are not what it weighs.
		{"the server clears", longHistory()[:3*12], true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) {
				return []model.Block{model.TextBlock("S")}, nil
			}}
			tr := &recTranscript{}
			mgr := layered(m, tr, now)
			if tc.serverSide {
				tr = &recTranscript{}
				mgr = New(Config{Model: m, ModelName: "claude-test", Window: streamWindow, Transcript: tr, Now: func() time.Time { return now }})
				mgr.AddLayer(NewMicro(MicroConfig{Tools: []string{"Bash"}, Transcript: tr, Since: now.Add(-2 * time.Hour), ServerSide: true}))
			}
			p := &engine.Prep{History: tc.history, Used: at / 4}
			if err := mgr.Prepare(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			if (p.Compaction != nil) != tc.compacted {
				t.Errorf("compacted %v with a usage of %d and a history of %d tokens by the floor's estimate; want %v (threshold %d)", p.Compaction != nil, at/4, tokens.EstimateFloor(tc.history), tc.compacted, at)
			}
			// Summarised, measured against the request, not the low
			// usage: no "not compacted" failure, no oldest messages
			// dropped for want of a summary.
			if len(p.Notices) > 0 {
				t.Errorf("notices: %q; want none", p.Notices)
			}
			if c := p.Compaction; c != nil && (!strings.Contains(c.Summary, "into a summary") || c.PreTokens < at) {
				t.Errorf("compaction %q from %d tokens; want a summary, from at least the threshold (%d): the request was over it", c.Summary, c.PreTokens, at)
			}
			// Micro-compaction's clearing is not recorded when the
			// compaction makes it moot.
			if p.Compaction != nil {
				for _, e := range tr.entries {
					if e.Subtype == transcript.SubtypeMicrocompactBoundary {
						t.Error("a micro-compaction record was written before the compaction that made it moot")
					}
				}
			}
		})
	}
}

// TestSummaryWeighsTheClearedHistory: micro-compaction, the last layer,
// leaves its clearing to the Manager, and the summary applies it to each
// message it weighs. A history over the summary's budget only by a
// result micro clears is summarised whole, as the request would carry
// it: the newest five results (micro keeps five) in it, the cleared one
// not; not trimmed, which would keep three results.
func TestSummaryWeighsTheClearedHistory(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000} // compacts at 67,000; a summary may read 84,000
	step := func(i int, out string) []model.Message {
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Bash", Input: []byte(`{"command":"make"}`)}
		return []model.Message{
			msg("assistant", idsOf(2*i+1), call),
			msg("user", idsOf(2*i+2), model.ToolResultBlock(call.ID, out, false)),
		}
	}
	h := []model.Message{msg("user", idsOf(0), model.TextBlock("build it"))}
	h = append(h, step(0, strings.Repeat("BIG ", 50_000))...) // 50,000 tokens
	for i := 1; i <= 5; i++ {
		h = append(h, step(i, fmt.Sprint("out-", i))...)
	}
	for i := range 4 { // 70,000 tokens
		h = append(h, msg("assistant", idsOf(100+2*i), model.TextBlock("ok")),
			msg("user", idsOf(101+2*i), model.TextBlock(strings.Repeat("more ", 14_000))))
	}
	var asked []*model.Request
	mgr := defaultLayers(summarizer(&asked), w, &recTranscript{}, now, now.Add(-2*time.Hour), nil)
	p := &engine.Prep{History: h, Used: 30_000}
	if err := mgr.Prepare(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if p.Compaction == nil || len(asked) != 1 {
		t.Fatalf("compaction %v after %d summary requests; want one request, whole", p.Compaction != nil, len(asked))
	}
	var body strings.Builder
	for _, m := range asked[0].Messages {
		for _, b := range m.Content {
			body.WriteString(b.Text + b.ResultText() + "\n")
		}
	}
	for i := 1; i <= 5; i++ {
		if !strings.Contains(body.String(), fmt.Sprint("out-", i)) {
			t.Errorf("the summary request lacks result %d: the history was trimmed, not summarised whole", i)
		}
	}
	if strings.Contains(body.String(), "BIG BIG") || !strings.Contains(body.String(), ClearedText) {
		t.Error("the summary request carries the result micro cleared")
	}
}
