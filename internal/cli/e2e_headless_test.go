package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// cairnIn runs the binary with stdin.
func (p *project) cairnIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = p.dir
	cmd.Env = append([]string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}, p.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// events decodes stream-json output.
func events(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line is not JSON: %q", sc.Text())
		}
		evs = append(evs, m)
	}
	return evs
}

// --input-format stream-json: each user line is a turn of one session
// with a result after it; a line that is not JSON or not a user message
// is an error event naming it, and the session goes on; EOF ends it.
func TestStreamJSONInput(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("first answer"), modeltest.Text("second answer"))
	stdin := strings.Join([]string{
		`{"type":"user","message":{"role":"user","content":"first turn"}}`,
		`not json at all`,
		`{"type":"assistant","message":{"role":"assistant","content":"x"}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second turn"}]}}`,
	}, "\n") + "\n"
	code, out, errOut := p.cairnIn(t, stdin, "-p", "--input-format", "stream-json", "--output-format", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	var got []string
	session := ""
	for _, e := range events(t, out) {
		typ, _ := e["type"].(string)
		sub, _ := e["subtype"].(string)
		if id, _ := e["session_id"].(string); session == "" {
			session = id
		} else if id != session {
			t.Errorf("event of session %s in a run of %s", id, session)
		}
		switch {
		case typ == "result":
			got = append(got, "result: "+e["result"].(string))
		case typ == "system" && sub == "error":
			got = append(got, "error: "+e["error"].(string)[:len("stdin line 2")])
		case typ == "assistant":
			got = append(got, "assistant")
		}
	}
	want := []string{"assistant", "result: first answer", "error: stdin line 2", "error: stdin line 3", "assistant", "result: second answer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	reqs := p.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	// The second turn continues the first.
	msgs := reqs[1].Params.Messages
	if len(msgs) != 3 || !strings.Contains(msgs[0].Text(), "first turn") || !strings.Contains(msgs[2].Text(), "second turn") {
		t.Errorf("second request's messages: %d, want first turn, answer, second turn", len(msgs))
	}
}

// --settings (JSON or a file) is a layer above the project's settings;
// --system-prompt replaces cairn's instructions; the file of
// --append-system-prompt-file is added at the end.
func TestSettingsAndSystemPromptFlags(t *testing.T) {
	p := newProject(t)
	put(t, filepath.Join(p.dir, ".claude/settings.json"), `{"outputStyle": "learning"}`)
	put(t, filepath.Join(p.dir, "extra.txt"), "Always answer in French.\n")
	p.srv.Enqueue(modeltest.Text("ok"))
	code, _, errOut := p.cairn(t, "-p", "hi", "--settings", `{"outputStyle": "explanatory"}`,
		"--system-prompt", "You are a test double.", "--append-system-prompt-file", "extra.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sys := systemText(p.srv.Last())
	for _, want := range []string{"You are a test double.", "Always answer in French."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "You are cairn") || strings.Contains(sys, "Output style") {
		t.Errorf("--system-prompt should replace cairn's own instructions and style:\n%s", sys)
	}

	// Without --system-prompt the --settings layer's style wins over the project's.
	put(t, filepath.Join(p.dir, "layer.json"), `{"outputStyle": "explanatory", "permissions": {"deny": ["Read"]}}`)
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Read", `{"file_path":"`+filepath.Join(p.dir, "hello.py")+`"}`)}},
		modeltest.Text("done"),
	)
	code, out, errOut := p.cairn(t, "-p", "read it", "--settings", "layer.json", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if sys := systemText(p.srv.Requests()[len(p.srv.Requests())-2]); !strings.Contains(sys, "Output style: explanatory") {
		t.Errorf("the --settings file's outputStyle did not win:\n%s", sys)
	}
	if !strings.Contains(out, `"permission_denials":[{`) {
		t.Errorf("the --settings file's deny rule did not refuse the Read: %s", out)
	}
	if code, _, errOut := p.cairn(t, "-p", "hi", "--settings", "{not json"); code != 2 || !strings.Contains(errOut, "--settings is not valid JSON") {
		t.Errorf("bad --settings: exit %d, stderr %q", code, errOut)
	}
}

// --json-schema: the answer comes through the StructuredOutput tool,
// validated, into structured_output; an answer that does not validate
// is tried once more, then the result is an error.
func TestJSONSchema(t *testing.T) {
	p := newProject(t)
	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	p.srv.Enqueue(
		modeltest.Text("Let me think."), // no tool call: asked again
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "StructuredOutput", `{"n":42}`)}},
	)
	code, out, errOut := p.cairn(t, "-p", "give me a number", "--json-schema", schema, "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"n": float64(42)}, res["structured_output"]); diff != "" || res["is_error"] != false {
		t.Errorf("structured_output (-want +got):\n%s\nresult: %s", diff, out)
	}
	reqs := p.srv.Requests()
	if !slicesContain(reqs[0].Params.ToolNames(), "StructuredOutput") || len(reqs) != 2 {
		t.Fatalf("%d requests, tools %v", len(reqs), reqs[0].Params.ToolNames())
	}

	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "StructuredOutput", `{"n":"many"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_3", "StructuredOutput", `{"m":1}`)}},
	)
	code, out, _ = p.cairn(t, "-p", "again", "--json-schema", schema, "--output-format", "json")
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 1 || res["subtype"] != "error_max_structured_output_retries" || res["is_error"] != true {
		t.Errorf("exit %d, result %s", code, out)
	}
	if last := userTexts(p.srv.Last()); !hasText(last, "does not match the required schema") {
		t.Errorf("the model was not told why: %q", last)
	}
	if code, _, errOut := p.cairn(t, "-p", "x", "--json-schema", "{nope"); code != 2 || !strings.Contains(errOut, "--json-schema") {
		t.Errorf("bad schema: exit %d, %s", code, errOut)
	}
}

// --max-budget-usd stops the run once it has spent the budget;
// --no-session-persistence leaves no transcript.
func TestBudgetAndNoPersistence(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Glob", `{"pattern":"*.py"}`)}, OutputTokens: 200_000},
		modeltest.Text("never asked"),
	)
	code, out, _ := p.cairn(t, "-p", "look around", "--max-budget-usd", "0.01", "--output-format", "json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Nothing more is asked: the call is not run, and the session-notes
	// update the big reply made due does not start either (it would be
	// paid for past the budget).
	for _, r := range p.srv.Requests()[1:] {
		what := "a request"
		if strings.Contains(string(r.Body), "update the session notes") {
			what = "a session-notes update"
		}
		t.Errorf("%s was sent after the budget was spent: %.200s", what, r.Body)
	}
	if code != 1 || res["subtype"] != "error_max_budget_usd" {
		t.Errorf("exit %d, result %s", code, out)
	}

	p.srv.Enqueue(modeltest.Text("ok"))
	before, _ := filepath.Glob(filepath.Join(p.home, "projects", "*", "*.jsonl"))
	if code, _, errOut := p.cairn(t, "-p", "hi", "--no-session-persistence"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	after, _ := filepath.Glob(filepath.Join(p.home, "projects", "*", "*.jsonl"))
	if len(after) != len(before) {
		t.Errorf("transcripts before %d, after %d: --no-session-persistence wrote one", len(before), len(after))
	}
}

// --fallback-model takes a request the main model is overloaded for.
func TestFallbackModel(t *testing.T) {
	p := &project{dir: t.TempDir(), home: t.TempDir()}
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		if r.Params != nil && r.Params.Model == "claude-main" {
			return modeltest.Reply{Status: 529, RetryAfter: 1}
		}
		return modeltest.Text("from " + r.Params.Model)
	}})
	p.env = []string{"CAIRN_DISABLE_AUTO_COMPACT=1"}
	code, out, errOut := p.cairn(t, "-p", "hi", "--model", "claude-main", "--fallback-model", "claude-spare")
	if code != 0 || out != "from claude-spare\n" || !strings.Contains(errOut, "fallback model claude-spare") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A stdin line longer than the 64 MB a line may be is an error event
// naming it, and the lines after it still run (it used to end the input
// without a word).
func TestStreamJSONInputLineTooLong(t *testing.T) {
	p := newProject(t)
	p.srv.Enqueue(modeltest.Text("after the long line"))
	huge := `{"type":"user","message":{"role":"user","content":"` + strings.Repeat("x", 64<<20) + `"}}`
	stdin := huge + "\n" + `{"type":"user","message":{"role":"user","content":"short one"}}` + "\n"
	code, out, errOut := p.cairnIn(t, stdin, "-p", "--input-format", "stream-json", "--output-format", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %.2000s", code, errOut)
	}
	var got []string
	for _, e := range events(t, out) {
		switch e["type"] {
		case "result":
			got = append(got, "result: "+e["result"].(string))
		case "system":
			if e["subtype"] == "error" {
				got = append(got, fmt.Sprintf("error at line %v: %s", e["line"], e["error"]))
			}
		}
	}
	want := []string{
		"error at line 1: stdin line 1 is longer than the 64 MB a line may be; it is skipped (send large content as a file the model can read)",
		"result: after the long line",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !strings.Contains(errOut, "stdin line 1 is longer than") {
		t.Errorf("stderr does not say so: %.2000s", errOut)
	}
}
