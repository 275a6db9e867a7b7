package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// breakRig is a turn that produces every kind of event: Prepare reports a
// status, a notice and a compaction; the model thinks, writes and calls a
// tool twice; the tool reports a line and a subagent's message, then
// waits until the consumer has seen its report before doing its side
// effect; a Stop hook keeps the turn going once.
type breakRig struct {
	h *harness
	// started counts tool calls that began to run, effects the calls that
	// did their side effect.
	started, effects atomic.Int32
	mu               sync.Mutex
	release          map[string]chan struct{} // by call id: the consumer saw the call's report
}

func newBreakRig(t *testing.T) *breakRig {
	r := &breakRig{release: map[string]chan struct{}{}}
	touch := &fakeTool{name: "Touch", run: func(ctx context.Context, in json.RawMessage) (tool.Result, error) {
		r.started.Add(1)
		var args struct{ ID string }
		json.Unmarshal(in, &args)
		msg := &model.Message{Role: model.RoleAssistant, Content: []model.Block{model.TextBlock("sub " + args.ID)}}
		tool.Report(ctx, tool.Progress{Text: "touching " + args.ID, Message: msg})
		select {
		case <-r.releaseOf(args.ID):
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
		r.effects.Add(1)
		return tool.Text("touched " + args.ID), nil
	}}
	m := &modeltest.Scripted{Answer: func(_ context.Context, _ int, req *model.Request) ([]model.Block, error) {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Text(), "again") {
			return []model.Block{model.TextBlock("resumed")}, nil
		}
		replies := 0
		for _, m := range req.Messages {
			if m.Role == model.RoleAssistant {
				replies++
			}
		}
		switch replies {
		case 0:
			return []model.Block{modeltest.Thinking("plan it", "sig"), model.TextBlock("Touching two."),
				use("t1", "Touch", `{"ID":"t1"}`), use("t2", "Touch", `{"ID":"t2"}`)}, nil
		case 1:
			return []model.Block{model.TextBlock("done.")}, nil
		default:
			return []model.Block{model.TextBlock("really done.")}, nil
		}
	}}
	prepared := 0
	r.h = newHarness(t, nil, []tool.Tool{touch}, func(c *engine.Config) {
		c.Model = m
		c.Prepare = func(ctx context.Context, p *engine.Prep) error {
			prepared++
			if prepared == 1 {
				p.Status("compacting")
				p.Status("")
				p.Notices = append(p.Notices, "compacted")
				p.Compaction = &engine.Compaction{Trigger: "auto", Summary: "nothing to fold"}
			}
			return nil
		}
		c.BeforeStop = func(ctx context.Context, res *engine.Result, again bool) string {
			if res.Text != "done." {
				return ""
			}
			return "keep going"
		}
	})
	return r
}

func (r *breakRig) releaseOf(id string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.release[id]
	if !ok {
		ch = make(chan struct{})
		r.release[id] = ch
	}
	return ch
}

var eventNames = map[engine.EventType]string{
	engine.EventUser: "user", engine.EventRequest: "request", engine.EventText: "text", engine.EventThinking: "thinking",
	engine.EventAssistant: "assistant", engine.EventToolCall: "tool call", engine.EventToolResult: "tool result",
	engine.EventNotice: "notice", engine.EventCompact: "compact", engine.EventStatus: "status", engine.EventDone: "done",
	engine.EventToolProgress: "tool progress", engine.EventToolMessage: "tool message",
}

func prompt(text string) engine.Input {
	return engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text)}}}
}

// consume reads a whole turn, letting each tool's side effect happen once
// its report was seen.
func (r *breakRig) consume(t *testing.T) []engine.Event {
	t.Helper()
	var events []engine.Event
	for ev, err := range r.h.sess.Run(t.Context(), prompt("touch them")) {
		if err != nil {
			t.Fatalf("after %d events: %v", len(events), err)
		}
		events = append(events, ev)
		if ev.Type == engine.EventToolProgress {
			close(r.releaseOf(ev.Call.ID))
		}
	}
	return events
}

// TestBreakAtEveryEvent: a consumer that breaks out of Run at any event
// gets no further event (the Go runtime panics if the sequence yields
// again), no tool starts and no side effect happens after the break, and
// the transcript is left answered and resumable: every tool call has its
// result, the interruption is marked, and the next turn runs.
func TestBreakAtEveryEvent(t *testing.T) {
	full := newBreakRig(t).consume(t)
	kinds := map[engine.EventType]bool{}
	for _, e := range full {
		kinds[e.Type] = true
	}
	for k, name := range eventNames {
		if !kinds[k] {
			t.Errorf("the full turn has no %s event: the test would not break there", name)
		}
	}
	for stopAt, last := range full {
		t.Run(fmt.Sprintf("%02d_%s", stopAt, strings.ReplaceAll(eventNames[last.Type], " ", "_")), func(t *testing.T) {
			r := newBreakRig(t)
			var startedAtBreak, effectsAtBreak int32
			var events []engine.Event
			for ev, err := range r.h.sess.Run(t.Context(), prompt("touch them")) {
				if err != nil {
					t.Fatalf("after %d events: %v", len(events), err)
				}
				events = append(events, ev)
				if len(events)-1 == stopAt {
					startedAtBreak, effectsAtBreak = r.started.Load(), r.effects.Load()
					break
				}
				if ev.Type == engine.EventToolProgress {
					close(r.releaseOf(ev.Call.ID))
				}
			}
			// Run has returned: whatever ran after the break is done.
			if got := r.started.Load(); got != startedAtBreak {
				t.Errorf("%d tool calls started after the break", got-startedAtBreak)
			}
			if got := r.effects.Load(); got != effectsAtBreak {
				t.Errorf("%d side effects after the break", got-effectsAtBreak)
			}
			// The engine answered every call itself: the resume repairs
			// nothing but the reply after a trailing interruption marker.
			hist := r.h.sess.History()
			checkAnswered(t, "live history", hist)
			conv := r.h.reload(t)
			complete := last.Type == engine.EventDone || (last.Type == engine.EventAssistant && len(last.Message.ToolUses()) == 0)
			lastText := hist[len(hist)-1].Text()
			switch {
			case complete && (strings.Contains(lastText, engine.InterruptedText) || conv.Repaired != 0):
				t.Errorf("a complete turn was recorded as interrupted: ends with %q, %d lines repaired", lastText, conv.Repaired)
			case !complete && (!strings.Contains(lastText, engine.InterruptedText) || conv.Repaired != 1):
				t.Errorf("the turn ends with %q and the resume repaired %d lines, want the interruption marker and 1 (the reply after it)", lastText, conv.Repaired)
			}
			checkAnswered(t, "resumed transcript", conv.Messages())
			// The session goes on.
			var done *engine.Result
			for ev, err := range r.h.sess.Run(t.Context(), prompt("again")) {
				if err != nil {
					t.Fatalf("the next turn: %v", err)
				}
				if ev.Type == engine.EventDone {
					done = ev.Done
				}
			}
			if done == nil || done.Text != "resumed" {
				t.Errorf("the next turn ended with %+v", done)
			}
			checkAnswered(t, "history after the next turn", r.h.sess.History())
		})
	}
}

// checkAnswered fails unless every tool call in msgs is answered by a
// result in the message after it.
func checkAnswered(t *testing.T, what string, msgs []model.Message) {
	t.Helper()
	for i, m := range msgs {
		for _, c := range m.ToolUses() {
			answered := false
			if i+1 < len(msgs) {
				for _, b := range msgs[i+1].Content {
					answered = answered || (b.Type == model.BlockToolResult && b.ToolUseID == c.ID)
				}
			}
			if !answered {
				t.Errorf("%s: the call %s in message %d has no result after it", what, c.ID, i)
			}
		}
	}
}
