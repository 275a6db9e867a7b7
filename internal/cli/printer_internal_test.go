package cli

import "testing"

// TestStatusWord: stream-json's status events carry Claude Code's word
// for what the session is busy with, not the part the terminal shows.
func TestStatusWord(t *testing.T) {
	for text, want := range map[string]any{"compacting": "compacting", "compacting: part 3": "compacting", "collapsing": "collapsing", "": nil} {
		if got := statusWord(text); got != want {
			t.Errorf("statusWord(%q) = %v, want %v", text, got, want)
		}
	}
}
