package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Skills is what the Skill tool loads from: the session's skills (and
// the commands the model may run). Implementations are safe for
// concurrent use.
type Skills interface {
	// Load returns the text the model reads for the skill called name,
	// given args. An unknown name is an error wrapping ErrNoSkill; one
	// whose loading is refused (a shell line the rules do not allow) an
	// error saying why.
	Load(ctx context.Context, name, args string) (string, error)
}

// ErrNoSkill is what Skills.Load returns for a name it does not have.
var ErrNoSkill = errors.New("no such skill")

// Skill loads a skill's instructions into the conversation. Without
// Skills (a session with none) every call is an error the model reads.
type Skill struct {
	Skills Skills
}

var skillSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"skill":{"type":"string","description":"The skill's name, exactly as the list of available skills gives it, without a leading slash."},` +
	`"args":{"type":"string","description":"Arguments for the skill, if it takes any."}},` +
	`"required":["skill"],"additionalProperties":false}`)

const skillDescription = `Load a skill: instructions (and files beside them) that the user or the project has prepared for a kind of task, such as a deploy procedure or a review checklist.

The skills available in this session are listed in a reminder at the start of the conversation (skills that appear later, in a reminder of their own), with a line on when each applies. When the task in front of you is one a skill covers, call this tool before starting: the skill's instructions arrive as the result, and you follow them instead of your usual approach. The result names the skill's folder, so you can read the other files it mentions.

- skill: a name from the list, without the slash. Do not invent names.
- args: optional arguments, as the user would type them after /<name>.

When the user types /<name> the skill is already loaded for that turn: follow it, do not call this tool again for it.`

func (Skill) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Skill", Description: skillDescription, InputSchema: skillSchema}
}
func (Skill) ReadOnly(json.RawMessage) bool        { return true }
func (Skill) Destructive(json.RawMessage) bool     { return false }
func (Skill) ConcurrencySafe(json.RawMessage) bool { return false }

func (s Skill) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	var in struct {
		Skill string `json:"skill"`
		Args  string `json:"args"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Errorf("The input is not valid: %v", err), nil
	}
	name := strings.TrimPrefix(strings.TrimSpace(in.Skill), "/")
	if name == "" {
		return tool.Errorf("Give the name of a skill from the list of available skills."), nil
	}
	if s.Skills == nil {
		return tool.Errorf("There are no skills in this session; carry on without one."), nil
	}
	text, err := s.Skills.Load(ctx, name, in.Args)
	if errors.Is(err, ErrNoSkill) {
		return tool.Errorf("There is no skill %q. Use a name from the list of available skills, or carry on without one.", name), nil
	}
	if err != nil {
		return tool.Errorf("The skill %s could not be loaded: %v", name, err), nil
	}
	return tool.Result{
		Content: []model.Block{model.TextBlock("Launching skill: " + name)},
		After:   []model.Block{model.TextBlock(text)},
		Detail:  map[string]any{"success": true, "commandName": name},
	}, nil
}
