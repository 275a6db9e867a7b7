package serve

import (
	"context"

	"github.com/cairn-dev/cairn/transcript"
)

// HistoryByLines is History finding before by the line scan alone, as it
// did before seekLine: what the tests and the bench compare with.
func HistoryByLines(ctx context.Context, src transcript.Source, before string, limit int) (Page, error) {
	lineScanOnly.Store(true)
	defer lineScanOnly.Store(false)
	return History(ctx, src, before, limit)
}

// SetSeekBlock sets how much the raw search reads at a time, until the
// test ends.
func SetSeekBlock(t interface{ Cleanup(func()) }, n int64) {
	old := seekBlock
	seekBlock = n
	t.Cleanup(func() { seekBlock = old })
}

// LineScanOnly has every history find its before by the line scan alone,
// until the test ends.
func LineScanOnly(t interface{ Cleanup(func()) }) {
	lineScanOnly.Store(true)
	t.Cleanup(func() { lineScanOnly.Store(false) })
}
