package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// listedAt are the indexes of the request's messages that carry a skill
// listing.
func listedAt(r *modeltest.Request) []int {
	var at []int
	for i, m := range r.Params.Messages {
		for _, b := range m.Content {
			if b.Type == model.BlockText && agent.IsSkillListing(b.Text) {
				at = append(at, i)
			}
		}
	}
	return at
}

// TestSkillListingAfterRewind: rewinding the conversation to before the
// prompt that carried the listing sends it again with the next prompt;
// rewinding to a later prompt keeps the first message's and adds none.
func TestSkillListingAfterRewind(t *testing.T) {
	cwd := t.TempDir()
	skill := filepath.Join(cwd, ".claude/skills/deploy-check/SKILL.md")
	if err := os.MkdirAll(filepath.Dir(skill), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, []byte("---\nname: deploy-check\ndescription: Checks a deploy.\n---\nRun the checks.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := modeltest.Start(t, modeltest.Config{Default: modeltest.Text("ok")})
	now := func() time.Time { return time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC) }
	a := openOn(t, srv, agent.Options{Home: session.Home{Dir: t.TempDir()}, Cwd: cwd, ModelName: "claude-test", MaxTokens: 4000,
		Window: tokens.Window{Size: 200_000, MaxOutput: 4_000}, Now: now, NewUUID: counter(),
		Extensions: agent.ExtensionOptions{Set: extension.Load(extension.Options{ProjectDir: cwd})}}, nil)
	point := func(prompt string) string {
		for _, m := range a.History() {
			if m.Role == model.RoleUser && strings.HasPrefix(m.Text(), prompt) {
				return m.IDs[0]
			}
		}
		t.Fatalf("no message %q", prompt)
		return ""
	}
	runAll(t, a, "first")
	runAll(t, a, "second")
	if at := listedAt(srv.Last()); len(at) != 1 || at[0] != 0 {
		t.Fatalf("listings in messages %v, want the first", at)
	}
	if _, err := a.Rewind(t.Context(), point("second"), false, true); err != nil {
		t.Fatal(err)
	}
	runAll(t, a, "second again")
	if at := listedAt(srv.Last()); len(at) != 1 || at[0] != 0 {
		t.Errorf("after a rewind to the second prompt: listings in messages %v, want the first only", at)
	}
	if _, err := a.Rewind(t.Context(), point("first"), false, true); err != nil {
		t.Fatal(err)
	}
	runAll(t, a, "from the start")
	if at := listedAt(srv.Last()); len(at) != 1 || at[0] != 0 {
		t.Errorf("after a rewind to the start: listings in messages %v, want the first", at)
	}
}
