package transcript_test

import (
	"testing"

	"github.com/cairn-dev/cairn/transcript"
)

// TestLoadCustomTitle: the newest custom-title line the load read names
// the session.
func TestLoadCustomTitle(t *testing.T) {
	var s script
	u := s.user("", "hello")
	s.raw(`{"type":"custom-title","customTitle":"OLD","sessionId":"sess"}`)
	a := s.assistant(u, "msg_1", text("hi"))
	s.raw(`{"type":"custom-title","customTitle":"NEW NAME","sessionId":"sess"}`)
	s.lastPrompt(a[len(a)-1])
	if got := load(t, s.bytes(), transcript.LoadOptions{}).CustomTitle; got != "NEW NAME" {
		t.Errorf("CustomTitle %q, want NEW NAME", got)
	}
}
