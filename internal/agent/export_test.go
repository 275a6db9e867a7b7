package agent

import (
	"context"

	"github.com/cairn-dev/cairn/transcript"
)

// AppendToTranscript appends entries to a's transcript the way the
// compaction layers do, for the tests of package agent_test.
func AppendToTranscript(ctx context.Context, a *Agent, entries ...transcript.Entry) error {
	return transcriptOf{a}.Append(ctx, entries...)
}
