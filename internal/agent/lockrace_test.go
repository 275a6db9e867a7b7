package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// heldTool runs until release is closed, telling started when it begins.
type heldTool struct {
	started chan<- struct{}
	release <-chan struct{}
}

func (heldTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Held", Description: "waits", InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (heldTool) ReadOnly(json.RawMessage) bool        { return true }
func (heldTool) Destructive(json.RawMessage) bool     { return false }
func (heldTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (h heldTool) Run(ctx context.Context, _ *tool.Env, _ json.RawMessage) (tool.Result, error) {
	h.started <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	return tool.Text("the held call finished"), nil
}

// padSession writes a session whose file is large but whose conversation
// is small: every tool result carries a big record of the call
// (toolUseResult, never sent to the model), so reading the session takes
// a while and sending it costs little.
func padSession(t *testing.T, store *transcript.FileStore, id string, mb int) {
	t.Helper()
	app, err := store.OpenAppender(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	detail, err := json.Marshal(map[string]string{"stdout": strings.Repeat("padding ", 16<<10)})
	if err != nil {
		t.Fatal(err)
	}
	var batch []transcript.Entry
	parent, n := "", 0
	entry := func(typ, msg string) transcript.Entry {
		n++
		e := transcript.Entry{
			Type: typ, UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), ParentUUID: parent,
			SessionID: id, Timestamp: "2026-11-30T10:00:00.000Z", CWD: "/work/proj", Version: "cairn-test",
			UserType: "external", Entrypoint: "sdk-cli", Message: json.RawMessage(msg),
		}
		parent = e.UUID
		return e
	}
	assistant := func(content string) transcript.Entry {
		return entry(transcript.TypeAssistant, fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","model":"claude-test","content":[%s],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`, n, content))
	}
	batch = append(batch, entry(transcript.TypeUser, `{"role":"user","content":"hello"}`))
	for size := 0; size < mb<<20; size += len(detail) {
		call := fmt.Sprintf("toolu_pad_%d", n)
		batch = append(batch, assistant(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"Held","input":{}}`, call)))
		res := entry(transcript.TypeUser, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"done"}]}`, call))
		res.ToolUseResult = detail
		batch = append(batch, res)
		if len(batch) >= 50 {
			if err := app.Append(t.Context(), batch, false); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	batch = append(batch, assistant(`{"type":"text","text":"hi"}`))
	if err := app.Append(t.Context(), batch, true); err != nil {
		t.Fatal(err)
	}
}

// fdsOn counts this process's open descriptors on path.
func fdsOn(t *testing.T, path string) int {
	dir := "/proc/self/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("this test watches %s to see the second open begin: %v", dir, err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestResumeWhileAnotherRunFinishes is the lock race: a second session
// opens a transcript while the run writing it is finishing. The second
// must either be refused (the first still runs) or see everything the first
// wrote — never resume from what it read before the first finished,
// inventing an interrupted result for a call that completed and leaving
// the first run's final reply on a dead branch. On the file store only:
// the race is between two holders of the file's lock, and the test counts
// the descriptors open on the file.
func TestResumeWhileAnotherRunFinishes(t *testing.T) {
	home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
	const id = "7a1f0c2e-5b3d-4e6f-8a9b-0c1d2e3f4a5b"
	store := home.Store(cwd)
	padSession(t, store, id, 12)
	path := store.Path(id)

	const final = "FIRST-RUN-FINAL-REPLY"
	srv := modeltest.Start(t, modeltest.Config{})
	srv.Enqueue(modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_last", "Held", `{}`)}}, modeltest.Text(final))
	started, release := make(chan struct{}, 1), make(chan struct{})
	opts := agent.Options{Home: home, Cwd: cwd, ModelName: "claude-test", MaxTokens: 4000, Entrypoint: "sdk-cli",
		Resume: id, Tools: []tool.Tool{heldTool{started: started, release: release}}, DisableAutoCompact: true}
	first := openOn(t, srv, opts, nil)
	firstDone := make(chan error, 1)
	go func() {
		_, _, err := run(t, first, "finish the job")
		if cerr := first.Close(); err == nil {
			err = cerr
		}
		firstDone <- err
	}()
	<-started
	// The first run's tool call is on disk, its result not yet.
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data[max(0, len(data)-8192):]), "toolu_last") {
			break
		}
		runtime.Gosched()
	}

	type opened struct {
		a   *agent.Agent
		err error
	}
	second := make(chan opened, 1)
	before := fdsOn(t, path)
	go func() {
		a, err := openOnErr(srv, opts)
		second <- opened{a, err}
	}()
	// As soon as the second session touches the file, the first finishes.
	var got opened
	touched := false
	for !touched {
		select {
		case got = <-second:
			touched = true
			second <- got
		default:
			touched = fdsOn(t, path) > before
		}
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatalf("the first run: %v", err)
	}
	got = <-second

	if got.err != nil {
		if !errors.Is(got.err, transcript.ErrLocked) || !strings.Contains(got.err.Error(), "--fork-session") {
			t.Fatalf("the second open failed with %v; want the session-in-use refusal naming --fork-session", got.err)
		}
		// Refused while the first ran; now the session is free.
		if got.a, got.err = openOnErr(srv, opts); got.err != nil {
			t.Fatalf("open after the first run ended: %v", got.err)
		}
	}
	hist := got.a.History()
	if err := got.a.Close(); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range hist {
		for _, b := range m.Content {
			texts = append(texts, b.Text+string(b.Content))
		}
	}
	view := strings.Join(texts, "\n")
	if !strings.Contains(view, final) {
		t.Errorf("the second session's view lacks the first run's final reply %q; it ends:\n%s", final, view[max(0, len(view)-600):])
	}
	if strings.Contains(view, transcript.InterruptedResult) {
		t.Errorf("the second session invented an interrupted result for a call that completed; its view ends:\n%s", view[max(0, len(view)-600):])
	}

	// What the next resume sees: the first run's work on the live branch.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "Tool call interrupted") {
		t.Error("an interrupted result was written to the transcript for a call that completed")
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(t.Context(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := conv.Messages()
	if len(last) == 0 || !strings.Contains(fmt.Sprint(last[len(last)-1].Content), final) {
		t.Errorf("a resume now ends at %v, not at the first run's final reply", last[max(0, len(last)-1):])
	}
}

// openOnErr opens an agent on srv, returning the error.
func openOnErr(srv *modeltest.Server, opts agent.Options) (*agent.Agent, error) {
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		return nil, err
	}
	opts.Model = m
	return agent.Open(context.Background(), opts)
}
