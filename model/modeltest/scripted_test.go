package modeltest_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/itertest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

func kinds(t *testing.T, m model.Model, ctx context.Context) ([]model.ChunkKind, *model.Response, error) {
	t.Helper()
	var got []model.ChunkKind
	var resp *model.Response
	for c, err := range m.Stream(ctx, &model.Request{Model: "m"}) {
		if err != nil {
			return got, resp, err
		}
		got = append(got, c.Kind)
		resp = c.Response
	}
	return got, resp, nil
}

func TestScripted(t *testing.T) {
	boom := errors.New("boom")
	m := modeltest.NewScripted(
		modeltest.Call(modeltest.Thinking("hm", "sig"), model.TextBlock("one two"), modeltest.ToolUse("t1", "Read", `{}`)),
		modeltest.Say("done"),
		modeltest.Fail(boom),
		modeltest.FailAfter(boom, model.TextBlock("cut off")),
	)
	got, resp, err := kinds(t, m, t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ChunkKind{model.ChunkMessageStart, model.ChunkThinkingDelta, model.ChunkBlockStop,
		model.ChunkTextDelta, model.ChunkTextDelta, model.ChunkBlockStop, model.ChunkBlockStop, model.ChunkDone}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	if resp.StopReason != model.StopToolUse || resp.ID != "msg_1" || resp.Model != "m" {
		t.Errorf("response %+v", resp)
	}
	if _, resp, _ := kinds(t, m, t.Context()); resp.StopReason != model.StopEndTurn || resp.Content[0].Text != "done" {
		t.Errorf("second response %+v", resp)
	}
	if got, _, err := kinds(t, m, t.Context()); !errors.Is(err, boom) || len(got) != 0 {
		t.Errorf("third request: chunks %v, err %v; want %v at once", got, err, boom)
	}
	got, resp, err = kinds(t, m, t.Context())
	if want := []model.ChunkKind{model.ChunkMessageStart, model.ChunkTextDelta, model.ChunkTextDelta, model.ChunkBlockStop}; !errors.Is(err, boom) || resp != nil || !cmp.Equal(want, got) {
		t.Errorf("fourth request: chunks %v, err %v, response %+v; want %v, then %v and no response", got, err, resp, want, boom)
	}
	if _, _, err := kinds(t, m, t.Context()); err == nil {
		t.Error("a request beyond the script succeeded")
	}
	if n := len(m.Requests()); n != 5 {
		t.Errorf("%d requests remembered, want 5", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := kinds(t, modeltest.NewScripted(modeltest.Say("x")), ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

// TestScriptedBreak: a consumer may stop at any chunk; the stream yields
// nothing after.
func TestScriptedBreak(t *testing.T) {
	n := itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[model.Chunk, error] {
		m := modeltest.NewScripted(modeltest.Call(modeltest.Thinking("hm", "sig"), model.TextBlock("one two"), modeltest.ToolUse("t1", "Read", `{}`)))
		return m.Stream(t.Context(), &model.Request{})
	}, nil)
	if n != 8 {
		t.Errorf("%d chunks, want 8", n)
	}
}
