package compact_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

func outcome(id, name string, r tool.Result) engine.Outcome {
	return engine.Outcome{Call: model.Block{Type: model.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(`{}`)}, Result: r}
}

// rows is n lines of 100 bytes each (newline included).
func rows(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "row %05d: %s\n", i, strings.Repeat("a", 88))
	}
	return b.String()
}

func textOf(t *testing.T, r tool.Result) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != model.BlockText {
		t.Fatalf("result content %+v, want one text block", r.Content)
	}
	return r.Content[0].Text
}

// TestOffloadFormat checks the preview byte for byte against the shape
// Claude Code writes (COMPAT.md, "Large tool outputs").
func TestOffloadFormat(t *testing.T) {
	dir := t.TempDir()
	out := rows(1089) // 108,900 bytes: 106.3KB
	shape := compact.Offload(compact.OffloadConfig{Dir: dir, Tools: coreTools})
	got := shape(t.Context(), []engine.Outcome{outcome("toolu_01A", "Grep", tool.Text(out))})

	path := filepath.Join(dir, "tool-results", "toolu_01A.txt")
	var lines []string
	for i := range 20 { // the first 2,000 bytes end with a newline
		lines = append(lines, fmt.Sprintf("row %05d: %s", i, strings.Repeat("a", 88)))
	}
	want := "<persisted-output>\n" +
		"Output too large (106.3KB). Full output saved to: " + path + "\n" +
		"\n" +
		"Preview (first 2KB):\n" +
		strings.Join(lines, "\n") + "\n" +
		"...\n" +
		"</persisted-output>"
	if diff := cmp.Diff(want, textOf(t, got[0].Result)); diff != "" {
		t.Errorf("preview (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != out {
		t.Errorf("the file holds %d bytes, not the %d of the output", len(data), len(out))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("tool-results holds %d files, want only the result (no temporary file left)", len(entries))
	}
}

func TestPersistedPreviewCut(t *testing.T) {
	tests := []struct {
		name, text, head string
		more             bool
	}{
		{"at the last line break past half", strings.Repeat("x", 1500) + "\n" + strings.Repeat("y", 1000), strings.Repeat("x", 1500), true},
		{"no line break past half", strings.Repeat("x", 500) + "\n" + strings.Repeat("y", 3000), strings.Repeat("x", 500) + "\n" + strings.Repeat("y", 1499), true},
		{"never inside a character", strings.Repeat("é", 1500), strings.Repeat("é", 1000), true},
		{"short", "abc", "abc", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compact.PersistedPreview("/p", tt.text, 2000)
			_, rest, _ := strings.Cut(got, "Preview (first 2KB):\n")
			tail := "\n</persisted-output>"
			if tt.more {
				tail = "\n...\n</persisted-output>"
			}
			if head, ok := strings.CutSuffix(rest, tail); !ok || head != tt.head {
				t.Errorf("preview of %d bytes: %q", len(tt.text), rest)
			}
		})
	}
}

func TestOffloadDetail(t *testing.T) {
	type bashDetail struct {
		Stdout      string `json:"stdout"`
		Interrupted bool   `json:"interrupted"`
	}
	big := strings.Repeat("z", 60_000)
	tests := []struct {
		name   string
		detail any
		want   string // with <P> for the path
	}{
		{"fields added to the tool's object", bashDetail{Stdout: "s"}, `{"stdout":"s","interrupted":false,"persistedOutputPath":<P>,"persistedOutputSize":60000}`},
		{"no detail", nil, `{"persistedOutputPath":<P>,"persistedOutputSize":60000}`},
		{"raw object", json.RawMessage(`{"b":1,"a":2}`), `{"b":1,"a":2,"persistedOutputPath":<P>,"persistedOutputSize":60000}`},
		{"not an object", "Error: boom", `"Error: boom"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := tool.Text(big)
			r.Detail = tt.detail
			got := compact.Offload(compact.OffloadConfig{Dir: dir, Tools: coreTools})(t.Context(), []engine.Outcome{outcome("toolu_9", "Grep", r)})
			enc, err := jsonw.Marshal(got[0].Result.Detail)
			if err != nil {
				t.Fatal(err)
			}
			path, _ := jsonw.Marshal(filepath.Join(dir, "tool-results", "toolu_9.txt"))
			if want := strings.Replace(tt.want, "<P>", string(path), 1); string(enc) != want {
				t.Errorf("toolUseResult\n got %s\nwant %s", enc, want)
			}
		})
	}
}

func TestOffloadLimits(t *testing.T) {
	image := model.Block{Type: model.BlockImage, Extra: map[string]json.RawMessage{"source": jsonw.String(strings.Repeat("A", 200_000))}}
	tests := []struct {
		name    string
		tool    string
		result  tool.Result
		spilled bool
	}{
		{"at the limit", "Grep", tool.Text(strings.Repeat("x", 50_000)), false},
		{"over the limit", "Grep", tool.Text(strings.Repeat("x", 50_001)), true},
		{"limit counts characters", "Grep", tool.Text(strings.Repeat("é", 50_000)), false},
		{"Bash keeps 30,000", "Bash", tool.Text(strings.Repeat("x", 30_001)), true},
		{"Read is never spilled", "Read", tool.Text(strings.Repeat("x", 250_000)), false},
		{"images are left alone", "Read", tool.Result{Content: []model.Block{image}}, false},
		{"text with an image is left alone", "Mcp", tool.Result{Content: []model.Block{model.TextBlock(strings.Repeat("x", 60_000)), image}}, false},
		{"an error is spilled too", "Grep", tool.Errorf("%s", strings.Repeat("x", 60_000)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			got := compact.Offload(compact.OffloadConfig{Dir: dir, Tools: coreTools})(t.Context(), []engine.Outcome{outcome("toolu_1", tt.tool, tt.result)})
			_, err := os.Stat(filepath.Join(dir, "tool-results", "toolu_1.txt"))
			if spilled := err == nil; spilled != tt.spilled {
				t.Fatalf("spilled = %v, want %v", spilled, tt.spilled)
			}
			if tt.spilled {
				if !strings.HasPrefix(textOf(t, got[0].Result), "<persisted-output>") || got[0].Result.IsError != tt.result.IsError {
					t.Errorf("spilled result %+v", got[0].Result)
				}
			} else if diff := cmp.Diff(tt.result, got[0].Result); diff != "" {
				t.Errorf("result changed (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no session folder", func(t *testing.T) {
		in := []engine.Outcome{outcome("toolu_1", "Grep", tool.Text(strings.Repeat("x", 80_000)))}
		if got := compact.Offload(compact.OffloadConfig{Tools: coreTools})(t.Context(), in); textOf(t, got[0].Result) != strings.Repeat("x", 80_000) {
			t.Error("spilled without a folder to spill to")
		}
	})
}

// TestOffloadMessageBudget: one response's results together stay under
// 200,000 characters, the largest spilled first, in call order otherwise.
func TestOffloadMessageBudget(t *testing.T) {
	tests := []struct {
		name    string
		sizes   []int
		spilled []string
	}{
		{"under the budget", []int{40_000, 40_000, 40_000, 40_000, 39_000}, nil},
		{"largest first", []int{46_000, 49_000, 45_000, 48_000, 47_000}, []string{"toolu_2"}},
		{"as many as needed, in call order when equal", []int{45_000, 45_000, 45_000, 45_000, 45_000, 45_000}, []string{"toolu_1", "toolu_2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var in []engine.Outcome
			for i, n := range tt.sizes {
				in = append(in, outcome(fmt.Sprintf("toolu_%d", i+1), "Grep", tool.Text(strings.Repeat("x", n))))
			}
			got := compact.Offload(compact.OffloadConfig{Dir: dir, Tools: coreTools})(t.Context(), in)
			var spilled []string
			total := 0
			for i, o := range got {
				if o.Call.ID != in[i].Call.ID {
					t.Fatalf("results reordered: %s at %d", o.Call.ID, i)
				}
				text := textOf(t, o.Result)
				total += len(text)
				if strings.HasPrefix(text, "<persisted-output>") {
					spilled = append(spilled, o.Call.ID)
				}
			}
			if diff := cmp.Diff(tt.spilled, spilled); diff != "" {
				t.Errorf("spilled (-want +got):\n%s", diff)
			}
			if total > compact.MessageBudget {
				t.Errorf("the results hold %d characters together, over %d", total, compact.MessageBudget)
			}
			if !strings.HasPrefix(textOf(t, in[0].Result), "xxx") {
				t.Error("the outcomes given were changed")
			}
		})
	}
}

// TestOffloadReadBack: the model reads a spilled result back with the
// real Read tool and gets the whole output.
func TestOffloadReadBack(t *testing.T) {
	dir := t.TempDir()
	out := rows(700) // 70,000 bytes
	got := compact.Offload(compact.OffloadConfig{Dir: dir, Tools: coreTools})(t.Context(), []engine.Outcome{outcome("toolu_R", "Bash", tool.Text(out))})
	m := regexp.MustCompile(`Full output saved to: (\S+)`).FindStringSubmatch(textOf(t, got[0].Result))
	if m == nil {
		t.Fatalf("no path in %q", textOf(t, got[0].Result))
	}
	env := tool.NewEnv(t.TempDir())
	input, _ := jsonw.Marshal(map[string]string{"file_path": m[1]})
	res, err := tools.Read{}.Run(t.Context(), env, input)
	if err != nil || res.IsError {
		t.Fatalf("Read %s: %v %+v", m[1], err, res)
	}
	numbered := regexp.MustCompile(`(?m)^\d+\t`)
	if back := numbered.ReplaceAllString(textOf(t, res), ""); back != out {
		t.Errorf("Read gave back %d bytes, not the output's %d: …%q", len(back), len(out), back[max(0, len(back)-120):])
	}
}

// coreTools are the core tools, which say their own result limits.
var coreTools, _ = tool.NewRegistry(tools.Core()...)
