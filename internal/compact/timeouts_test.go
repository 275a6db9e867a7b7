package compact_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// The fold and summary timeouts, in synctest bubbles: the clock is the bubble's, so
// the default two minutes pass at once and to the nanosecond.

// TestCollapseFoldTimeout: a synchronous fold at the blocking threshold
// whose request never comes back is given up after the timeout, with a
// notice saying so; nothing is folded and the request goes on.
func TestCollapseFoldTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := protectedHistory()
		fm := &modeltest.Scripted{Answer: func(ctx context.Context, _ int, _ *model.Request) ([]model.Block, error) {
			<-ctx.Done() // a fold request that never comes back
			return nil, context.Cause(ctx)
		}}
		c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", SpanTokens: 2_500, KeepRecent: 0.1})
		defer c.Close()
		w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // blocks at 23,000
		st := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: 30_000, Freed: map[string]int64{}, Window: w}
		start := time.Now()
		freed, err := c.Apply(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != compact.DefaultFoldTimeout {
			t.Errorf("the blocking fold was given up after %s, want the timeout of %s", d, compact.DefaultFoldTimeout)
		}
		if freed != 0 || len(c.Committed()) != 0 || len(fm.Requests()) != 1 {
			t.Errorf("freed %d, committed %+v, %d fold requests: want one request and nothing folded", freed, c.Committed(), len(fm.Requests()))
		}
		if n := strings.Join(st.Prep.Notices, "\n"); !strings.Contains(n, "the fold took longer than 2m0s; auto-compaction takes over") {
			t.Errorf("notices %q do not say the fold took too long", n)
		}
	})
}

// TestCollapseBlockingWaitTimeout: at the blocking threshold the request
// waits for the background fold under way for the timeout and no longer,
// then goes on without it, saying so.
func TestCollapseBlockingWaitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := protectedHistory()
		release := make(chan struct{})
		fm := &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) {
			<-release // a fold that does not even heed its deadline
			return nil, context.DeadlineExceeded
		}}
		events := make(chan compact.CollapseEvent, 8)
		c := compact.NewCollapse(compact.CollapseConfig{Model: fm, ModelName: "m", SpanTokens: 2_500, KeepRecent: 0.1, Timeout: time.Minute,
			Notify: func(e compact.CollapseEvent) { events <- e }})
		defer c.Close()
		// Let the fold go before Close, which waits for it.
		defer close(release)
		w := tokens.Window{Size: 40_000, MaxOutput: 4_000} // stages at 18,400, blocks at 23,000
		stage := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: 19_000, Freed: map[string]int64{}, Window: w}
		if _, err := c.Apply(t.Context(), stage); err != nil {
			t.Fatal(err)
		}
		if e := <-events; e.Kind != "started" {
			t.Fatalf("event %+v, want the background fold started", e)
		}
		st := &compact.State{Prep: &engine.Prep{History: h}, Send: h, Used: 30_000, Freed: map[string]int64{}, Window: w}
		start := time.Now()
		freed, err := c.Apply(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("the request waited %s for the background fold, want the timeout of 1m0s", d)
		}
		if freed != 0 || len(c.Committed()) != 0 {
			t.Errorf("freed %d, committed %+v while the fold was still under way", freed, c.Committed())
		}
		if n := strings.Join(st.Prep.Notices, "\n"); !strings.Contains(n, "the background fold took longer than 1m0s") {
			t.Errorf("notices %q do not say the background fold took too long", n)
		}
	})
}

// TestSummaryTimeout: a summary request that never comes back fails the
// compaction after the summary timeout (five minutes by default), saying
// so, and writes nothing.
func TestSummaryTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fm := &modeltest.Scripted{Answer: func(ctx context.Context, _ int, _ *model.Request) ([]model.Block, error) {
			<-ctx.Done() // a summary request that never comes back
			return nil, context.Cause(ctx)
		}}
		tr := &memTranscript{}
		m := compact.New(compact.Config{Model: fm, ModelName: "m", Window: tokens.Window{Size: 200_000, MaxOutput: 4_000}, Transcript: tr})
		h := []model.Message{
			{Role: model.RoleUser, Content: []model.Block{text("start the work")}, IDs: []string{"u1"}},
			{Role: model.RoleAssistant, Content: []model.Block{text(strings.Repeat("done some of it. ", 400))}, IDs: []string{"a1"}},
			{Role: model.RoleUser, Content: []model.Block{text("go on")}, IDs: []string{"u2"}},
			{Role: model.RoleAssistant, Content: []model.Block{text("done")}, IDs: []string{"a2"}},
		}
		start := time.Now()
		_, _, err := m.Compact(t.Context(), h, nil, nil, "")
		if d := time.Since(start); d != 5*time.Minute {
			t.Errorf("the compaction failed after %s, want the default timeout of 5m0s", d)
		}
		if err == nil || !strings.Contains(err.Error(), "the summary took longer than 5m0s") {
			t.Errorf("Compact: %v, want the summary's timeout", err)
		}
		if len(fm.Requests()) != 1 || len(tr.entries) != 0 {
			t.Errorf("%d summary requests, %d lines written: want one request and nothing written", len(fm.Requests()), len(tr.entries))
		}
	})
}

// TestCompactingRunsFirst: Config.Compacting runs once a compaction is
// under way, before its summary is asked, and not for a history with
// nothing to compact.
func TestCompactingRunsFirst(t *testing.T) {
	fm := &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) {
		return []model.Block{text("<summary>the work so far</summary>")}, nil
	}}
	var asked []int // the summary requests made before each call
	m := compact.New(compact.Config{Model: fm, ModelName: "m", Window: tokens.Window{Size: 200_000, MaxOutput: 4_000}, Transcript: &memTranscript{},
		Compacting: func() { asked = append(asked, len(fm.Requests())) }})
	if _, _, err := m.Compact(t.Context(), []model.Message{{Role: model.RoleUser, Content: []model.Block{text("hi")}}}, nil, nil, ""); err == nil {
		t.Fatal("a history of one message was compacted")
	}
	if len(asked) != 0 {
		t.Fatalf("Compacting ran for a history with nothing to compact")
	}
	var h []model.Message
	for i := range 12 {
		h = append(h,
			model.Message{Role: model.RoleUser, Content: []model.Block{text(fmt.Sprintf("step %d", i))}, IDs: []string{fmt.Sprintf("u%d", i)}},
			model.Message{Role: model.RoleAssistant, Content: []model.Block{text(strings.Repeat("done some of it. ", 2000))}, IDs: []string{fmt.Sprintf("a%d", i)}})
	}
	if _, _, err := m.Compact(t.Context(), h, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != 0 || len(fm.Requests()) == 0 {
		t.Errorf("Compacting ran %d times, after %v of the %d summary requests: want once, before any", len(asked), asked, len(fm.Requests()))
	}
}
