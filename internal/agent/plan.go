package agent

import (
	"fmt"
	"hash/fnv"
	"path/filepath"

	"github.com/cairn-dev/cairn/engine"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// planOf returns the plan a resumed conversation left (SPEC R4, E3), or
// an empty one, in a file of $CAIRN_HOME/plans: the one the transcript
// names when it is there, else <slug>.md, the slug a Claude Code
// session's lines carry, else one made from the session's id. The plan
// tools write and read no other file: a plan saved anywhere else (Claude
// Code's own folder, whatever path a transcript names) moves into it.
func planOf(conv *transcript.Conversation, home session.Home, id string) *coretools.Plan {
	var path, content, slug string
	if conv != nil {
		path, content, _ = coretools.LatestPlan(conv.Entries)
		for i := len(conv.Entries) - 1; i >= 0 && slug == ""; i-- {
			slug = conv.Entries[i].Slug
		}
	}
	if home.Dir == "" {
		return coretools.NewPlan("", content)
	}
	dir := filepath.Join(home.Dir, "plans")
	if path != "" && filepath.Dir(filepath.Clean(path)) == dir && filepath.Ext(path) == ".md" {
		return coretools.NewPlan(path, content)
	}
	if slug == "" || slug != filepath.Base(slug) {
		slug = planSlug(id)
	}
	return coretools.NewPlan(filepath.Join(dir, slug+".md"), content)
}

// Words of plan slugs.
var (
	slugAdjectives = []string{"amber", "brisk", "calm", "deep", "eager", "faint", "gentle", "hollow", "icy", "jolly", "keen", "lucid", "mellow", "nimble", "opal", "plain", "quiet", "rapid", "sober", "tidy", "upper", "vivid", "wry", "young"}
	slugVerbs      = []string{"baking", "carving", "drifting", "folding", "gliding", "humming", "knitting", "leaping", "mending", "nesting", "pacing", "rowing", "sifting", "tracing", "wading", "weaving"}
	slugNouns      = []string{"anchor", "badger", "cedar", "delta", "ember", "falcon", "garnet", "harbor", "island", "juniper", "kestrel", "lantern", "meadow", "nebula", "orchard", "pebble", "quarry", "reef", "summit", "thicket", "valley", "willow"}
)

// planSlug names a session's plan file with three words, as Claude Code
// names its own: the same words for the same session, every time.
func planSlug(id string) string {
	h := fnv.New64a()
	h.Write([]byte(id))
	n := h.Sum64()
	pick := func(words []string) string {
		w := words[n%uint64(len(words))]
		n /= uint64(len(words))
		return w
	}
	return pick(slugAdjectives) + "-" + pick(slugVerbs) + "-" + pick(slugNouns)
}

// planModeReminder tells the model, with each prompt while the session is
// in plan mode, what plan mode lets it do.
const planModeReminder = "Plan mode is on: the user wants a plan before anything changes. Explore and design with read-only tools only — read, search, fetch, keep the todo list — and do not edit files, run commands that change anything, or start carrying the work out: such calls are refused. When the plan is complete, present it with ExitPlanMode for the user to approve; it is saved to %s. If the user only asked a question, just answer it."

// planReminder is the plan_mode attachment of a prompt sent while the
// session is in plan mode.
func (a *Agent) planReminder() (engine.Attachment, bool) {
	if a.opts.PlanModes == nil || !a.opts.PlanModes.InPlanMode() {
		return engine.Attachment{}, false
	}
	path := a.plan.Path()
	return engine.Attachment{
		Type: "plan_mode",
		Data: map[string]any{"reminderType": "full", "isSubAgent": false, "planFilePath": path, "planExists": a.plan.Content() != ""},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(
			fmt.Sprintf(planModeReminder, path)))},
	}, true
}

// Plan returns the session's plan file and the plan in it ("" before the
// model presented one).
func (a *Agent) Plan() (path, content string) { return a.plan.Path(), a.plan.Content() }
