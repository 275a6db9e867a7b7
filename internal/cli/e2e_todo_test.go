package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// cairnQuiet runs cairn as p.cairn does, with automatic compaction and
// session notes off, so the only requests are the ones a test scripts.
func (p *project) cairnQuiet(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = p.dir
	cmd.Env = []string{"CAIRN_HOME=" + p.home, "ANTHROPIC_BASE_URL=" + p.srv.URL, "ANTHROPIC_API_KEY=test-key", "HOME=" + p.home, "PATH=" + os.Getenv("PATH"), "CAIRN_DISABLE_AUTO_COMPACT=1"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestTodosSurviveCompactionAndResume writes a todo list in a first turn,
// has it summarised away by /compact in a later process, and checks that
// the next process both shows the model the list and holds it (SPEC R4,
// C4): the model's update there reports the first list as the old one.
func TestTodosSurviveCompactionAndResume(t *testing.T) {
	plan := []tools.Todo{
		{Content: "Write the parser", Status: "in_progress", ActiveForm: "Writing the parser"},
		{Content: "Test the parser", Status: "pending", ActiveForm: "Testing the parser"},
	}
	update := []tools.Todo{
		{Content: "Write the parser", Status: "completed", ActiveForm: "Writing the parser"},
		{Content: "Test the parser", Status: "in_progress", ActiveForm: "Testing the parser"},
	}
	todoCall := func(id string, todos []tools.Todo) modeltest.Reply {
		in, _ := json.Marshal(map[string]any{"todos": todos})
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(id, "TodoWrite", string(in))}}
	}
	// A reply long enough that the compaction keeps no message verbatim,
	// so the TodoWrite call is summarised away.
	long := strings.Repeat("All the details of the plan. ", 6000)
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		body := string(r.Body)
		switch {
		case strings.Contains(body, "<summary></summary>"):
			return modeltest.Text("<summary>The user asked for a parser; a plan was made.</summary>")
		case strings.Contains(body, "toolu_todo2"):
			return modeltest.Text("Carrying on with the tests.")
		case strings.Contains(body, "what is left?"):
			return todoCall("toolu_todo2", update)
		case strings.Contains(body, "tell me everything"):
			return modeltest.Text(long)
		case strings.Contains(body, "toolu_todo1"):
			return modeltest.Text("Planned.")
		}
		return todoCall("toolu_todo1", plan)
	}})

	for _, args := range [][]string{
		{"-p", "plan the parser work"},
		{"-c", "-p", "tell me everything"},
		{"-c", "-p", "/compact"},
		{"-c", "-p", "what is left?"},
	} {
		if code, out, errOut := p.cairnQuiet(t, args...); code != 0 {
			t.Fatalf("cairn %q: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}

	// The first request after the compaction shows the model the list, and
	// not the call that wrote it.
	i := slices.IndexFunc(p.srv.Requests(), func(r *modeltest.Request) bool { return bytes.Contains(r.Body, []byte("what is left?")) })
	if i < 0 {
		t.Fatal("no request for the last prompt")
	}
	req := p.srv.Requests()[i]
	if !slices.Contains(req.Params.ToolNames(), "TodoWrite") {
		t.Errorf("TodoWrite is not offered: %v", req.Params.ToolNames())
	}
	verbatim, _ := json.Marshal(plan)
	var shown bool
	for _, m := range req.Params.Messages {
		for _, b := range m.Content {
			if b.Type == model.BlockToolUse && b.ID == "toolu_todo1" {
				t.Error("the first TodoWrite call survived the compaction; the test shows nothing")
			}
			if b.Type == model.BlockText && strings.Contains(b.Text, "This is your todo list as it stood when the conversation was compacted") && strings.Contains(b.Text, string(verbatim)) {
				shown = true
			}
		}
	}
	if !shown {
		msgs, _ := json.MarshalIndent(req.Params.Messages, "", "  ")
		t.Errorf("the request after /compact does not show the todo list %s:\n%s", verbatim, msgs)
	}

	// The resumed session held the list: the update replaced it.
	var got struct {
		OldTodos []tools.Todo `json:"oldTodos"`
		NewTodos []tools.Todo `json:"newTodos"`
	}
	found := false
	sc := bufio.NewScanner(bytes.NewReader(p.transcript(t)))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct {
			ToolUseResult json.RawMessage `json:"toolUseResult"`
			Message       struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || !bytes.Contains(line.Message.Content, []byte(`"tool_use_id":"toolu_todo2"`)) {
			continue
		}
		found = json.Unmarshal(line.ToolUseResult, &got) == nil
	}
	if !found {
		t.Fatal("no result line for the second TodoWrite")
	}
	if diff := cmp.Diff(plan, got.OldTodos); diff != "" {
		t.Errorf("oldTodos after resume (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(update, got.NewTodos); diff != "" {
		t.Errorf("newTodos (-want +got):\n%s", diff)
	}
}
