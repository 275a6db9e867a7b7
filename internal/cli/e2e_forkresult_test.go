package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// TestForkCarriesLargeResults: a fork writes the resumed entries into its
// own file. A toolUseResult too large for the load to keep in memory (a
// file read) is read back from the original file and written byte for
// byte.
func TestForkCarriesLargeResults(t *testing.T) {
	p := newProject(t)
	big := filepath.Join(p.dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("a line of the big file, \"quoted\", é\t\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	p.srv.Enqueue(modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_r", "Read", fmt.Sprintf(`{"file_path":%q}`, big))}}, modeltest.Text("read"))
	original := sessionOf(t, p, "-p", "read big.txt", "--output-format", "json")
	p.srv.Enqueue(modeltest.Text("again"))
	fork := sessionOf(t, p, "-r", original, "--fork-session", "-p", "and now", "--output-format", "json")
	if fork == original {
		t.Fatal("the fork has the original's id")
	}
	paths := map[string]string{}
	infos, err := session.List(context.Background(), session.Home{Dir: p.home}, session.ListOptions{Cwd: p.dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		paths[in.SessionID] = in.Path
	}
	was, now := resultsOf(t, paths[original]), resultsOf(t, paths[fork])
	large := 0
	for id, res := range was {
		if len(res) > transcript.ResultKeep {
			large++
		}
		if got, ok := now[id]; !ok || !bytes.Equal(got, res) {
			t.Errorf("entry %s: the fork's toolUseResult is %.100q, want %.100q", id, got, res)
		}
	}
	if large == 0 {
		t.Errorf("no result over %d bytes in the original: the test checks nothing", transcript.ResultKeep)
	}
}

// sessionOf runs cairn with args (one with --output-format json) and
// returns the session it ran in.
func sessionOf(t *testing.T, p *project, args ...string) string {
	t.Helper()
	code, out, errOut := p.cairn(t, args...)
	if code != 0 {
		t.Fatalf("cairn %q: exit %d: %s", args, code, errOut)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID == "" {
		t.Fatalf("result %s: %v", out, err)
	}
	return res.SessionID
}

// resultsOf returns the toolUseResult of each line of the transcript at
// path that has one, as the file has it, by the line's uuid.
func resultsOf(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line struct {
			UUID   string          `json:"uuid"`
			Result json.RawMessage `json:"toolUseResult"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Result != nil {
			out[line.UUID] = line.Result
		}
	}
	return out
}
