package session_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

func TestRecorderOnPrompt(t *testing.T) {
	ctx := context.Background()
	store, w := memWriter(t, "s1")
	var calls []string
	var fail error
	r := session.NewRecorder(w, session.RecorderOptions{
		Envelope: session.Envelope{SessionID: "s1"},
		OnPrompt: func(ctx context.Context, uuid string) error {
			// The prompt is on disk by now.
			src, err := store.OpenSource(ctx, "s1")
			if err != nil {
				return err
			}
			defer src.Close()
			data, _ := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
			if !strings.Contains(string(data), `"uuid":"`+uuid+`"`) {
				t.Errorf("OnPrompt(%s) before the prompt was written", uuid)
			}
			calls = append(calls, uuid)
			return fail
		},
	})
	say := func(text string) ([]string, error) {
		return r.Prompt(ctx, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text)}}, nil)
	}
	ids, err := say("fix the bug")
	if err != nil || len(calls) != 1 || calls[0] != ids[0] {
		t.Fatalf("prompt: ids %v, calls %v, %v", ids, calls, err)
	}
	if _, err := say(engine.InterruptedText); err != nil || len(calls) != 1 {
		t.Errorf("the interruption marker called OnPrompt: %v %v", calls, err)
	}
	fail = errors.New("disk full")
	if _, err := say("again"); !errors.Is(err, fail) {
		t.Errorf("OnPrompt's error was not returned: %v", err)
	}
}

// TestRecorderSidechain: a subagent's recorder marks every line as a
// sidechain of the session, with the agent's id, writes no last-prompt
// record, and what it writes loads back as a conversation.
func TestRecorderSidechain(t *testing.T) {
	ctx := context.Background()
	store, w := memWriter(t, "agent-1234abcd")
	r := session.NewRecorder(w, session.RecorderOptions{
		Envelope: session.Envelope{SessionID: "s1", IsSidechain: true, AgentID: "1234abcd"},
	})
	msg := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("find the parser")}}
	if _, err := r.Prompt(ctx, msg, nil); err != nil {
		t.Fatal(err)
	}
	// Parallel calls: the first result hangs off a side branch, which
	// the loader must re-attach in a sidechain file too.
	call1 := model.Block{Type: model.BlockToolUse, ID: "toolu_1", Name: "Read", Input: []byte(`{"file_path":"/p/a.go"}`)}
	call2 := model.Block{Type: model.BlockToolUse, ID: "toolu_2", Name: "Read", Input: []byte(`{"file_path":"/p/b.go"}`)}
	resp := &model.Response{ID: "msg_1", Content: []model.Block{model.TextBlock("Looking."), call1, call2}, StopReason: "tool_use"}
	if _, err := r.Response(ctx, resp); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Results(ctx, resp, []engine.Outcome{{Call: call1, Result: tool.Text("package a")}, {Call: call2, Result: tool.Text("package b")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Response(ctx, &model.Response{ID: "msg_2", Content: []model.Block{model.TextBlock("It is in a.go.")}, StopReason: "end_turn"}); err != nil {
		t.Fatal(err)
	}
	if err := r.TurnDone(ctx); err != nil {
		t.Fatal(err)
	}
	data := stored(t, store, "agent-1234abcd")
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d lines, want 7:\n%s", len(lines), data)
	}
	for i, l := range lines {
		e, err := transcript.DecodeEntry([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if !e.IsSidechain || e.AgentID != "1234abcd" || e.SessionID != "s1" || e.UUID == "" {
			t.Errorf("line %d is not the agent's sidechain: %s", i+1, l)
		}
	}
	src, err := store.OpenSource(ctx, "agent-1234abcd")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := conv.Messages()
	if len(msgs) != 4 || msgs[0].Text() != "find the parser" || msgs[3].Text() != "It is in a.go." || len(conv.Warnings) != 0 || conv.Repaired != 0 {
		t.Errorf("loaded %d messages, %d repaired, warnings %v: %+v", len(msgs), conv.Repaired, conv.Warnings, msgs)
	}
	if r := msgs[2].Content; len(r) != 2 || string(r[0].Content) != `"package a"` || string(r[1].Content) != `"package b"` {
		t.Errorf("the parallel results are not both there: %+v", r)
	}
}

// TestRecorderModeAsItStands: each prompt records the permission mode at
// the time it is sent, when the mode can change during the session.
func TestRecorderModeAsItStands(t *testing.T) {
	ctx := context.Background()
	store, w := memWriter(t, "s1")
	mode := "default"
	r := session.NewRecorder(w, session.RecorderOptions{
		Envelope: session.Envelope{SessionID: "s1"}, PermissionMode: "default",
		Mode: func() string { return mode },
	})
	for _, m := range []string{"default", "plan", "acceptEdits"} {
		mode = m
		if _, err := r.Prompt(ctx, model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock("in " + m)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	data := stored(t, store, "s1")
	var got []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if e, err := transcript.DecodeEntry([]byte(line)); err == nil && e.Type == transcript.TypeUser {
			got = append(got, e.PermissionMode)
		}
	}
	if strings.Join(got, " ") != "default plan acceptEdits" {
		t.Errorf("recorded modes %q", got)
	}
}

// memWriter is a writer appending to the session name of a new memory
// store.
func memWriter(t *testing.T, name string) (*transcript.MemStore, *transcript.Writer) {
	t.Helper()
	store := transcript.NewMemStore()
	app, err := store.OpenAppender(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	t.Cleanup(func() { w.Close() })
	return store, w
}

// stored is what the store holds of the session name.
func stored(t *testing.T, store *transcript.MemStore, name string) []byte {
	t.Helper()
	src, err := store.OpenSource(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	data, err := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
