package tokens

import (
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
)

func TestThresholds(t *testing.T) {
	tests := []struct {
		name                  string
		w                     Window
		effective, auto, warn int64
	}{
		{"claude 200K, 32K output", Window{Size: 200_000, MaxOutput: 32_000}, 180_000, 167_000, 160_000},
		{"small output keeps more", Window{Size: 200_000, MaxOutput: 8_000}, 192_000, 179_000, 172_000},
		{"capped by the environment", Window{Size: 200_000, MaxOutput: 32_000, Cap: 80_000}, 60_000, 47_000, 40_000},
		{"a cap above the window does nothing", Window{Size: 100_000, MaxOutput: 4_000, Cap: 500_000}, 96_000, 83_000, 76_000},
		// Where the fixed reserves would leave less than half the window,
		// they shrink to half of it: the threshold is never negative.
		{"capped low", Window{Size: 200_000, MaxOutput: 32_000, Cap: 50_000}, 34_849, 25_001, 19_698},
		{"a 32K local model", Window{Size: 32_768, MaxOutput: 8_192}, 26_435, 16_385, 10_973},
		{"a 20K window", Window{Size: 20_000, MaxOutput: 32_000}, 13_940, 10_001, 7_880},
		{"a 16K local model", Window{Size: 16_384, MaxOutput: 4_096}, 14_422, 8_193, 4_839},
		{"an 8K local model", Window{Size: 8_192, MaxOutput: 4_096}, 7_211, 4_097, 2_420},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.w.Effective(); got != tt.effective {
				t.Errorf("Effective = %d, want %d", got, tt.effective)
			}
			if got := tt.w.AutoCompactAt(); got != tt.auto {
				t.Errorf("AutoCompactAt = %d, want %d", got, tt.auto)
			}
			if got := tt.w.WarnAt(); got != tt.warn {
				t.Errorf("WarnAt = %d, want %d", got, tt.warn)
			}
		})
	}
}

func TestCountAnchorsAtTheLastResponse(t *testing.T) {
	msgs := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("aaaaaaaa")}},      // 2
		{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("bbbbbbbb")}}, // reported
		{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock("t", "cccccccccccc", false)}},
		{Role: model.RoleUser, Content: []model.Block{model.TextBlock("dddd")}},
	}
	usage := model.Usage{InputTokens: 10, CacheReadInputTokens: 1000, CacheCreationInputTokens: 50, OutputTokens: 5}
	if got, want := Count(msgs, 1, usage), int64(1065+3+1); got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	if got, want := Count(msgs, -1, usage), int64(2+2+3+1); got != want {
		t.Errorf("Count without usage = %d, want %d", got, want)
	}
}

func TestForModel(t *testing.T) {
	for name, want := range map[string]Window{
		"claude-opus-4-8":         {Size: 200_000, MaxOutput: 32_000},
		"claude-sonnet-4-5[1m]":   {Size: 1_000_000, MaxOutput: 64_000},
		"claude-3-5-haiku-latest": {Size: 200_000, MaxOutput: 64_000},
	} {
		if got, ok := ForModel(name); !ok || got != want {
			t.Errorf("ForModel(%q) = %+v, %v", name, got, ok)
		}
	}
	if _, ok := ForModel("llama3"); ok {
		t.Error("llama3 is not a model cairn knows the window of")
	}
	env := map[string]string{"CAIRN_AUTO_COMPACT_WINDOW": "50000"}
	if got := CapFromEnv(func(k string) string { return env[k] }); got != 50000 {
		t.Errorf("CapFromEnv = %d", got)
	}
	if got := CapFromEnv(func(string) string { return "junk" }); got != 0 {
		t.Errorf("CapFromEnv(junk) = %d", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestEstimateFloor: the floor is the content's estimate and
// BlockOverhead for each block, however the blocks are split among the
// messages; no block, no overhead.
func TestEstimateFloor(t *testing.T) {
	text := strings.Repeat("x", 400) // 100 tokens
	one := []model.Message{{Role: "user", Content: []model.Block{model.TextBlock(text), model.TextBlock(text)}}}
	two := []model.Message{{Role: "user", Content: []model.Block{model.TextBlock(text)}}, {Role: "assistant", Content: []model.Block{model.TextBlock(text)}}}
	for _, msgs := range [][]model.Message{one, two} {
		if got, want := EstimateFloor(msgs), EstimateMessages(msgs)+2*BlockOverhead; got != want || want != 200+2*BlockOverhead {
			t.Errorf("EstimateFloor = %d, want %d", got, want)
		}
	}
	if got := EstimateFloor([]model.Message{{Role: "assistant"}}); got != 0 {
		t.Errorf("a message with no block: %d, want 0", got)
	}
}
