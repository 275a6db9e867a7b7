package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestSummarizeChunks summarises a history far over the window in parts:
// each request carries one part of the rendered history after the
// summary of the parts before it, the user told which part is asked, and
// a failed request ends the summary there, rendering nothing more.
func TestSummarizeChunks(t *testing.T) {
	var history []model.Message
	for i := range 40 {
		call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprint("t", i), Name: "Bash", Input: []byte(fmt.Sprintf(`{"command":"make %d"}`, i))}
		history = append(history,
			msg("user", nil, model.TextBlock(fmt.Sprintf("step %d: %s", i, strings.Repeat("words ", 200)))),
			msg("assistant", nil, model.TextBlock("running it"), call),
			msg("user", nil, model.ToolResultBlock(call.ID, strings.Repeat(fmt.Sprintf("output %d ", i), 400), false)))
	}
	w := tokens.Window{Size: 8_192, MaxOutput: 1_024}
	for _, failAt := range []int{-1, 1} {
		t.Run(fmt.Sprint("fail at ", failAt), func(t *testing.T) {
			var got []string
			m := New(Config{Window: w, Model: &modeltest.Scripted{Answer: func(_ context.Context, n int, req *model.Request) ([]model.Block, error) {
				got = append(got, req.Messages[0].Content[0].Text)
				if n == failAt {
					return nil, errors.New("overloaded")
				}
				return []model.Block{model.TextBlock(fmt.Sprintf("S%d", n))}, nil
			}}})
			budget := w.Effective() - int64(m.summaryMax())
			part := (budget - tokens.EstimateRequest(nil, nil, nil)) / 2
			parts := chunks(render(history), part*tokens.BytesPerToken)
			if len(parts) < 3 {
				t.Fatalf("%d parts: the history should need several", len(parts))
			}
			var want []string
			for i, p := range parts {
				if i > 0 {
					p = fmt.Sprintf("Summary of the conversation before this part:\nS%d\n\nThe next part:\n%s", i-1, p)
				}
				want = append(want, p)
				if i == failAt {
					break
				}
			}
			var statuses, wantStatuses []string
			m.status = func(s string) { statuses = append(statuses, s) }
			for i := range want {
				wantStatuses = append(wantStatuses, fmt.Sprintf("compacting: part %d", i+1))
			}
			s, err := m.summarizeChunks(t.Context(), renderSeq(history), nil, nil, "", budget)
			if diff := cmp.Diff(wantStatuses, statuses); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if failAt < 0 && (err != nil || s != fmt.Sprintf("S%d", len(parts)-1)) {
				t.Errorf("summary %q, %v: want the last part's", s, err)
			}
			if failAt >= 0 && err == nil {
				t.Error("a failed part did not fail the summary")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
