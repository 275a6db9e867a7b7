package compact

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/transcript"
)

// passLayer changes nothing and reads everything: after it, no layer may
// leave its work to the Manager (it is neither a Marker nor indifferent
// to their tags, and micro is not the last layer).
type passLayer struct{}

func (passLayer) Name() string                                 { return "pass" }
func (passLayer) Apply(context.Context, *State) (int64, error) { return 0, nil }

// writtenTranscript records every line a reloadTranscript is given.
type writtenTranscript struct {
	*reloadTranscript
	written []transcript.Entry
}

func (w *writtenTranscript) Append(ctx context.Context, entries ...transcript.Entry) error {
	w.written = append(w.written, entries...)
	return w.reloadTranscript.Append(ctx, entries...)
}

// randomHistory is a session of steps with prompts, reminders, calls of
// a compactable tool and another, and results of random sizes.
func randomHistory(r *rand.Rand) (h []model.Message, ids []string) {
	n := 0
	id := func() []string {
		n++
		return []string{fmt.Sprintf("%08x-%04x-4000-8000-000000000000", r.Uint32(), n)}
	}
	words := func(max int) string { return strings.Repeat("word ", 1+r.IntN(max)) }
	for step := range 1 + r.IntN(40) {
		prompt := []model.Block{model.TextBlock(words(3_000))}
		if r.IntN(3) == 0 {
			prompt = append(prompt, model.TextBlock("<system-reminder>\nthe date\n</system-reminder>"))
		}
		h = append(h, msg("user", id(), prompt...))
		for k := range r.IntN(4) {
			name := "Bash"
			if r.IntN(4) == 0 {
				name = "Edit"
			}
			call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprintf("t%d-%d", step, k), Name: name, Input: []byte(`{"command":"make"}`)}
			ids = append(ids, call.ID)
			h = append(h, msg("assistant", id(), model.TextBlock("ok"), call),
				msg("user", id(), model.ToolResultBlock(call.ID, words(8_000), false)))
		}
		h = append(h, msg("assistant", id(), model.TextBlock(words(200))))
	}
	return append(h, msg("user", id(), model.TextBlock("go on"))), ids
}

// TestDeferredLayersSendWhatEagerOnesWould: with the snip layer's tags
// and reminder and micro-compaction's clearing left to the Manager, a
// request prepares as it did with each layer doing its work at once (a
// layer after them that reads everything keeps them from leaving it): the
// same request, the same compaction decision, the same summary requests,
// the same meter, the same lines written; also when the server refused
// the request as too long, and when the summary fails.
func TestDeferredLayersSendWhatEagerOnesWould(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w := tokens.Window{Size: 100_000, MaxOutput: 20_000}
	compacted := 0
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 7))
		h, calls := randomHistory(r)
		cleared := map[string]bool{}
		for _, c := range calls {
			if r.IntN(4) == 0 {
				cleared[c] = true
			}
		}
		since := now.Add(-time.Minute)
		if r.IntN(2) == 0 {
			since = now.Add(-2 * time.Hour) // the cache is cold: micro clears a batch
		}
		used := r.Int64N(120_000)
		down := r.IntN(6) == 0 // the summary fails: a request that fits goes out as the layers left it
		var overflow *model.APIError
		if r.IntN(8) == 0 { // the server refused the request as too long
			overflow = &model.APIError{Status: 400, Type: "invalid_request_error", Message: "prompt is too long"}
		}
		type run struct {
			send      []model.Message
			compacted bool
			asked     []string
			meter     int64
			written   []string
		}
		prepare := func(eager bool) run {
			var out run
			var asked []*model.Request
			tr := &writtenTranscript{reloadTranscript: newReloadTranscript(h)}
			var m model.Model = summarizer(&asked)
			if down {
				m = &modeltest.Scripted{Answer: func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
					asked = append(asked, req)
					return nil, &model.APIError{Status: 529, Type: "overloaded_error"}
				}}
			}
			mgr := defaultLayers(m, w, tr, now, since, cleared)
			if eager {
				mgr.AddLayer(passLayer{})
			}
			p := &engine.Prep{History: h, Used: used, Overflow: overflow}
			if err := mgr.Prepare(t.Context(), p); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for _, req := range asked {
				out.asked = append(out.asked, fmt.Sprint(req.Messages))
			}
			out.send = p.Send
			if out.send == nil {
				out.send = p.History
			}
			out.compacted, out.meter = p.Compaction != nil, mgr.Projected(p.Used)
			for _, e := range tr.written {
				out.written = append(out.written, e.Type+"/"+e.Subtype)
			}
			return out
		}
		eager, deferred := prepare(true), prepare(false)
		if diff := cmp.Diff(fmt.Sprint(eager.send), fmt.Sprint(deferred.send)); diff != "" {
			t.Errorf("seed %d: the request differs (-eager +deferred):\n%.2000s", seed, diff)
		}
		if eager.compacted != deferred.compacted || eager.meter != deferred.meter {
			t.Errorf("seed %d: compacted %v, meter %d eager; %v, %d deferred", seed, eager.compacted, eager.meter, deferred.compacted, deferred.meter)
		}
		if diff := cmp.Diff(eager.asked, deferred.asked); diff != "" {
			t.Errorf("seed %d: the summary requests differ (-eager +deferred):\n%.2000s", seed, diff)
		}
		if diff := cmp.Diff(eager.written, deferred.written); diff != "" {
			t.Errorf("seed %d: the lines written differ (-eager +deferred):\n%s", seed, diff)
		}
		if eager.compacted {
			compacted++
		}
	}
	if compacted < 20 || compacted > 130 {
		t.Errorf("%d of 150 histories compacted: the cases should cover both", compacted)
	}
}
