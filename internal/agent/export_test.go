package agent

import (
	"context"

	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/transcript"
)

// AppendToTranscript appends entries to a's transcript the way the
// compaction layers do, for the tests of package agent_test.
func AppendToTranscript(ctx context.Context, a *Agent, entries ...transcript.Entry) error {
	return transcriptOf{a}.Append(ctx, entries...)
}

// KeptEntries returns the entries a keeps to read its transcript back
// cheaply (the chain a load read, and the lines carried on since), for the
// tests of package agent_test.
func KeptEntries(a *Agent) []*transcript.Entry {
	a.chain.mu.Lock()
	defer a.chain.mu.Unlock()
	return append(append([]*transcript.Entry(nil), a.chain.read...), a.chain.added...)
}

// FileSnapshots returns the snapshots of a's file history, for the tests
// of package agent_test.
func FileSnapshots(a *Agent) []filehistory.Snapshot { return a.history.Snapshots() }
