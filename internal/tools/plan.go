package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// PlanAttachment is the type of the attachment that carries the plan
// through a compaction, as Claude Code names it.
const PlanAttachment = "plan_file_reference"

// Plan is a session's plan (SPEC E3): the file plan mode saves it to
// ($CAIRN_HOME/plans/<slug>.md, as Claude Code keeps ~/.claude/plans/)
// and what ExitPlanMode last put there. The session holds it and carries
// it through every compaction (Survivors); LatestPlan restores it on
// resume. Safe for concurrent use.
type Plan struct {
	mu      sync.Mutex
	path    string
	content string
}

// NewPlan returns the plan saved at path, holding content ("" before the
// model presents one).
func NewPlan(path, content string) *Plan { return &Plan{path: path, content: content} }

// Path is the plan's file.
func (p *Plan) Path() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.path
}

// Content is the plan as the model last presented it; "" when there is
// none yet.
func (p *Plan) Content() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.content
}

// save writes content to the plan's file (creating its folder) and holds
// it.
func (p *Plan) save(content string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" {
		return errors.New("the session has no plan file")
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return err
	}
	if err := renameio.WriteFile(p.path, []byte(content), 0o600); err != nil {
		return err
	}
	p.content = content
	return nil
}

// current is the plan as it stands: the file's content, which the person
// may have edited since, or the content held when the file cannot be read.
func (p *Plan) current() (path, content string) {
	p.mu.Lock()
	path, content = p.path, p.content
	p.mu.Unlock()
	if content == "" {
		return path, ""
	}
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
		content = string(b)
	}
	return path, content
}

// Survivors is a compact.Config.Survivors: the plan, verbatim, as a
// plan_file_reference attachment rendered as Claude Code renders it, so
// the model keeps it across any number of compactions and a resumed
// session finds it after the boundary. No plan adds nothing.
func (p *Plan) Survivors(context.Context) []engine.Attachment {
	path, content := p.current()
	if content == "" {
		return nil
	}
	return []engine.Attachment{{
		Type:     PlanAttachment,
		Data:     map[string]any{"planFilePath": path, "planContent": content},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(transcript.PlanReferenceText(path, content)))},
	}}
}

// exitPlanDetail is ExitPlanMode's toolUseResult: the plan and its file,
// which LatestPlan reads back.
type exitPlanDetail struct {
	Plan     string `json:"plan"`
	FilePath string `json:"filePath"`
	IsAgent  bool   `json:"isAgent"`
}

// LatestPlan returns the plan a conversation left (SPEC R4, E3): the
// newest of the plan_file_reference attachments (a compaction's, or Claude
// Code's) and the ExitPlanMode calls that saved a plan, reading entries
// (a loaded conversation's, oldest first) from the end. A call's detail
// is read from its answer (see answerOf), so a conversation without a
// plan costs a look at each response and attachment, not a decode of each
// result. ok is false when the conversation has none.
func LatestPlan(entries []*transcript.Entry) (path, content string, ok bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		switch e.Type {
		case transcript.TypeUser:
			continue // results are read from the calls they answer
		case transcript.TypeAttachment:
			if e.AttachmentType() != PlanAttachment {
				continue
			}
			var a struct {
				Type    string `json:"type"`
				Path    string `json:"planFilePath"`
				Content string `json:"planContent"`
			}
			if json.Unmarshal(e.Attachment, &a) == nil && a.Type == PlanAttachment && strings.TrimSpace(a.Content) != "" {
				return a.Path, a.Content, true
			}
			continue
		}
		m, ok, err := e.DecodeMessage()
		if !ok || err != nil {
			continue
		}
		for j := len(m.Content) - 1; j >= 0; j-- {
			if b := &m.Content[j]; b.Type == model.BlockToolUse && b.Name == "ExitPlanMode" {
				if d, ok := savedPlan(entries[i+1:], b.ID); ok {
					return d.FilePath, d.Plan, true
				}
			}
		}
	}
	return "", "", false
}

// savedPlan returns the detail of the ExitPlanMode call id when its
// answer, in the entries after the call, saved a plan.
func savedPlan(after []*transcript.Entry, id string) (exitPlanDetail, bool) {
	var d exitPlanDetail
	e, _ := answerOf(after, id)
	// Look for the plan's key before decoding the whole result; a large
	// result may be in the transcript file only: read back.
	if e == nil || !e.ResultHasKey("plan") {
		return d, false
	}
	res, err := e.Result()
	if err != nil || json.Unmarshal(res, &d) != nil {
		return d, false
	}
	return d, d.Plan != "" && d.FilePath != ""
}

// answerOf returns the first user entry of entries (those after a call,
// oldest first) holding a tool_result for the tool_use id, and that
// block; nil when none does. A call's answer follows it closely, so a
// scan from the end that looks up the answer of each call it meets reads
// little more than the scan does.
func answerOf(entries []*transcript.Entry, id string) (*transcript.Entry, *model.Block) {
	for i := range entries {
		e := entries[i]
		if e.Type != transcript.TypeUser {
			continue
		}
		m, ok, err := e.DecodeMessage()
		if !ok || err != nil {
			continue
		}
		for j := range m.Content {
			if b := &m.Content[j]; b.Type == model.BlockToolResult && b.ToolUseID == id {
				return e, b
			}
		}
	}
	return nil, nil
}

// PlanReview is the answer to a plan the model presents with
// ExitPlanMode.
type PlanReview struct {
	// Approved is set when the plan was approved and the session has left
	// plan mode (for Mode).
	Approved bool
	Mode     string
	// EndTurn is set when no one can approve the plan now (a headless run
	// started in plan mode): the plan becomes the turn's result and the
	// turn ends; the session stays in plan mode.
	EndTurn bool
	// Feedback is what the person said: what to change in a plan not
	// approved, or what to keep in mind carrying one out.
	Feedback string
}

// PlanModes moves a session in and out of plan mode, where only
// read-only tools run (SPEC E3, G2): the permission checker's mode, and
// whoever approves a plan — the person in the terminal UI, the run's
// rule in a headless one. Implementations are safe for concurrent use.
type PlanModes interface {
	// InPlanMode reports whether the session is in plan mode now.
	InPlanMode() bool
	// EnterPlanMode switches the session to plan mode.
	EnterPlanMode(ctx context.Context) error
	// ReviewPlan puts plan, saved at path, to whoever approves it, and
	// when it is approved switches the session out of plan mode. It
	// blocks until there is an answer; cancelling ctx returns ctx's error
	// and leaves the session in plan mode.
	ReviewPlan(ctx context.Context, plan, path string) (PlanReview, error)
}

// errNoPlanModes is returned by a plan-mode tool that no session set up.
var errNoPlanModes = errors.New("plan mode is not available: the session must give the plan-mode tools its plan and modes")

// ExitPlanMode presents the plan the model made in plan mode for approval
// (SPEC E3). The plan is saved to the session's plan file first; then
// Modes puts it to whoever approves it. Approved, the session leaves plan
// mode and the model carries the plan out; not approved, it stays in plan
// mode with the person's feedback; in a headless run started in plan mode
// the plan is the run's result and the turn ends there.
//
// Safety: it changes nothing in the project — the plan file is the
// session's own, outside it, and leaving plan mode takes the approval —
// so it answers ReadOnly true (it must run in plan mode) and Destructive
// false. It is not concurrency-safe: the review waits for a person.
//
// Plan and Modes are the session's; the zero value refuses to run.
type ExitPlanMode struct {
	Plan  *Plan
	Modes PlanModes
}

var exitPlanModeSchema = schema(`{
	"type": "object",
	"properties": {
		"plan": {"type": "string", "minLength": 1, "description": "The whole plan, in Markdown: what will change, where, in what order, and how it will be checked"}
	},
	"required": ["plan"],
	"additionalProperties": false
}`)

// Spec describes ExitPlanMode to the model.
func (ExitPlanMode) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "ExitPlanMode",
		Description: `Presents your plan to the user for approval and, once approved, leaves plan mode so you can carry it out.

Use it only in plan mode, and only when the task needs changes to code or files: when the plan for them is complete. Do not use it for research or questions, where you simply answer.

- The plan is the whole of what you will do: the files and functions that change, the order of the steps, and how the result will be checked. Write it in Markdown, concise but complete; the user approves exactly this text.
- Settle open questions with the user before presenting the plan, not in it.
- If the user does not approve it, you stay in plan mode: revise the plan with what they said and present it again.`,
		InputSchema: exitPlanModeSchema,
	}
}

// ReadOnly reports true: see the type's comment.
func (ExitPlanMode) ReadOnly(json.RawMessage) bool { return true }

// Destructive reports false.
func (ExitPlanMode) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports false: see the type's comment.
func (ExitPlanMode) ConcurrencySafe(json.RawMessage) bool { return false }

// Run saves the plan and has it reviewed.
func (x ExitPlanMode) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("ExitPlanMode", input, "plan")
	plan := a.str("plan", true)
	if a.err == nil && strings.TrimSpace(plan) == "" {
		a.err = errors.New(`"plan" is empty; write the whole plan`)
	}
	if a.err != nil {
		return a.invalid(), nil
	}
	if x.Plan == nil || x.Modes == nil {
		return tool.Result{}, errNoPlanModes
	}
	if !x.Modes.InPlanMode() {
		return failf("The session is not in plan mode, so there is no plan to approve. Go on with the task."), nil
	}
	if err := x.Plan.save(plan); err != nil {
		return tool.Result{}, fmt.Errorf("save the plan: %w", err)
	}
	path := x.Plan.Path()
	review, err := x.Modes.ReviewPlan(ctx, plan, path)
	if err != nil {
		return tool.Result{}, err
	}
	detail := exitPlanDetail{Plan: plan, FilePath: path}
	var r tool.Result
	switch {
	case review.Approved:
		text := fmt.Sprintf("The user approved the plan, and the session has left plan mode (it is in %s mode now): carry the plan out, starting with its first step, and keep the todo list up to date as you go. The plan is saved at %s.", review.Mode, path)
		if review.Feedback != "" {
			text += "\n\nThe user added: " + review.Feedback
		}
		r = tool.Text(text)
	case review.EndTurn:
		r = tool.Text(fmt.Sprintf("The plan is saved at %s and was returned as the result of this run, which no one could approve it in; the run ended there. The session is still in plan mode: the user's next message says whether to carry the plan out.", path))
		r.EndTurn = plan
	default:
		text := "The user did not approve the plan, so the session stays in plan mode: nothing may be changed yet."
		if review.Feedback != "" {
			text += " The user said: " + review.Feedback + "\n\nRevise the plan with that in mind and present it again with ExitPlanMode."
		} else {
			text += " Ask the user what to change, or revise the plan and present it again with ExitPlanMode."
		}
		r = tool.Text(text)
		r.IsError = true
	}
	r.Detail = detail
	return r, nil
}

// EnterPlanMode switches the session to plan mode (SPEC E3) when the
// model judges a task needs a plan the user approves before any change.
//
// Safety: it changes nothing and only takes permissions away, so it
// answers ReadOnly true and Destructive false; it is not
// concurrency-safe (it changes the session's mode).
//
// Modes is the session's; the zero value refuses to run.
type EnterPlanMode struct {
	Modes PlanModes
}

// Spec describes EnterPlanMode to the model.
func (EnterPlanMode) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "EnterPlanMode",
		Description: `Switches the session to plan mode, where you explore and design before changing anything: only read-only tools run until the user approves your plan (presented with ExitPlanMode).

Use it before a task that needs real design — several files, an unclear approach, choices the user should weigh in on — when the user has not asked you to start at once. Skip it for small, clear changes and for questions.`,
		InputSchema: schema(`{"type": "object", "properties": {}, "additionalProperties": false}`),
	}
}

// ReadOnly reports true: see the type's comment.
func (EnterPlanMode) ReadOnly(json.RawMessage) bool { return true }

// Destructive reports false.
func (EnterPlanMode) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports false: see the type's comment.
func (EnterPlanMode) ConcurrencySafe(json.RawMessage) bool { return false }

// enteredPlanMode is what the model reads in plan mode's first turn.
const enteredPlanMode = "The session is in plan mode now. Explore the code with read-only tools and design the approach; edits, commands and every other tool that is not read-only are refused until the user approves your plan. When the plan is complete, present it with ExitPlanMode."

// Run switches to plan mode.
func (x EnterPlanMode) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	if a := parseArgs("EnterPlanMode", input); a.err != nil {
		return a.invalid(), nil
	}
	if x.Modes == nil {
		return tool.Result{}, errNoPlanModes
	}
	if x.Modes.InPlanMode() {
		return tool.Text("The session is already in plan mode. When the plan is complete, present it with ExitPlanMode."), nil
	}
	if err := x.Modes.EnterPlanMode(ctx); err != nil {
		return tool.Result{}, err
	}
	return tool.Text(enteredPlanMode), nil
}
