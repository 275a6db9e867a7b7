package tokens

import (
	"strings"
	"testing"
)

func TestParseBudget(t *testing.T) {
	tests := []struct {
		prompt string
		want   int64
		ok     bool
	}{
		{"+500k", 500_000, true},
		{"  +500K refactor the parser", 500_000, true},
		{"+1.5m get the tests green", 1_500_000, true},
		{"refactor the parser +200k", 200_000, true},
		{"refactor the parser, +2m.", 2_000_000, true},
		{"spend 2M tokens on the migration", 2_000_000, true},
		{"Please use 1B tokens if you need to", 1_000_000_000, true},
		{"use 250k token", 250_000, true},
		{"USE 3 m TOKENS", 3_000_000, true},
		{"spend 0.5k tokens", 500, true},
		{"use 999b tokens", MaxBudget, true},
		{"a+500k in the middle", 0, false},
		{"c++ is +5 points", 0, false},
		{"+500 words", 0, false},
		{"+500kb file", 0, false},
		{"we use 2M rows", 0, false},
		{"spend tokens", 0, false},
		{"+0k", 0, false},
		{"reuse 2m tokens", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.prompt, func(t *testing.T) {
			got, ok := ParseBudget(tc.prompt)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseBudget(%q) = %d, %v; want %d, %v", tc.prompt, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"+500k", "spend 2M tokens", "use 1B tokens", "x +1.5m", "+99999999999999999999b", "use 1e9k tokens"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseBudget(s)
		if ok && (n < 1 || n > MaxBudget) {
			t.Fatalf("ParseBudget(%q) = %d", s, n)
		}
		if !ok && n != 0 {
			t.Fatalf("ParseBudget(%q) = %d without ok", s, n)
		}
		if ok && !strings.ContainsAny(strings.ToLower(s), "kmb") {
			t.Fatalf("ParseBudget(%q) found a budget without a suffix", s)
		}
	})
}
