package workload

import (
	"fmt"
	"testing"
)

// TestWorkload runs a shorter workload and checks the targets that do not
// depend on timing: no request over the window, the cache doing most of
// the reading, and the planted facts reaching the end.
func TestWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("long workload")
	}
	rep, err := Run(t.Context(), Options{Turns: 3, StepsPerTurn: 25, Window: 100_000, MinOutput: 1_000, MaxOutput: 60_000, Seed: 1, Home: t.TempDir(), Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if rep.TooLong != 0 {
		t.Errorf("%d requests were refused as too long", rep.TooLong)
	}
	if rep.Compactions < 2 {
		t.Errorf("%d compactions: the workload is meant to need several", rep.Compactions)
	}
	if rep.FactsAtEnd != rep.Facts {
		t.Errorf("%d of %d planted facts reach the last request", rep.FactsAtEnd, rep.Facts)
	}
	if rep.CacheShare() < 0.70 {
		t.Errorf("cache-read share %.1f%%", 100*rep.CacheShare())
	}
}

// TestWorkloadWithCollapse: with context collapse on, the same workload
// stays in its window by folding, with the facts intact.
func TestWorkloadWithCollapse(t *testing.T) {
	if testing.Short() {
		t.Skip("long workload")
	}
	rep, err := Run(t.Context(), Options{Turns: 3, StepsPerTurn: 25, Window: 100_000, MinOutput: 1_000, MaxOutput: 60_000, Seed: 1, Home: t.TempDir(), Cwd: t.TempDir(), Collapse: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if rep.TooLong != 0 {
		t.Errorf("%d requests were refused as too long", rep.TooLong)
	}
	if rep.Commits == 0 || rep.FoldRequests == 0 {
		t.Errorf("%d commits, %d fold requests: collapse did not act", rep.Commits, rep.FoldRequests)
	}
	if rep.FactsAtEnd != rep.Facts {
		t.Errorf("%d of %d planted facts reach the last request", rep.FactsAtEnd, rep.Facts)
	}
	if rep.CacheShare() < 0.70 {
		t.Errorf("cache-read share %.1f%%", 100*rep.CacheShare())
	}
}

// TestSmallWindows: local models often have 8K–32K windows. A multi-step
// task finishes in each: every step done once, the closing answer given,
// no request over the window, the newest result never dropped.
func TestSmallWindows(t *testing.T) {
	for _, window := range []int64{8_192, 16_384, 32_768} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			// Results of up to an eighth of the window each.
			rep, err := Run(t.Context(), Options{Turns: 1, StepsPerTurn: 12, Window: window, ReplyMax: 4_096,
				MinOutput: 200, MaxOutput: int(window / 2), Seed: 3, Home: t.TempDir(), Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", rep)
			if rep.Steps != 12 || !rep.Answered {
				t.Errorf("%d of 12 steps, answered %v", rep.Steps, rep.Answered)
			}
			if rep.TooLong != 0 {
				t.Errorf("%d requests were refused as too long", rep.TooLong)
			}
			// Reserves scaled to the window leave room to work in: with the
			// fixed ones the threshold was below zero, every request
			// compacted, and compactions failed or fell back to dropping
			// the oldest history.
			if rep.Compactions == 0 {
				t.Errorf("no compaction: the task is meant to overflow the window")
			}
			if rep.Compactions != rep.SummaryRequests || len(rep.Notices) > 0 {
				t.Errorf("%d compactions, %d of them summaries; notices %q", rep.Compactions, rep.SummaryRequests, rep.Notices)
			}
			if !rep.NewestKept {
				t.Errorf("the last request lacks the newest tool result")
			}
		})
	}
}
