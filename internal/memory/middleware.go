package memory

import (
	"context"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// WriteGate is the gate (middleware.Gate) that refuses a Write or Edit
// of the memory folder Dir's index that would break the index's limits
// (CheckWrite), telling the model what to do instead; it allows every
// other call, leaving the decision to the gates after it. Safe for
// concurrent use.
type WriteGate struct{ Dir string }

// Check implements middleware.Gate.
func (g WriteGate) Check(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
	if err := CheckWrite(g.Dir, call.Name, call.Input); err != nil {
		return engine.Verdict{Reason: err.Error()}
	}
	return engine.Verdict{Allow: true}
}

// closeWait is how long Close waits for an extraction under way.
const closeWait = 2 * time.Minute

// TurnEnded implements middleware.Ender: the turn's conversation goes to
// AfterTurn.
func (x *Extractor) TurnEnded(_ context.Context, t middleware.Turn) {
	x.AfterTurn(t.System, t.History, t.Start)
}

// Close implements middleware.Ender: it waits, at most two minutes, for
// an extraction under way to finish writing.
func (x *Extractor) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	x.Wait(ctx)
	return nil
}

var (
	_ middleware.Gate  = WriteGate{}
	_ middleware.Ender = (*Extractor)(nil)
)
