package prompt

import (
	"context"
	"strings"
	"testing"
)

func TestBuildIsStableAndReportsBreaks(t *testing.T) {
	calls := 0
	volatile := ""
	b := NewBuilder(
		Fixed("b", true, "static two"),
		Section{Key: "dyn", Text: func(context.Context) (string, error) { calls++; return "dynamic", nil }},
		Section{Key: "vol", Volatile: true, Text: func(context.Context) (string, error) { return volatile, nil }},
		Fixed("a", true, "static one"),
		Fixed("empty", false, ""),
	)
	ctx := context.Background()
	first, err := b.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].Text != "static two\n\nstatic one" || first[1].Text != "dynamic" || !first[0].Cache || !first[1].Cache {
		t.Fatalf("blocks %+v", first)
	}
	second, _ := b.Build(ctx)
	if calls != 1 || !sameBlocks(first, second) || b.Breaks() != 0 {
		t.Errorf("memoised section computed %d times, breaks %d", calls, b.Breaks())
	}
	volatile = "now different"
	third, _ := b.Build(ctx)
	if b.Breaks() != 1 || !strings.HasSuffix(third[1].Text, "now different") {
		t.Errorf("breaks %d, dynamic %q", b.Breaks(), third[1].Text)
	}
}

func TestCairnPrompt(t *testing.T) {
	b := NewBuilder(Cairn(Options{Cwd: "/work/p", IsGitRepo: true, ModelName: "claude-x", AppendText: "Always answer in French."})...)
	blocks, err := b.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(blocks[0].Text, "You are cairn") || strings.Contains(blocks[0].Text, "/work/p") {
		t.Error("the static block must not hold session facts")
	}
	for _, want := range []string{"Working directory: /work/p", "Is a git repository: true", "Model: claude-x", "Always answer in French."} {
		if !strings.Contains(blocks[1].Text, want) {
			t.Errorf("dynamic block lacks %q", want)
		}
	}
}

func TestMemoryAndBudgetSections(t *testing.T) {
	calls := 0
	b := NewBuilder(Cairn(Options{Cwd: "/p", AppendText: "LAST", TokenBudgets: true,
		Memory: func(context.Context) (string, error) { calls++; return "# Memory\nindex", nil }})...)
	first, err := b.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dyn := first[1].Text
	mem, budget, last := strings.Index(dyn, "# Memory"), strings.Index(dyn, "# Token budgets"), strings.Index(dyn, "LAST")
	if mem < 0 || budget < mem || last < budget {
		t.Errorf("dynamic block order: memory %d, budget %d, append %d", mem, budget, last)
	}
	b.Build(context.Background())
	if calls != 1 || b.Breaks() != 0 {
		t.Errorf("memory computed %d times, %d breaks", calls, b.Breaks())
	}
	plain, _ := NewBuilder(Cairn(Options{Cwd: "/p"})...).Build(context.Background())
	if strings.Contains(plain[1].Text, "# Memory") || strings.Contains(plain[1].Text, "Token budgets") {
		t.Error("sections that are off must be left out")
	}
}
