package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/cli"
	"github.com/cairn-dev/cairn/internal/pgtest"
	"github.com/cairn-dev/cairn/internal/proctest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

// machine is one computer of a team: its own home and its own checkout of
// the same repository, sharing one team store.
func machine(t *testing.T, srv *modeltest.Server, remote, store string) *project {
	t.Helper()
	p := &project{dir: t.TempDir(), home: t.TempDir(), srv: srv}
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", remote}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = p.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	p.env = []string{"CAIRN_STORE=" + store}
	return p
}

func sessionIDOf(t *testing.T, out string) string {
	t.Helper()
	var res struct {
		SessionID string `json:"session_id"`
		IsError   bool   `json:"is_error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID == "" || res.IsError {
		t.Fatalf("result %q: %v", out, err)
	}
	return res.SessionID
}

func TestTeamStoreAcrossMachines(t *testing.T) {
	proctest.Command(t, "git", "apt-get install git")
	url := pgtest.URL(t)
	srv := modeltest.Start(t, modeltest.Config{})
	remote := "git@example.com:team/" + pgtest.Project(t) + ".git"
	a := machine(t, srv, remote, url)
	b := machine(t, srv, strings.Replace(remote, "git@example.com:", "https://example.com/", 1), url)

	// Machine A starts a session; its lines reach the store as it runs.
	srv.Enqueue(modeltest.Text("The answer is 42."))
	code, out, errOut := a.cairn(t, "-p", "what is the answer", "--output-format", "json")
	if code != 0 {
		t.Fatalf("A: exit %d: %s", code, errOut)
	}
	id := sessionIDOf(t, out)

	// The team sees it in the store, from machine B.
	code, out, errOut = b.cairn(t, "sessions", "list", "--store", "--json")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "what is the answer") {
		t.Fatalf("B: list --store: exit %d: %s %s", code, out, errOut)
	}

	// Machine B resumes it: the whole conversation goes with its request.
	srv.Enqueue(modeltest.Text("Still 42."))
	code, _, errOut = b.cairn(t, "-p", "--resume="+id, "are you sure", "--output-format", "json")
	if code != 0 {
		t.Fatalf("B: resume: exit %d: %s", code, errOut)
	}
	body := string(srv.Last().Body)
	for _, want := range []string{"what is the answer", "The answer is 42.", "are you sure"} {
		if !strings.Contains(body, want) {
			t.Errorf("B's request lacks %q", want)
		}
	}

	// B works on while the store is down: it says so once, saves locally.
	b.env = []string{"CAIRN_STORE=postgres://cairn@127.0.0.1:1/none?connect_timeout=2"}
	srv.Enqueue(modeltest.Text("Noted offline."))
	code, _, errOut = b.cairn(t, "-p", "--resume="+id, "remember the offline prompt", "--output-format", "json")
	if code != 0 {
		t.Fatalf("B offline: exit %d: %s", code, errOut)
	}
	if n := strings.Count(errOut, "is behind"); n != 1 || !strings.Contains(errOut, "cairn sessions sync") {
		t.Errorf("B offline said %d times that the store is behind: %s", n, errOut)
	}
	// Once it is back, sync sends what it missed, once.
	b.env = []string{"CAIRN_STORE=" + url}
	code, out, errOut = b.cairn(t, "sessions", "sync", id)
	if code != 0 || !strings.Contains(out, "sent") {
		t.Fatalf("sync: exit %d: %s %s", code, out, errOut)
	}
	code, out, _ = b.cairn(t, "sessions", "sync", "--all")
	if code != 0 || !strings.Contains(out, "has it all") {
		t.Errorf("second sync: exit %d: %s", code, out)
	}

	// A resumes its own (now stale) copy: the store's newer lines come
	// first, so A's request carries B's offline prompt.
	srv.Enqueue(modeltest.Text("Yes, I see it."))
	code, _, errOut = a.cairn(t, "-p", "--resume="+id, "do you see it", "--output-format", "json")
	if code != 0 {
		t.Fatalf("A: resume: exit %d: %s", code, errOut)
	}
	body = string(srv.Last().Body)
	for _, want := range []string{"are you sure", "remember the offline prompt", "Noted offline.", "do you see it"} {
		if !strings.Contains(body, want) {
			t.Errorf("A's request lacks %q", want)
		}
	}
	// Nothing doubled: A's file and the store agree line for line.
	code, out, _ = a.cairn(t, "sessions", "search", "--store", "offline prompt", "--json")
	if code != 0 || strings.Count(out, `"uuid"`) != 1 {
		t.Errorf("search --store: exit %d: %s", code, out)
	}
	files, _ := filepath.Glob(filepath.Join(a.home, "projects", "*", id+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("A's transcript: %v", files)
	}
	local, _ := os.ReadFile(files[0])
	code, out, _ = a.cairn(t, "sessions", "list", "--store", "--json")
	var listed []struct {
		SessionID string `json:"sessionId"`
		Bytes     int64  `json:"bytes"`
	}
	json.Unmarshal([]byte(out), &listed)
	deadline := time.Now().Add(5 * time.Second)
	for len(listed) != 1 || listed[0].Bytes != int64(len(local)) {
		if time.Now().After(deadline) {
			t.Fatalf("store lists %+v, A's file has %d bytes", listed, len(local))
		}
		time.Sleep(50 * time.Millisecond)
		_, out, _ = a.cairn(t, "sessions", "list", "--store", "--json")
		json.Unmarshal([]byte(out), &listed)
	}

	// A third machine without a copy shows it from the store.
	c := machine(t, srv, remote, url)
	code, out, errOut = c.cairn(t, "sessions", "show", id, "--json")
	if code != 0 || !strings.Contains(out, "remember the offline prompt") || !strings.Contains(out, "do you see it") {
		t.Errorf("C: show: exit %d: %s %s", code, out, errOut)
	}

	filesAcrossMachines(t, a, srv)
}

// filesAcrossMachines: a session on machine A spills a long tool output
// to a file, runs a subagent and edits a file (a file-history backup);
// machine B, with its own home and the repository checked out at the
// same path (the file history names files by absolute path), resumes it
// with every file beside it and rewinds the edit there.
func filesAcrossMachines(t *testing.T, a *project, srv *modeltest.Server) {
	hello := filepath.Join(a.dir, "hello.py")
	if err := os.WriteFile(hello, []byte("print('hello')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_big", "Bash", `{"command":"seq 1 30000"}`)}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_read", "Read", fmt.Sprintf(`{"file_path":%q}`, hello))}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_edit", "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":"hello","new_string":"goodbye"}`, hello))}},
		modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_task", "Task", `{"description":"Look","prompt":"SUBTASK: look around.","subagent_type":"general-purpose"}`)}},
		modeltest.Text("SUBAGENT-REPORT: all fine."),
		modeltest.Text("Edited, counted and checked."),
	)
	code, out, errOut := a.cairn(t, "-p", "count, edit and check", "--output-format", "json", "--permission-mode", "bypassPermissions")
	if code != 0 {
		t.Fatalf("A: exit %d: %s", code, errOut)
	}
	id := sessionIDOf(t, out)
	files := func(p *project) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, pat := range []string{
			filepath.Join(p.home, "projects", "*", id, "tool-results", "*"),
			filepath.Join(p.home, "projects", "*", id, "subagents", "*"),
			filepath.Join(p.home, "file-history", id, "*"),
		} {
			got, _ := filepath.Glob(pat)
			for _, f := range got {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(p.home, f)
				out[filepath.Join(strings.SplitN(rel, string(filepath.Separator), 3)[0], filepath.Base(filepath.Dir(f)), filepath.Base(f))] = string(b)
			}
		}
		return out
	}
	onA := files(a)
	kinds := map[string]int{}
	for name := range onA {
		kinds[filepath.Dir(name)]++
	}
	if kinds["projects/tool-results"] != 1 || kinds["projects/subagents"] == 0 || kinds["file-history/"+id] != 1 {
		t.Fatalf("A's files beside the session: %v", kinds)
	}
	if string(must(os.ReadFile(hello))) != "print('goodbye')\n" {
		t.Fatal("A's edit did not happen")
	}

	b := &project{dir: a.dir, home: t.TempDir(), srv: srv, env: a.env}
	srv.Enqueue(modeltest.Text("Back on B."))
	code, _, errOut = b.cairn(t, "-p", "--resume="+id, "where were we", "--output-format", "json")
	if code != 0 {
		t.Fatalf("B: resume: exit %d: %s", code, errOut)
	}
	onB := files(b)
	for name := range onB {
		if _, ok := onA[name]; !ok {
			delete(onB, name) // B's run made backups of its own
		}
	}
	if d := cmp.Diff(onA, onB); d != "" {
		t.Errorf("B's files beside the session differ from A's (-A +B):\n%s", d)
	}
	_, first := b.promptUUID(t, "count, edit and check")
	code, out, errOut = b.cairn(t, "sessions", "rewind", id, "--to", first, "--code")
	if code != 0 {
		t.Fatalf("B: rewind: exit %d: %s %s", code, out, errOut)
	}
	if got := string(must(os.ReadFile(hello))); got != "print('hello')\n" {
		t.Errorf("after B's rewind hello.py is %q", got)
	}
	// The rewind wrote its undo point locally; a sync sends it, once.
	for _, want := range []string{"sent 1 line", "has it all"} {
		code, out, _ = b.cairn(t, "sessions", "sync", id)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("B: sync after the rewind: exit %d: %s, want %q", code, out, want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestServeStore runs `cairn serve --store` over a session machine A
// sent to the team store: the list, a history page, the resume view, and
// the live tail of the session as A goes on with it.
func TestServeStore(t *testing.T) {
	proctest.Command(t, "git", "apt-get install git")
	url := pgtest.URL(t)
	srv := modeltest.Start(t, modeltest.Config{})
	a := machine(t, srv, "git@example.com:team/"+pgtest.Project(t)+".git", url)
	srv.Enqueue(modeltest.Text("SERVED-REPLY"))
	code, out, errOut := a.cairn(t, "-p", "SERVED-PROMPT from the store", "--output-format", "json")
	if code != 0 {
		t.Fatalf("A: exit %d: %s", code, errOut)
	}
	id := sessionIDOf(t, out)

	viewer := &project{dir: t.TempDir(), home: t.TempDir(), env: []string{"CAIRN_SERVE_TOKEN=tok-store"}}
	base := strings.Split(startServe(t, viewer, "--store", url), "?")[0]
	get := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		path, token string
		code        int
		has         []string
	}{
		{"api/sessions", "", 401, nil},
		{"api/sessions", "wrong", 401, nil},
		{"api/sessions?q=SERVED", "tok-store", 200, []string{id, "SERVED-PROMPT from the store"}},
		{"api/sessions/" + id + "/events", "tok-store", 200, []string{`"hasMore":false`, "SERVED-PROMPT", "SERVED-REPLY"}},
		{"api/sessions/" + id + "/events?before=nope", "tok-store", 400, nil},
		{"api/sessions/" + id + "/view", "tok-store", 200, []string{`"sessionId":"` + id + `"`, "SERVED-REPLY"}},
		{"api/sessions/00000000-0000-4000-8000-000000000404/events", "tok-store", 404, nil},
	} {
		code, body := get(tt.path, tt.token)
		if code != tt.code {
			t.Errorf("GET %s: %d, want %d: %s", tt.path, code, tt.code, body)
		}
		for _, want := range tt.has {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s lacks %q: %.500s", tt.path, want, body)
			}
		}
	}

	// The tail: A goes on, the lines come through the store's notices.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"api/sessions/"+id+"/stream", nil)
	req.Header.Set("Authorization", "Bearer tok-store")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := bufio.NewReader(resp.Body)
	if l, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(l, ": tailing") {
		t.Fatalf("stream's first line %q, %v", l, err)
	}
	srv.Enqueue(modeltest.Text("TAILED-REPLY"))
	if code, _, errOut := a.cairn(t, "-p", "--resume="+id, "TAILED-PROMPT", "--output-format", "json"); code != 0 {
		t.Fatalf("A: resume: exit %d: %s", code, errOut)
	}
	var seen []string
	for !strings.Contains(strings.Join(seen, ""), "TAILED-REPLY") {
		l, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("the tail ended (%v) after %q", err, seen)
		}
		if strings.HasPrefix(l, "data: ") {
			seen = append(seen, l)
		}
	}
	all := strings.Join(seen, "")
	if !strings.Contains(all, "TAILED-PROMPT") || strings.Contains(all, "SERVED-PROMPT") {
		t.Errorf("the tail sent %q: want the new lines only", seen)
	}
}

// TestTeamStoreTwoWritersAtOnce: while another machine writes a session
// in the team store (its lock held), a run that goes on with its own
// copy works on locally, says aloud why the store does not get its lines,
// and a sync once the other is done sends them, once.
func TestTeamStoreTwoWritersAtOnce(t *testing.T) {
	proctest.Command(t, "git", "apt-get install git")
	url := pgtest.URL(t)
	srv := modeltest.Start(t, modeltest.Config{})
	a := machine(t, srv, "git@example.com:team/"+pgtest.Project(t)+".git", url)
	srv.Enqueue(modeltest.Text("First."))
	code, out, errOut := a.cairn(t, "-p", "first prompt", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	id := sessionIDOf(t, out)

	ctx := context.Background()
	db, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := db.Project(cli.ProjectKey(a.dir)).OpenAppender(ctx, id) // the other machine
	if err != nil {
		t.Fatal(err)
	}
	srv.Enqueue(modeltest.Text("Second, locally."))
	code, _, errOut = a.cairn(t, "-p", "--resume="+id, "second prompt", "--output-format", "json")
	if code != 0 {
		t.Fatalf("resume while another writes: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "another machine or process is writing it") || !strings.Contains(errOut, "cairn sessions sync") {
		t.Errorf("the run did not say why the store is behind: %s", errOut)
	}
	if code, out, _ := a.cairn(t, "sessions", "sync", id); code == 0 || !strings.Contains(out, "another machine or process") {
		t.Errorf("sync while the other writes: exit %d: %s", code, out)
	}
	other.Close()
	for _, want := range []string{" lines and ", "has it all"} {
		code, out, _ = a.cairn(t, "sessions", "sync", id)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("sync once the other is done: exit %d: %s, want %q", code, out, want)
		}
	}
	code, out, _ = a.cairn(t, "sessions", "search", "--store", "second prompt", "--json")
	if code != 0 || strings.Count(out, `"uuid"`) != 1 {
		t.Errorf("search --store: exit %d: %s", code, out)
	}
}

func TestTeamStoreNotConfigured(t *testing.T) {
	p := newProject(t)
	code, _, errOut := p.cairn(t, "sessions", "sync", "--all")
	if code != 1 || !strings.Contains(errOut, "CAIRN_STORE") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
