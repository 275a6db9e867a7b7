package cli

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/internal/tui"
)

// planModes moves a session's permission checker in and out of plan mode
// (SPEC E3) and decides who approves a plan (tools.PlanModes).
//
// In the terminal UI the person does: they read the plan and approve it
// for acceptEdits or default mode, or send it back with a note. A
// headless run has no one to ask, so its rule is the run's mode: a run
// started with --permission-mode plan ends with the plan as its result —
// printed as the text, or the result of json and stream-json — and the
// session stays in plan mode; the person approves it by continuing the
// session (`cairn -c -p --permission-mode acceptEdits "go ahead"`), as
// Claude Code's print mode leaves a plan for its caller. A run started in
// another mode that entered plan mode itself (EnterPlanMode) approves its
// plan and returns to the mode it was started in, which already allows
// carrying the plan out.
//
// Safe for concurrent use.
type planModes struct {
	checker *permission.Checker
	// ask puts a plan to the person (tui.Asker.Ask); nil in a headless
	// run.
	ask func(context.Context, tui.Question) tui.Answer

	mu sync.Mutex
	// before is the mode plan mode returns to: the run's mode, or the one
	// EnterPlanMode left.
	before permission.Mode
}

var _ tools.PlanModes = (*planModes)(nil)

func newPlanModes(c *permission.Checker, ask func(context.Context, tui.Question) tui.Answer) *planModes {
	return &planModes{checker: c, ask: ask, before: c.Mode()}
}

// InPlanMode implements tools.PlanModes.
func (p *planModes) InPlanMode() bool { return p.checker.Mode() == permission.ModePlan }

// EnterPlanMode implements tools.PlanModes.
func (p *planModes) EnterPlanMode(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.checker.Mode(); m != permission.ModePlan {
		p.before = m
		p.checker.SetMode(permission.ModePlan)
	}
	return nil
}

// ReviewPlan implements tools.PlanModes.
func (p *planModes) ReviewPlan(ctx context.Context, plan, path string) (tools.PlanReview, error) {
	if p.ask == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.before == permission.ModePlan {
			return tools.PlanReview{EndTurn: true}, nil
		}
		p.checker.SetMode(p.before)
		return tools.PlanReview{Approved: true, Mode: string(p.before)}, nil
	}
	input, _ := json.Marshal(map[string]string{"plan": plan}) // a string always encodes
	ans := p.ask(ctx, tui.Question{Tool: "ExitPlanMode", Input: input, Reason: "The plan is saved at " + path + "."})
	if err := ctx.Err(); err != nil {
		return tools.PlanReview{}, err
	}
	if !ans.Allow {
		return tools.PlanReview{Feedback: ans.Note}, nil
	}
	mode := permission.Mode(ans.Mode)
	if _, err := permission.ParseMode(ans.Mode); err != nil || mode == "" || mode == permission.ModePlan {
		mode = permission.ModeDefault
	}
	p.checker.SetMode(mode)
	return tools.PlanReview{Approved: true, Mode: string(mode)}, nil
}
