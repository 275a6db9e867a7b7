package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/tool"
)

// TestTraits: what the core tools say of their calls through tool's
// optional interfaces — the paths they touch, whether their results can
// be obtained again, how a call reads in a line.
func TestTraits(t *testing.T) {
	rel := func(p string) string { return strings.TrimPrefix(p, "/proj/") }
	byName := map[string]tool.Tool{}
	for _, tl := range tools.Core() {
		byName[tl.Spec().Name] = tl
	}
	tests := []struct {
		tool, input  string
		paths        []tool.PathUse
		reobtainable bool
		summary      string
	}{
		{"Read", `{"file_path":"/proj/a.go"}`, []tool.PathUse{{Path: "/proj/a.go"}}, true, "a.go"},
		{"Write", `{"file_path":"b.go","content":"x"}`, []tool.PathUse{{Path: "b.go", Write: true}}, true, "b.go"},
		{"Edit", `{"file_path":"/proj/c.go"}`, []tool.PathUse{{Path: "/proj/c.go", Write: true}}, true, "c.go"},
		{"MultiEdit", `{"file_path":"/proj/d.go","edits":[]}`, []tool.PathUse{{Path: "/proj/d.go", Write: true}}, false, "d.go"},
		{"Grep", `{"pattern":"x","path":"/proj/src"}`, []tool.PathUse{{Path: "/proj/src", Folder: true}}, true, `"x" in src`},
		{"Glob", `{"pattern":"*.go"}`, []tool.PathUse{{Path: ".", Folder: true}}, true, `"*.go"`},
		{"Bash", `{"command":"go test ./...\necho done"}`, nil, true, "go test ./... …"},
		{"WebFetch", `{"url":"https://example.com/x","prompt":"p"}`, nil, true, "https://example.com/x"},
		{"TodoWrite", `{"todos":[]}`, nil, false, ""},
		{"Read", `not json`, nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.input, func(t *testing.T) {
			tl, ok := byName[tt.tool]
			if !ok {
				t.Fatalf("no core tool %s", tt.tool)
			}
			in := json.RawMessage(tt.input)
			if diff := cmp.Diff(tt.paths, tool.TouchedPaths(tl, in)); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if got := tool.IsReobtainable(tl); got != tt.reobtainable {
				t.Errorf("reobtainable %v, want %v", got, tt.reobtainable)
			}
			if got := tool.Summary(tl, in, rel); got != tt.summary {
				t.Errorf("summary %q, want %q", got, tt.summary)
			}
		})
	}
}

// TestResultLimits: Bash keeps 30,000 characters inline, Read never has
// its result saved to a file, the others keep the session's default.
func TestResultLimits(t *testing.T) {
	got := map[string]int{}
	for _, tl := range tools.Core() {
		if n, ok := tool.ResultLimit(tl); ok {
			got[tl.Spec().Name] = n
		}
	}
	if diff := cmp.Diff(map[string]int{"Bash": 30_000, "Read": -1}, got); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}
