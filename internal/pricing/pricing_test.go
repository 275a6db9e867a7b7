package pricing

import (
	"math"
	"testing"

	"github.com/cairn-dev/cairn/model"
)

func TestCost(t *testing.T) {
	u := model.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheCreationInputTokens: 1_000_000, CacheReadInputTokens: 10_000_000}
	tests := []struct {
		model string
		want  float64
	}{
		{"claude-sonnet-4-5", 3 + 1.5 + 3.75 + 3},
		{"claude-opus-4-8", 5 + 2.5 + 6.25 + 5},
		{"claude-3-opus-20240229", 15 + 7.5 + 18.75 + 15},
		{"claude-haiku-4-5", 1 + 0.5 + 1.25 + 1},
		{"qwen2.5-coder", 0},
	}
	for _, tt := range tests {
		if got := Cost(tt.model, u); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Cost(%s) = %v, want %v", tt.model, got, tt.want)
		}
	}
}
