package agent_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// marks is an embedder's provider and ender: it attaches PROMPT-MARK to
// every prompt and RESULT-MARK to every result, and notes what it heard.
type marks struct {
	mu     sync.Mutex
	turns  []int // the history's length at each turn end
	closed int
}

func (m *marks) Prompt(context.Context, string) []engine.Attachment {
	return []engine.Attachment{{Type: "mark", Rendered: []model.Block{model.TextBlock("PROMPT-MARK")}}}
}
func (m *marks) Results(_ context.Context, out []engine.Outcome) []engine.Outcome {
	for i := range out {
		out[i].Result.Content = append(out[i].Result.Content, model.TextBlock("RESULT-MARK"))
	}
	return out
}
func (m *marks) TurnEnded(_ context.Context, t middleware.Turn) {
	m.mu.Lock()
	m.turns = append(m.turns, len(t.History))
	m.mu.Unlock()
}
func (m *marks) Close() error {
	m.mu.Lock()
	m.closed++
	m.mu.Unlock()
	return nil
}

// TestEmbedderMiddleware: the middlewares an embedder gives in
// Options.Middleware are composed with the session's own — its gate
// refuses, its provider's context reaches the requests, its stop handler
// keeps the turn going once, its ender hears the turn end — and the
// session closes its provider and ender at Close, and when its start
// fails.
func TestEmbedderMiddleware(t *testing.T) {
	srv := modeltest.Start(t, modeltest.Config{Respond: func(r *modeltest.Request) modeltest.Reply {
		switch {
		case bytes.Contains(r.Body, []byte("ONE-MORE")):
			return modeltest.Text("finished")
		case answered(r, "toolu_ls"):
			return modeltest.Text("listed")
		}
		return modeltest.Reply{Content: []model.Block{modeltest.ToolUse("toolu_ls", "Bash", `{"command":"ls"}`)}}
	}})
	m := &marks{}
	var gated []string
	stops := 0
	mw := agent.Middleware{
		Gate: middleware.GateFunc(func(_ context.Context, _ tool.Tool, call model.Block) engine.Verdict {
			gated = append(gated, call.Name)
			return engine.Verdict{Reason: "NOT-TODAY"}
		}),
		Stop: middleware.StopFunc(func(context.Context, *engine.Result, bool) string {
			if stops++; stops == 1 {
				return "ONE-MORE"
			}
			return ""
		}),
		Providers: []middleware.Provider{m},
		Enders:    []middleware.Ender{m},
	}
	a := openOn(t, srv, agent.Options{Home: session.Home{Dir: t.TempDir()}, Cwd: t.TempDir(), ModelName: "claude-test", MaxTokens: 4000,
		Tools: tools.Core(), Entrypoint: "sdk-cli", DisableSessionMemory: true, Middleware: mw}, nil)
	res := drain(t, a, "list the files")
	if res.Text != "finished" || stops != 2 {
		t.Errorf("the turn ended with %q after %d stops, want the continuation's answer after 2", res.Text, stops)
	}
	if !slices.Equal(gated, []string{"Bash"}) {
		t.Errorf("the gate was asked about %v", gated)
	}
	reqs := srv.Requests()
	if !bytes.Contains(reqs[0].Body, []byte("PROMPT-MARK")) {
		t.Error("the provider's context did not go with the prompt")
	}
	if !bytes.Contains(reqs[1].Body, []byte("NOT-TODAY")) || !bytes.Contains(reqs[1].Body, []byte("RESULT-MARK")) {
		t.Errorf("the refused call's result lacks the gate's reason or the provider's mark:\n%s", reqs[1].Body)
	}
	if len(m.turns) != 1 || m.turns[0] != len(a.History()) {
		t.Errorf("the ender heard turns %v, want one ending at %d messages", m.turns, len(a.History()))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if m.closed != 2 {
		t.Errorf("provider and ender closed %d times at Close, want 2", m.closed)
	}

	// A start that fails late (two tools of one name) closes them too.
	failed := &marks{}
	_, err := agent.Open(t.Context(), agent.Options{Home: session.Home{Dir: t.TempDir()}, Cwd: t.TempDir(), Model: modeltest.NewScripted(),
		ModelName: "claude-test", Tools: append(tools.Core(), bigTool{n: 1}, bigTool{n: 1}), DisableSessionMemory: true,
		Middleware: agent.Middleware{Providers: []middleware.Provider{failed}, Enders: []middleware.Ender{failed}}})
	if err == nil {
		t.Fatal("a session with two tools of one name opened")
	}
	// And one that fails before it starts (no model).
	early := &marks{}
	if _, err := agent.Open(t.Context(), agent.Options{Middleware: agent.Middleware{Providers: []middleware.Provider{early}}}); err == nil {
		t.Fatal("a session without a model opened")
	}
	if failed.closed != 2 || early.closed != 1 {
		t.Errorf("after failed opens: closed %d and %d times, want 2 and 1", failed.closed, early.closed)
	}
}
