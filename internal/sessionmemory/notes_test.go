package sessionmemory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tokens"
)

func TestTemplateHasTheTenSections(t *testing.T) {
	var got []string
	for _, s := range parse(DefaultTemplate) {
		got = append(got, s.name())
	}
	want := []string{"Session Title", "Current State", "Task specification", "Files and Functions", "Workflow",
		"Errors & Corrections", "Codebase Documentation", "Learnings", "Key results", "Worklog"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	if join(parse(DefaultTemplate)) != DefaultTemplate {
		t.Error("parse and join do not give the template back")
	}
}

func TestParseIgnoresHeadingsInCode(t *testing.T) {
	notes := "# Workflow\n_how_\n```sh\n# build first\ngo build ./...\n```\n# Learnings\n_what_\n"
	secs := parse(notes)
	if len(secs) != 2 || secs[0].name() != "Workflow" || !strings.Contains(secs[0].body, "# build first") {
		t.Fatalf("sections %q", secs)
	}
	if join(secs) != notes {
		t.Error("round trip changed the notes")
	}
}

func TestEmpty(t *testing.T) {
	custom := "# Plan\n_the plan_\n"
	for _, tc := range []struct {
		name, notes, template string
		want                  bool
	}{
		{"template", DefaultTemplate, DefaultTemplate, true},
		{"nothing", "", DefaultTemplate, true},
		{"reformatted template", strings.ReplaceAll(DefaultTemplate, "\n\n", "\n\n\n"), DefaultTemplate, true},
		{"a line written", strings.Replace(DefaultTemplate, "oldest first_\n", "oldest first_\n- ran the tests\n", 1), DefaultTemplate, false},
		{"custom template", custom, custom, true},
		{"custom template filled", custom + "- step one\n", custom, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Empty(tc.notes, tc.template); got != tc.want {
				t.Errorf("Empty = %v, want %v", got, tc.want)
			}
		})
	}
}

// filled returns the template with n tokens of text under the named
// section.
func filled(section string, n int) string {
	line := strings.Repeat("word ", 15) + "\n" // 76 bytes
	body := strings.Repeat(line, n*tokens.BytesPerToken/len(line))
	secs := parse(DefaultTemplate)
	for i, s := range secs {
		if s.name() == section {
			secs[i].body = strings.TrimRight(s.body, "\n") + "\n" + body + "\n"
		}
	}
	return join(secs)
}

func TestFit(t *testing.T) {
	const pointer = "/notes/summary.full.md"
	t.Run("within budget", func(t *testing.T) {
		notes := filled("Worklog", 1_500)
		got, cut := fit(notes, MaxSectionTokens, MaxTotalTokens, pointer)
		if got != notes || len(cut) != 0 {
			t.Errorf("notes within budget changed; cut %q", cut)
		}
	})
	t.Run("a section over", func(t *testing.T) {
		notes := filled("Worklog", 3_000)
		got, cut := fit(notes, MaxSectionTokens, MaxTotalTokens, pointer)
		if diff := cmp.Diff([]string{"Worklog"}, cut); diff != "" {
			t.Fatalf("cut (-want +got):\n%s", diff)
		}
		for _, s := range parse(got) {
			if n := tokens.Estimate(s.body); n > MaxSectionTokens {
				t.Errorf("%s holds %d tokens after fit", s.name(), n)
			}
		}
		worklog := parse(got)[len(parse(got))-1]
		if !strings.HasPrefix(worklog.body, "_One terse line per step") || !strings.Contains(worklog.body, pointer) {
			t.Errorf("the cut section lost its description or its pointer:\n%.300s", worklog.body)
		}
		if !strings.HasPrefix(got, "# Session Title\n") || strings.Count(got, "\n# ") != 9 {
			t.Error("fit lost headings")
		}
	})
	t.Run("the whole over", func(t *testing.T) {
		// Seven sections of 1,900 tokens each: over 13,000 in all, though
		// each is within its own budget.
		secs := parse(DefaultTemplate)
		for i, s := range secs[1:8] {
			secs[i+1] = parse(filled(s.name(), 1_900))[i+1]
		}
		notes := join(secs)
		if tokens.Estimate(notes) <= MaxTotalTokens {
			t.Fatalf("test notes hold only %d tokens", tokens.Estimate(notes))
		}
		got, cut := fit(notes, MaxSectionTokens, MaxTotalTokens, pointer)
		if n := tokens.Estimate(got); n > MaxTotalTokens+200 {
			t.Errorf("notes hold %d tokens after fit, budget %d", n, MaxTotalTokens)
		}
		if len(cut) == 0 {
			t.Error("nothing reported cut")
		}
		if strings.Count(got, "\n# ") != 9 {
			t.Error("fit lost headings")
		}
	})
}

func TestLoadTexts(t *testing.T) {
	dir := t.TempDir()
	texts, err := LoadTexts(dir)
	if err != nil || texts.Template != DefaultTemplate || texts.Prompt != DefaultPrompt {
		t.Fatalf("no overrides: %v", err)
	}
	write(t, filepath.Join(dir, "template.md"), "# Plan\n_the plan_\n")
	write(t, filepath.Join(dir, "prompt.md"), "   \n") // blank: the default stays
	write(t, filepath.Join(dir, "config", "prompt.md"), "Update {{notesPath}}:\n{{currentNotes}}")
	texts, err = LoadTexts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if texts.Template != "# Plan\n_the plan_\n" {
		t.Errorf("template %q", texts.Template)
	}
	if got := prompt(texts.Prompt, "/n.md", "# Plan\n", nil); got != "Update /n.md:\n# Plan" {
		t.Errorf("prompt %q", got)
	}
}

func TestPromptNamesSectionsOverBudget(t *testing.T) {
	notes := filled("Workflow", 2_500)
	got := prompt(DefaultPrompt, "/n.md", notes, overBudget(notes))
	if !strings.Contains(got, "shorten them first: Workflow (about") {
		t.Errorf("prompt does not name the section over budget:\n%s", got[len(got)-200:])
	}
	for _, p := range []string{"{{", "}}"} {
		if strings.Contains(strings.ReplaceAll(got, notes, ""), p) {
			t.Errorf("placeholder left in the prompt")
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzNotes checks that any notes cut into sections join back unchanged,
// and that holding them to a budget never panics nor grows them past it.
func FuzzNotes(f *testing.F) {
	f.Add(DefaultTemplate, int64(50))
	f.Add("# A\n```\n# not a heading\n", int64(10))
	f.Add("no heading\n# B\r\nbody", int64(1))
	f.Add(filled("Worklog", 3_000), int64(2_000))
	f.Fuzz(func(t *testing.T, notes string, budget int64) {
		if join(parse(notes)) != notes {
			t.Fatal("parse and join changed the notes")
		}
		budget = max(1, budget%20_000)
		out, _ := fit(notes, budget, budget*6, "/p")
		// A cut section holds at most its budget, or the pointer alone
		// when the budget is smaller than the pointer.
		limit := max(budget, tokens.Estimate(truncate("", 0, "/p"))) + 1
		in := parse(notes)
		for i, s := range parse(out) {
			if n := tokens.Estimate(s.body); n > limit && n > tokens.Estimate(in[i].body) {
				t.Errorf("section %q holds %d tokens, budget %d", s.name(), n, budget)
			}
		}
	})
}
