package cli_test

import (
	"bytes"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// TestLargeOutputReadBack: a long command output is saved beside the
// session and the model gets a preview; it may read the file back in a
// headless default-mode run, though the file lies outside the project.
func TestLargeOutputReadBack(t *testing.T) {
	p := newProject(t)
	saved := regexp.MustCompile(`Full output saved to: (\S+\.txt)`)
	var mu sync.Mutex
	step := 0
	p.srv = modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		step++
		switch step {
		case 1:
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_1", "Bash", `{"command":"seq 1 30000"}`)}}
		case 2:
			m := saved.FindSubmatch(r.Body)
			if m == nil {
				return modeltest.Text("NO PREVIEW")
			}
			return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_2", "Read", fmt.Sprintf(`{"file_path":%q,"offset":29999,"limit":2}`, m[1]))}}
		}
		return modeltest.Text("read it")
	}})
	code, out, errOut := p.cairn(t, "-p", "count to a lot", "--allowedTools", "Bash(seq:*)")
	if code != 0 || out != "read it\n" {
		t.Fatalf("exit %d: %q %s", code, out, errOut)
	}
	reqs := p.srv.Requests()
	if !bytes.Contains(reqs[1].Body, []byte("<persisted-output>")) {
		t.Error("the long output was not replaced by its preview")
	}
	last := p.srv.Last().Body
	if !bytes.Contains(last, []byte(`29999\t29999`)) || !bytes.Contains(last, []byte(`30000\t30000`)) {
		t.Errorf("the saved output was not read back: %s", last)
	}
}
