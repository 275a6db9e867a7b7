package transcript

import (
	"strings"
	"testing"
)

// TestFoldIs: foldIs's quick refusals agree with strings.EqualFold,
// also for keys whose letters fold to ASCII from outside it (ſ to s, the
// Kelvin sign to k).
func TestFoldIs(t *testing.T) {
	names := []string{"id", "role", "content", "stop_reason", "usage", "input_tokens", "k"}
	keys := []string{"", "i", "id", "ID", "iD", "Id", "idx", "xd", "role", "Role", "ROLE", "rolE", "roles", "rol",
		"content", "Content", "contenT", "\u017ftop_reason", "STOP_REASON", "stop_\u017fea\u017fon", "usage", "u\u017fage",
		"usag", "uSaGe", "input_tokens", "INPUT_TOKENS", "input_token\u017f", "k", "K", "\u212a", "\u212ax", "\xff", "\xffd", "type"}
	for _, n := range names {
		for _, k := range keys {
			if got, want := foldIs([]byte(k), n), strings.EqualFold(k, n); got != want {
				t.Errorf("foldIs(%q, %q) = %v, strings.EqualFold says %v", k, n, got, want)
			}
		}
	}
}
