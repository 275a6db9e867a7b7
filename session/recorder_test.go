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
	"github.com/cairn-dev/cairn/transcript"
)

func TestRecorderOnPrompt(t *testing.T) {
	ctx := context.Background()
	store := transcript.NewMemStore()
	app, err := store.OpenAppender(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{})
	defer w.Close()
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
