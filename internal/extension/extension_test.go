package extension

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSubstitute(t *testing.T) {
	for _, tc := range []struct{ name, body, args, want string }{
		{"all", "Review $ARGUMENTS now", "a.go b.go", "Review a.go b.go now"},
		{"positional from zero", "[$0] [$1] [$2]", `a "b c" d`, "[a] [b c] [d]"},
		{"indexed", "[$ARGUMENTS[1]]", "x y", "[y]"},
		{"past the last stays", "[$0] [$3]", "x", "[x] [$3]"},
		{"none taken: appended", "Plain.\n", "x y", "Plain.\n\n\nARGUMENTS: x y"},
		{"none taken, no args", "Plain.\n", "", "Plain.\n"},
		{"empty arguments", "Do $ARGUMENTS.", "", "Do ."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Substitute(tc.body, tc.args)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSplitArgs(t *testing.T) {
	got := SplitArgs(`a  "b c" 'd "e"' f\ g`)
	if diff := cmp.Diff([]string{"a", "b c", `d "e"`, "f g"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	write(t, filepath.Join(project, ".claude/commands/review.md"), "---\ndescription: Review a file\nargument-hint: <file>\nallowed-tools: Bash(git diff:*), Read\nmodel: claude-haiku-4-5\n---\nReview $ARGUMENTS\n")
	write(t, filepath.Join(project, ".claude/commands/git/log.md"), "Show the log\n")
	write(t, filepath.Join(project, ".claude/commands/broken.md"), "---\ndescription: [oops\n---\nbody\n")
	write(t, filepath.Join(project, ".cairn/commands/dup.md"), "project dup\n")
	write(t, filepath.Join(home, "commands/dup.md"), "user dup\n")
	write(t, filepath.Join(project, ".claude/skills/deploy-check/SKILL.md"), "---\nname: deploy-check\ndescription: Checks a deploy\nallowed-tools:\n  - Read\n  - Bash(make check)\n---\n# Deploy\n")
	write(t, filepath.Join(project, ".claude/skills/nameless/SKILL.md"), "---\ndescription: no name\n---\nbody\n")
	write(t, filepath.Join(project, ".claude/skills/big/SKILL.md"), "---\nname: big\ndescription: big\n---\n"+strings.Repeat("x", 10<<20))
	write(t, filepath.Join(project, ".claude/commands/deploy-check.md"), "the command loses to the skill\n")
	write(t, filepath.Join(project, ".claude/output-styles/terse.md"), "---\nname: Terse\ndescription: few words\nkeep-coding-instructions: true\n---\nAnswer in few words.\n")

	s := Load(Options{ProjectDir: project, CairnHome: home})

	var names []string
	for _, c := range s.Commands {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"broken", "dup", "git:log", "review"}, names); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	r := s.Command("review")
	want := &Command{Name: "review", Description: "Review a file", ArgumentHint: "<file>", AllowedTools: []string{"Bash(git diff:*)", "Read"},
		Model: "claude-haiku-4-5", Body: "Review $ARGUMENTS\n", Path: filepath.Join(project, ".claude/commands/review.md"), Scope: ScopeProjectClaude}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("review (-want +got):\n%s", diff)
	}
	if got := s.Command("dup"); got.Scope != ScopeUser || got.Body != "user dup\n" {
		t.Errorf("dup = %+v, want the user's", got)
	}
	if got := s.Command("broken"); got == nil || got.Body != "body\n" {
		t.Errorf("broken = %+v, want its body despite the front matter", got)
	}
	if got := s.Command("git:log"); got.Description != "Show the log" {
		t.Errorf("git:log description = %q, want its first line", got.Description)
	}
	var skills []string
	for _, k := range s.Skills {
		skills = append(skills, k.Name)
	}
	if diff := cmp.Diff([]string{"deploy-check", "nameless"}, skills); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Read", "Bash(make check)"}, s.Skill("deploy-check").AllowedTools); diff != "" {
		t.Errorf("allowed-tools (-want +got):\n%s", diff)
	}
	if st := s.Style("terse"); st == nil || st.Text != "Answer in few words." || !st.KeepCodingInstructions {
		t.Errorf("style terse = %+v", st)
	}
	for _, name := range []string{"default", "explanatory", "learning"} {
		if s.Style(name) == nil {
			t.Errorf("built-in style %s missing", name)
		}
	}
	for _, want := range []string{
		filepath.Join(project, ".claude/commands/broken.md") + ": front matter",
		filepath.Join(project, ".claude/skills/nameless/SKILL.md") + " has no name",
		filepath.Join(project, ".claude/skills/big/SKILL.md") + " is not loaded: it is 10.0 MB",
		"both define the command \"dup\"",
		"the skill " + filepath.Join(project, ".claude/skills/deploy-check/SKILL.md") + " and the command",
	} {
		if !containsWarning(s.Warnings, want) {
			t.Errorf("no warning with %q in:\n%s", want, strings.Join(s.Warnings, "\n"))
		}
	}
	var lost []string
	for _, e := range s.Entries {
		if !e.Used {
			lost = append(lost, string(e.Kind)+" "+e.Name+" "+e.Scope)
		}
	}
	if diff := cmp.Diff([]string{"command deploy-check project (.claude)", "command dup project (.cairn)"}, lost); diff != "" {
		t.Errorf("entries that lost (-want +got):\n%s", diff)
	}
}

func containsWarning(ws []string, s string) bool {
	for _, w := range ws {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

func TestExpand(t *testing.T) {
	project := t.TempDir()
	write(t, filepath.Join(project, "src/main.go"), "package main\n")
	write(t, filepath.Join(filepath.Dir(project), "outside.txt"), "secret\n")
	c := &Command{Name: "review", Path: "review.md", AllowedTools: []string{"Bash(echo:*)"},
		Body: "Review $0. @src/main.go @missing.txt @../outside.txt\nStatus: !`echo hi`\n"}
	var asked []string
	o := ExpandOptions{Dir: project, Allow: func(_ context.Context, cmd string, allowed []string) error {
		asked = append(asked, cmd+" "+strings.Join(allowed, ","))
		return nil
	}}
	x, err := c.Expand(context.Background(), "src/main.go", o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>src/main.go</command-args>\n",
		"Review src/main.go. @src/main.go @missing.txt @../outside.txt\nStatus: hi\n",
	}
	if diff := cmp.Diff(want, x.Blocks); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]File{{Path: filepath.Join(project, "src/main.go"), Content: "package main\n"}}, x.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"echo hi Bash(echo:*)"}, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	if len(x.Warnings) != 2 || !strings.Contains(x.Warnings[0], "@missing.txt is not included") || !strings.Contains(x.Warnings[1], "@../outside.txt is not included: it is outside the project") {
		t.Errorf("warnings = %q", x.Warnings)
	}

	// One command denied: none runs.
	marker := filepath.Join(project, "ran")
	c.Body = "!`touch " + marker + "` !`rm -rf /tmp/nothing`"
	o.Allow = func(_ context.Context, cmd string, _ []string) error {
		if strings.HasPrefix(cmd, "rm") {
			return errors.New("rm is not allowed")
		}
		return nil
	}
	_, err = c.Expand(context.Background(), "", o)
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "review.md: !`rm -rf /tmp/nothing` did not run") {
		t.Errorf("err = %v, want a refusal naming the file and the command", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the allowed command ran although another one was denied")
	}
}
