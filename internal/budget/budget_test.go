package budget_test

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/budget"
	"github.com/cairn-dev/cairn/model"
)

// TestBudget: a prompt with a budget gets its note, and the turn goes on
// while less than 90% is spent and each continuation makes progress; a
// prompt without one lets the turn end.
func TestBudget(t *testing.T) {
	spent := func(n int64) *engine.Result { return &engine.Result{Total: model.Usage{OutputTokens: n}} }
	for _, tt := range []struct {
		name   string
		prompt string
		spent  []int64
		want   []bool // whether the turn goes on, at each stop
	}{
		{"no budget", "fix it", []int64{10}, []bool{false}},
		{"until 90% is spent", "fix it +10k", []int64{1000, 5000, 9000, 9500}, []bool{true, true, false, false}},
		{"a continuation without progress ends it", "fix it +10k", []int64{1000, 1400, 5000}, []bool{true, false, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b budget.Budget
			notes := b.Prompt(t.Context(), tt.prompt)
			if (len(notes) == 1) != (tt.prompt != "fix it") {
				t.Fatalf("Prompt gave %+v", notes)
			}
			for i, n := range tt.spent {
				more := b.BeforeStop(t.Context(), spent(n), i > 0)
				if (more != "") != tt.want[i] {
					t.Errorf("stop %d at %d tokens: %q", i, n, more)
				}
				if more != "" && !strings.Contains(more, "Token budget:") {
					t.Errorf("continuation %q", more)
				}
			}
		})
	}
	var b budget.Budget
	b.Prompt(t.Context(), "fix it +10k")
	b.Prompt(t.Context(), "and now this")
	if more := b.BeforeStop(t.Context(), spent(1), false); more != "" {
		t.Errorf("a prompt without a budget kept the last one's: %q", more)
	}
}
