package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
)

// TestSameNumbersEverywhere: `cairn context ID`, /context (headless and
// in the terminal UI), /memory and the context meter print the same
// instructions, memory, tools and percentage for one session.
func TestSameNumbersEverywhere(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, "CLAUDE.md"), "Use tabs. Run go vet before committing.\n")
	dir := memory.Dir(session.Home{Dir: p.home}, p.dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := memory.WriteIndex(dir, "- [release](release.md) — the release branch is frozen until Friday\n"); err != nil {
		t.Fatal(err)
	}
	p.srv.Enqueue(modeltest.Text("Hello."))
	if code, _, e := p.cairn(t, "-p", "hello"); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}

	code, out, e := p.cairn(t, "context", "--json")
	if code != 0 {
		t.Fatalf("context: exit %d: %s", code, e)
	}
	var rep struct {
		PercentUsed float64
		Breakdown   struct{ Tools, Instructions, Memory int64 }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Breakdown.Tools == 0 || rep.Breakdown.Instructions == 0 || rep.Breakdown.Memory == 0 || rep.PercentUsed == 0 {
		t.Fatalf("a share is missing: %s", out)
	}
	want := numbers{
		Tools: thousands(rep.Breakdown.Tools), Instructions: thousands(rep.Breakdown.Instructions),
		Memory: thousands(rep.Breakdown.Memory), Percent: fmt.Sprintf("%.1f%%", rep.PercentUsed),
	}
	code, out, e = p.cairn(t, "context")
	if code != 0 {
		t.Fatalf("context: exit %d: %s", code, e)
	}
	if diff := cmp.Diff(want, contextNumbers(out)); diff != "" {
		t.Errorf("cairn context (text) against --json (-want +got):\n%s", diff)
	}
	code, out, e = p.cairn(t, "-c", "-p", "/context")
	if code != 0 {
		t.Fatalf("-p /context: exit %d: %s", code, e)
	}
	if diff := cmp.Diff(want, contextNumbers(out)); diff != "" {
		t.Errorf("cairn -c -p /context against cairn context (-want +got):\n%s", diff)
	}
	code, out, e = p.cairn(t, "memory", "explain", "--json")
	if code != 0 {
		t.Fatalf("memory explain: exit %d: %s", code, e)
	}
	var mem struct{ InstructionTokens, MemoryTokens int64 }
	if err := json.Unmarshal([]byte(out), &mem); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if mem.InstructionTokens != rep.Breakdown.Instructions || mem.MemoryTokens != rep.Breakdown.Memory {
		t.Errorf("memory explain says %d of instructions and %d of memory; cairn context %d and %d", mem.InstructionTokens, mem.MemoryTokens, rep.Breakdown.Instructions, rep.Breakdown.Memory)
	}

	// The terminal UI: the meter, /context and /memory.
	x := p.startUI(t, 120, 60, nil, "-c")
	s := x.waitFor("to auto-compact")
	if !strings.Contains(s, "("+want.Percent+")") {
		t.Errorf("the meter does not show %s:\n%s", want.Percent, s)
	}
	x.typeKeys("/context", "Enter")
	s = x.waitFor("Tool results")
	if diff := cmp.Diff(want, contextNumbers(s)); diff != "" {
		t.Errorf("/context in the terminal UI against cairn context (-want +got):\n%s", diff)
	}
	x.typeKeys("/memory", "Enter")
	s = x.waitFor("Every session starts with")
	line := regexp.MustCompile(`([\d,]+) of instructions .* and ([\d,]+) of memory`).FindStringSubmatch(strings.Join(strings.Fields(s), " "))
	if line == nil || line[1] != want.Instructions || line[2] != want.Memory {
		t.Errorf("/memory does not say %s of instructions and %s of memory:\n%s", want.Instructions, want.Memory, s)
	}
}

// numbers are the shares every report must agree on.
type numbers struct{ Tools, Instructions, Memory, Percent string }

// contextNumbers reads them from a printed context report.
func contextNumbers(s string) numbers {
	find := func(re string) string {
		if m := regexp.MustCompile(re).FindStringSubmatch(s); m != nil {
			return m[1]
		}
		return ""
	}
	return numbers{
		Tools: find(`Tools\s+([\d,]+)`), Instructions: find(`Instructions\s+([\d,]+)`),
		Memory: find(`Memory\s+([\d,]+)`), Percent: find(`\(([\d.]+%) of the effective window`),
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
