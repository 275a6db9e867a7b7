package openaitest_test

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model/openai/openaitest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestEventsGolden pins the wire shape of a streamed reply with text, two
// tool calls with split arguments, and a usage chunk.
func TestEventsGolden(t *testing.T) {
	reply := openaitest.Reply{
		Text: []string{"Let me ", "look."},
		ToolCalls: []openaitest.ToolCall{
			{ID: "call_1", Name: "Read", Arguments: []string{`{"file_`, `path":"a.go"}`}},
			{Name: "Grep", Arguments: []string{`{"pattern":"x"}`}},
		},
		Usage: openaitest.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 64},
	}
	var b strings.Builder
	for _, ev := range openaitest.Events(reply, 1, "gpt-4o", true, 400) {
		b.WriteString("data: " + ev + "\n\n")
	}
	path := filepath.Join("testdata", "toolcalls.sse")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestServerRejects(t *testing.T) {
	srv := openaitest.NewServer(t)
	tests := []struct {
		name   string
		path   string
		body   string
		status int
	}{
		{"wrong path", "/v1/completions", `{"stream":true}`, http.StatusNotFound},
		{"not JSON", openaitest.Path, `{`, http.StatusBadRequest},
		{"not streaming", openaitest.Path, `{"model":"m"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := strings.TrimSuffix(srv.URL, "/v1") + tt.path
			resp, err := http.Post(url, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	if n := len(srv.Requests()); n != len(tests) {
		t.Errorf("recorded %d requests, want %d", n, len(tests))
	}
}
