package transcript_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/bench/gen"
	"github.com/cairn-dev/cairn/transcript"
)

func loadFile(t *testing.T, path string) *transcript.Conversation {
	t.Helper()
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{NoRepair: true})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return conv
}

func uuidsOf(c *transcript.Conversation) []string {
	var out []string
	for _, e := range c.Entries {
		out = append(out, e.UUID)
	}
	return out
}

// TestLoadDamagedGenerated loads a generated session with garbage in the
// middle, a 20 MB line that is not an entry and a torn last line: every
// entry is still there, and each bad line has a warning naming it.
func TestLoadDamagedGenerated(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.jsonl")
	st := generateFile(t, clean, gen.Options{Size: 1 << 20, Seed: 9})
	b, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(dir, "damaged.jsonl")
	if err := os.WriteFile(damaged, gen.Damage(b), 0o600); err != nil {
		t.Fatal(err)
	}
	conv := loadFile(t, damaged)
	if diff := cmp.Diff(st.Resume, uuidsOf(conv)); diff != "" {
		t.Errorf("the damaged file lost entries (-clean +damaged):\n%s", diff)
	}
	n := bytes.Count(b, []byte("\n"))
	want := []string{
		`^line ` + strconv.Itoa(n/2+2) + ` \(byte \d+\): not a valid entry`,
		`^line ` + strconv.Itoa(n*3/4+3) + ` \(byte \d+\): not a valid entry`,
		`^line ` + strconv.Itoa(n+3) + ` \(byte \d+\): incomplete last line`,
	}
	if len(conv.Warnings) != len(want) {
		t.Fatalf("warnings = %q, want one for each of the 3 bad lines", conv.Warnings)
	}
	// The loader reads backwards: the last line's warning comes first.
	got := slices.Clone(conv.Warnings)
	slices.Reverse(got)
	for i, w := range got {
		if !regexp.MustCompile(want[i]).MatchString(w) {
			t.Errorf("warning %d = %q, want it to match %s", i, w, want[i])
		}
	}
}

// TestLoadBrokenChainGenerated breaks a generated session's chain in the
// middle: a missing parent and a cycle each end the walk there, with a
// warning, keeping the chain from the break to the leaf.
func TestLoadBrokenChainGenerated(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.jsonl")
	st := generateFile(t, clean, gen.Options{Size: 1 << 20, Seed: 10})
	b, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	// A typed prompt in the middle of the chain.
	at := -1
	for i := len(st.Resume) / 2; i < len(st.Resume); i++ {
		for _, l := range lines {
			if strings.Contains(l, `"uuid":"`+st.Resume[i]+`"`) && strings.Contains(l, `"promptSource"`) {
				at = i
				break
			}
		}
		if at >= 0 {
			break
		}
	}
	if at < 0 {
		t.Fatal("no prompt in the second half of the chain")
	}
	rewrite := func(name string, edit func(line string) string) string {
		var out strings.Builder
		for _, l := range lines {
			if strings.Contains(l, `"uuid":"`+st.Resume[at]+`"`) {
				l = edit(l)
			}
			out.WriteString(l)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(out.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name    string
		edit    func(string) string
		from    int
		warning string
	}{
		{"missing parent", func(string) string { return "" }, at + 1, "is not in the file"},
		{"cycle", func(l string) string {
			return regexp.MustCompile(`"parentUuid":"[^"]*"`).ReplaceAllString(l, `"parentUuid":"`+st.Resume[at+3]+`"`)
		}, at, "form a loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := loadFile(t, rewrite(tc.name+".jsonl", tc.edit))
			if diff := cmp.Diff(st.Resume[tc.from:], uuidsOf(conv)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if len(conv.Warnings) != 1 || !strings.Contains(conv.Warnings[0], tc.warning) {
				t.Errorf("warnings = %q, want one saying %q", conv.Warnings, tc.warning)
			}
		})
	}
}
