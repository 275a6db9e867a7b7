package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/jsonw"
)

// TestSessionsShowMapped shows and exports a session large enough to be
// loaded mapped, whose output passes several filemap.Release: the tool
// results read back after their pages were released are whole.
func TestSessionsShowMapped(t *testing.T) {
	home, cwd := t.TempDir(), "/home/user/mapped"
	const id = "5b2e7c1a-9d4f-4e8b-a6c3-1f0e2d3c4b5a"
	results := []string{strings.Repeat("first result line\n", 6<<20/18), strings.Repeat("second result line\n", 6<<20/19)}
	env := `"sessionId":"` + id + `","cwd":"` + cwd + `","version":"2.1.197","timestamp":"2026-12-01T09:00:00.000Z"`
	lines := []string{`{"type":"user","uuid":"u0","parentUuid":null,` + env + `,"message":{"role":"user","content":"read both"}}`}
	parent := "u0"
	for i, r := range results {
		call, res := "c"+string(rune('1'+i)), "r"+string(rune('1'+i))
		tool := "t" + string(rune('1'+i))
		lines = append(lines,
			`{"type":"assistant","uuid":"`+call+`","parentUuid":"`+parent+`",`+env+`,"message":{"id":"m`+call+`","role":"assistant","model":"claude-test","content":[{"type":"tool_use","id":"`+tool+`","name":"Read","input":{"file_path":"/f"}}]}}`,
			`{"type":"user","uuid":"`+res+`","parentUuid":"`+call+`",`+env+`,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+tool+`","content":`+string(jsonw.String(r))+`}]}}`)
		parent = res
	}
	lines = append(lines, `{"type":"assistant","uuid":"a9","parentUuid":"`+parent+`",`+env+`,"message":{"id":"m9","role":"assistant","model":"claude-test","content":[{"type":"text","text":"both read"}]}}`)
	dir := filepath.Join(home, "projects", "-home-user-mapped")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := run(t, home, cwd, "sessions", "show", id, "--json")
	if code != 0 {
		t.Fatalf("show --json: exit %d: %s", code, errOut)
	}
	var view struct {
		Messages []struct {
			Content []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &view); err != nil {
		t.Fatalf("show --json: not one JSON document: %v", err)
	}
	var got []string
	for _, m := range view.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				var s string
				if err := json.Unmarshal(b.Content, &s); err != nil {
					t.Fatalf("a result's content is not a string: %v", err)
				}
				got = append(got, s)
			}
		}
	}
	if len(got) != 2 || got[0] != results[0] || got[1] != results[1] {
		t.Errorf("show --json: %d results, not the file's", len(got))
	}

	code, out, errOut = run(t, home, cwd, "sessions", "show", id)
	if code != 0 || strings.Count(out, "first result line\n") != len(results[0])/18 || strings.Count(out, "second result line\n") != len(results[1])/19 {
		t.Errorf("show: exit %d, the results not whole: %s", code, errOut)
	}
	code, out, errOut = run(t, home, cwd, "sessions", "export", id, "--format", "json")
	if code != 0 || !strings.Contains(out, string(jsonw.String(results[0]))) || !strings.Contains(out, string(jsonw.String(results[1]))) {
		t.Errorf("export --format json: exit %d, the results not whole: %s", code, errOut)
	}
}
