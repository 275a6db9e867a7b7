package engine_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// instant is a model that answers at once, so a benchmark measures only
// the engine's own work.
type instant struct{ resp model.Response }

func (m *instant) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		r := m.resp
		yield(model.Chunk{Kind: model.ChunkDone, Response: &r}, nil)
	}
}

// BenchmarkStep is one turn (prompt, one model step, end) over a history
// of about 150K tokens: building the request, consuming the stream,
// recording the transcript. Target: ≤ 1 ms a step.
func BenchmarkStep(b *testing.B) {
	var history []model.Message
	for i := 0; tokens.EstimateMessages(history) < 150_000; i++ {
		history = append(history,
			model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(fmt.Sprintf("t%d", i), strings.Repeat("output line\n", 200), false)}},
			model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock(strings.Repeat("reasoning ", 150)), {Type: model.BlockToolUse, ID: fmt.Sprintf("t%d", i+1), Name: "Bash", Input: []byte(`{"command":"go test ./..."}`)}}},
		)
	}
	history = append(history, model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock("last", "ok", false)}})
	store := transcript.NewMemStore()
	app, _ := store.OpenAppender(context.Background(), "bench")
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	defer w.Close()
	rec := session.NewRecorder(w, session.RecorderOptions{Envelope: session.Envelope{SessionID: "bench", CWD: "/p"}})
	reg, _ := tool.NewRegistry()
	m := &instant{resp: model.Response{ID: "msg", Model: "m", Content: []model.Block{model.TextBlock("done")}, StopReason: model.StopEndTurn}}
	s := engine.New(engine.Config{Model: m, ModelName: "m", MaxTokens: 1000, Tools: reg, Recorder: rec,
		System: func(context.Context) ([]model.SystemBlock, error) {
			return []model.SystemBlock{{Text: "system", Cache: true}}, nil
		}}, history)
	// Every step is over the same history: a turn adds two messages, and
	// without this the history of the thousands of steps a run makes
	// would be what is measured, not 150K tokens. It has room for them,
	// as a session's history mostly has (a copy of it all would be the
	// benchmark's, not a step's).
	base := slices.Grow(slices.Clone(history), 8)[:len(history)]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.SetHistory(base)
		s.SetUsage(model.Usage{InputTokens: 150_000}, len(history)-1)
		for _, err := range s.Run(context.Background(), engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("next")}}}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
