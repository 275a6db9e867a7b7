package longrun

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	cairnBin  string
	buildErr  error
)

// cairn builds cmd/cairn once for the package's tests.
func cairn(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: cannot build cairn")
	}
	buildOnce.Do(func() {
		out := filepath.Join(t.TempDir(), "cairn")
		cmd := exec.Command("go", "build", "-o", out, "github.com/cairn-dev/cairn/cmd/cairn")
		if msg, err2 := cmd.CombinedOutput(); err2 != nil {
			buildErr = err2
			t.Logf("%s", msg)
			return
		}
		cairnBin = out
	})
	if buildErr != nil {
		t.Fatalf("build cairn: %v", buildErr)
	}
	return cairnBin
}

// TestOpenAIProvider runs both workloads, scaled down, through cairn's
// OpenAI-compatible provider against a fake chat-completions server that
// enforces the 200,000-token window (no server-side clearing: cairn
// compacts locally): each completes with every planted fact visible in
// the last request and no context-length error. The full workloads:
// cairn-bench context -provider openai.
func TestOpenAIProvider(t *testing.T) {
	bin := cairn(t)
	for _, tc := range []struct {
		w     *Workload
		steps int
	}{{Basic(1), 60}, {Hard(1), 30}} {
		t.Run(tc.w.Name, func(t *testing.T) {
			tc.w.Cut(tc.steps)
			rep, err := Run(t.Context(), tc.w, CairnOpenAI(bin), t.TempDir())
			if err != nil {
				t.Fatalf("%v\n%s", err, rep)
			}
			t.Logf("\n%s", rep)
			if !rep.Completed || rep.FactsSeen != rep.Facts || rep.TooLong != 0 || rep.Compactions == 0 || rep.Main != tc.w.Steps()+len(tc.w.Turns) {
				t.Errorf("completed %v, facts %d/%d (missing %q), %d context-length errors, %d compactions, %d main requests: want all facts, none refused, compacting locally",
					rep.Completed, rep.FactsSeen, rep.Facts, rep.Missing, rep.TooLong, rep.Compactions, rep.Main)
			}
			if !rep.TaskVerbatim {
				t.Error("the task is not in the last request word for word")
			}
		})
	}
}

// TestOpenAIWindowEnforced: the chat server of a run refuses a prompt
// that does not fit the window with context_length_exceeded, and the
// report counts the refusal — the 0 of TestOpenAIProvider is measured.
func TestOpenAIWindowEnforced(t *testing.T) {
	w := Basic(1)
	pl := newPlayer(w, t.TempDir())
	chat := newChatServer(pl)
	defer chat.srv.Close()
	body, _ := json.Marshal(map[string]any{
		"model": ModelName, "stream": true, "max_tokens": 32_000,
		"messages": []map[string]string{{"role": "user", "content": strings.Repeat("x", 4*(Window-20_000))}},
	})
	resp, err := http.Post(chat.srv.URL+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(msg), `"code":"context_length_exceeded"`) || !strings.Contains(string(msg), "maximum context length is 200000 tokens") {
		t.Fatalf("%d %s: want OpenAI's context_length_exceeded", resp.StatusCode, msg)
	}
	var rep Report
	rep.measure(w, chat.requests(), pl)
	if rep.TooLong != 1 {
		t.Errorf("the report counts %d context-length errors, want 1", rep.TooLong)
	}
}
