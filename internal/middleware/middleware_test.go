package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// recordGate answers with v and notes the input it saw in seen.
func recordGate(name string, v engine.Verdict, seen *[]string) middleware.Gate {
	return middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
		*seen = append(*seen, name+":"+string(call.Input))
		return v
	})
}

func TestGates(t *testing.T) {
	allow := engine.Verdict{Allow: true}
	rewrite := engine.Verdict{Allow: true, Input: json.RawMessage(`"b"`)}
	refuse := engine.Verdict{Reason: "no"}
	for _, tt := range []struct {
		name  string
		gates []engine.Verdict
		want  engine.Verdict
		seen  []string
	}{
		{"one", []engine.Verdict{allow}, allow, []string{`g0:"a"`}},
		{"first refusal wins", []engine.Verdict{allow, refuse, allow}, refuse, []string{`g0:"a"`, `g1:"a"`}},
		{"a rewrite is what the next sees and the answer", []engine.Verdict{rewrite, allow}, rewrite, []string{`g0:"a"`, `g1:"b"`}},
		{"a refusal after a rewrite", []engine.Verdict{rewrite, refuse}, refuse, []string{`g0:"a"`, `g1:"b"`}},
		{"the last one's record", []engine.Verdict{allow, {Allow: true, Record: "r"}}, engine.Verdict{Allow: true, Record: "r"}, []string{`g0:"a"`, `g1:"a"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			gs := []middleware.Gate{nil}
			for i, v := range tt.gates {
				gs = append(gs, recordGate("g"+string(rune('0'+i)), v, &seen))
			}
			got := middleware.Gates(gs...).Check(t.Context(), nil, model.Block{Input: json.RawMessage(`"a"`)})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.seen, seen); diff != "" {
				t.Errorf("gates asked (-want +got):\n%s", diff)
			}
		})
	}
	if g := middleware.Gates(nil, nil); g != nil || middleware.CheckFunc(g) != nil {
		t.Error("Gates of none is not nil: the engine would not allow everything unasked")
	}
}

func TestStops(t *testing.T) {
	var asked []string
	say := func(name, answer string) middleware.StopHandler {
		return middleware.StopFunc(func(context.Context, *engine.Result, bool) string {
			asked = append(asked, name)
			return answer
		})
	}
	h := middleware.Stops(say("a", ""), nil, say("b", "go on"), say("c", "other"))
	if got := h.BeforeStop(t.Context(), &engine.Result{}, false); got != "go on" {
		t.Errorf("BeforeStop = %q, want the first non-empty answer", got)
	}
	if diff := cmp.Diff([]string{"a", "b"}, asked); diff != "" {
		t.Errorf("handlers asked (-want +got):\n%s", diff)
	}
	if middleware.Stops() != nil || middleware.BeforeStopFunc(nil) != nil {
		t.Error("Stops of none is not nil")
	}
}

// note is a provider that attaches its name and appends it to results.
type note struct {
	name   string
	closed *[]string
	err    error
}

func (n note) Prompt(context.Context, string) []engine.Attachment {
	return []engine.Attachment{{Type: n.name}}
}
func (n note) Results(_ context.Context, out []engine.Outcome) []engine.Outcome {
	for i := range out {
		out[i].Result.Content = append(out[i].Result.Content, model.TextBlock(n.name))
	}
	return out
}
func (n note) Close() error { *n.closed = append(*n.closed, n.name); return n.err }

func TestProviders(t *testing.T) {
	var closed []string
	failed := errors.New("b failed")
	p := middleware.Providers(note{"a", &closed, nil}, nil, note{"b", &closed, failed})
	var types []string
	for _, a := range p.Prompt(t.Context(), "hi") {
		types = append(types, a.Type)
	}
	if diff := cmp.Diff([]string{"a", "b"}, types); diff != "" {
		t.Errorf("attachments (-want +got):\n%s", diff)
	}
	out := p.Results(t.Context(), []engine.Outcome{{}})
	if diff := cmp.Diff([]model.Block{model.TextBlock("a"), model.TextBlock("b")}, out[0].Result.Content); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if err := p.Close(); !errors.Is(err, failed) {
		t.Errorf("Close = %v, want b's error", err)
	}
	if diff := cmp.Diff([]string{"b", "a"}, closed); diff != "" {
		t.Errorf("closed (-want +got):\n%s", diff)
	}
}
