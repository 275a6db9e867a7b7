package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
)

func client(t *testing.T, srv *modeltest.Server) *anthropic.Client {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRecall(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	save := func(file string, m Memory, age time.Duration) {
		if err := Save(dir, file, m); err != nil {
			t.Fatal(err)
		}
		mod := now.Add(-age)
		os.Chtimes(filepath.Join(dir, file), mod, mod)
	}
	save("db.md", Memory{Name: "db", Description: "tests use the real database", Type: TypeFeedback, Body: "No mocks.\n**Why:** x\n**How to apply:** y"}, 3*24*time.Hour)
	save("role.md", Memory{Name: "role", Description: "the user is a data scientist", Type: TypeUser, Body: "Data scientist."}, time.Hour)
	save("freeze.md", Memory{Name: "freeze", Description: "merge freeze from Thursday", Type: TypeProject, Body: "Freeze."}, 2*time.Hour)
	os.WriteFile(filepath.Join(dir, "broken.md"), []byte("no front matter"), 0o644)

	srv := modeltest.Start(t, modeltest.Config{})
	srv.Enqueue(modeltest.Text(`Here you go: {"selected": ["db.md", "nope.md", "role.md"]}`))
	var warned []string
	r := &Recaller{Dir: dir, Model: client(t, srv), ModelName: "claude-haiku-x", Now: func() time.Time { return now }, Warn: func(w string) { warned = append(warned, w) }}
	got, err := r.Recall(context.Background(), "why do the integration tests fail?")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || filepath.Base(got[0].Path) != "db.md" || filepath.Base(got[1].Path) != "role.md" {
		t.Fatalf("recalled %+v", got)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "broken.md") {
		t.Errorf("warnings %q", warned)
	}
	req := srv.Last()
	var body struct {
		Model string `json:"model"`
	}
	json.Unmarshal(req.Body, &body)
	if body.Model != "claude-haiku-x" || !bytes.Contains(req.Body, []byte("why do the integration tests fail?")) || !bytes.Contains(req.Body, []byte("## db.md (saved 3 days ago)")) {
		t.Errorf("side request: %s", req.Body)
	}
	text := Render(got, now)
	if !strings.Contains(text, "This memory is 3 days old.") || strings.Count(text, "days old") != 1 || !strings.Contains(text, "(saved today)") {
		t.Errorf("rendered:\n%s", text)
	}
	// What was surfaced is not offered again.
	srv.Enqueue(modeltest.Text(`{"selected": ["db.md", "freeze.md"]}`))
	again, err := r.Recall(context.Background(), "and the freeze?")
	if err != nil || len(again) != 1 || filepath.Base(again[0].Path) != "freeze.md" {
		t.Errorf("second recall %+v, %v", again, err)
	}
	if bytes.Contains(srv.Last().Body, []byte("## db.md")) {
		t.Error("a surfaced memory was offered again")
	}
}

func TestRecallEmptyFolderMakesNoRequest(t *testing.T) {
	srv := modeltest.Start(t, modeltest.Config{})
	r := &Recaller{Dir: filepath.Join(t.TempDir(), "none"), Model: client(t, srv)}
	got, err := r.Recall(context.Background(), "anything")
	if err != nil || got != nil || len(srv.Requests()) != 0 {
		t.Errorf("got %v, %v, %d requests", got, err, len(srv.Requests()))
	}
}

func TestRecallTenThousandFiles(t *testing.T) {
	dir, err := tenThousand()
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.Start(t, modeltest.Config{})
	srv.Enqueue(modeltest.Text(`{"selected": ["m00003.md"]}`))
	r := &Recaller{Dir: dir, Model: client(t, srv), ModelName: "claude-haiku-x"}
	start := time.Now()
	got, err := r.Recall(context.Background(), "q")
	took := time.Since(start)
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	if n := bytes.Count(srv.Last().Body, []byte("\\n## m")); n != MaxScan {
		t.Errorf("the side request offers %d memories, want %d", n, MaxScan)
	}
	t.Logf("recall over 10,000 files: %v, side request %d bytes", took, len(srv.Last().Body))
}

func TestSelected(t *testing.T) {
	hs := []Header{{File: "a.md"}, {File: "b.md"}, {File: "c.md"}}
	for answer, want := range map[string]string{
		`{"selected":["c.md","a.md"]}`:          "c.md a.md",
		"```json\n{\"selected\": []}\n```":      "",
		"I would pick b.md, then a.md.":         "b.md a.md",
		"nothing relevant":                      "",
		`{"selected": "oops"} but c.md is good`: "c.md",
	} {
		if got := strings.Join(selected(answer, hs), " "); got != want {
			t.Errorf("%q: %q, want %q", answer, got, want)
		}
	}
}

// TestRecallTimeout: a side request that never comes back fails the
// recall after its timeout (30 seconds by default), in a synctest bubble
// where those seconds pass at once and exactly.
func TestRecallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		if err := writeMemoriesErr(dir, 3, time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		m := &modeltest.Scripted{Answer: func(ctx context.Context, _ int, _ *model.Request) ([]model.Block, error) {
			<-ctx.Done() // a side request that never comes back
			return nil, ctx.Err()
		}}
		r := &Recaller{Dir: dir, Model: m, ModelName: "claude-small"}
		start := time.Now()
		got, err := r.Recall(t.Context(), "what did we decide?")
		if d := time.Since(start); d != 30*time.Second {
			t.Errorf("the recall gave up after %s, want the default 30s", d)
		}
		if !errors.Is(err, context.DeadlineExceeded) || got != nil || len(m.Requests()) != 1 {
			t.Errorf("Recall = %v, %v after %d requests: want the deadline's error after one", got, err, len(m.Requests()))
		}
	})
}
