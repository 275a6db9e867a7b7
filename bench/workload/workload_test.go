package workload

import (
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
