package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/subagent"
	"github.com/cairn-dev/cairn/internal/tokens"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// InvokedSkillsAttachment is the type of the attachment that carries the
// skills loaded in a session through a compaction, as Claude Code names
// it.
const InvokedSkillsAttachment = "invoked_skills"

// Budgets of the skills carried through a compaction (SPEC C4): each one
// at most skillTokens, all of them at most skillsTokens, newest first.
const (
	skillTokens  = 5_000
	skillsTokens = 25_000
)

// extensions are the session's custom commands and skills: the Skill
// tool loads from it, a prompt "/name args" is expanded by it, and the
// skills loaded come back after each compaction. Safe for concurrent use.
type extensions struct {
	set   *extension.Set
	dir   string
	allow func(ctx context.Context, command string, allowedTools []string) error
	read  func(ctx context.Context, path string) error
	grant func(source string, rules []string) (func(), error)
	warn  func(string)

	mu     sync.Mutex
	loaded []string // skill names, oldest first, each once
	// granted end the grants of the turn under way.
	granted []func()
}

func newExtensions(o Options, conv *transcript.Conversation) *extensions {
	e := o.Extensions
	x := &extensions{set: e.Set, dir: o.Cwd, allow: e.AllowShell, read: e.AllowRead, grant: e.Grant, warn: o.Warn}
	if conv != nil {
		for _, name := range loadedSkills(conv.Entries) {
			if x.set.Skill(name) != nil {
				x.remember(name)
			}
		}
	}
	return x
}

func (x *extensions) options() extension.ExpandOptions {
	return extension.ExpandOptions{Dir: x.dir, Allow: x.allow, Read: x.read}
}

func (x *extensions) remember(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.loaded = slices.DeleteFunc(x.loaded, func(n string) bool { return n == name })
	x.loaded = append(x.loaded, name)
}

// Load is the Skill tool's Skills: a skill's text, or a command's the
// model may run. Its allowed-tools rules hold for the rest of the turn.
func (x *extensions) Load(ctx context.Context, name, args string) (string, error) {
	if k := x.set.Skill(name); k != nil {
		x.remember(k.Name)
		x.grantTurn(k.Path, k.AllowedTools)
		return k.Text(args), nil
	}
	c := x.set.Command(name)
	if c == nil || c.DisableModelInvocation {
		return "", fmt.Errorf("%w: %s", coretools.ErrNoSkill, name)
	}
	ex, err := c.Expand(ctx, args, x.options())
	if err != nil {
		return "", err
	}
	x.grantTurn(c.Path, c.AllowedTools)
	x.report(ex.Warnings)
	text := ex.Blocks[1]
	for _, f := range ex.Files {
		text += "\n\nContents of " + f.Path + ":\n" + transcript.NumberLines(strings.TrimSuffix(f.Content, "\n"), 1)
	}
	return text, nil
}

// grantTurn allows rules (the allowed-tools of the file source) until
// the turn under way ends.
func (x *extensions) grantTurn(source string, rules []string) {
	if x.grant == nil || len(rules) == 0 {
		return
	}
	end, err := x.grant(source, rules)
	if err != nil {
		x.report([]string{err.Error()})
	}
	x.mu.Lock()
	x.granted = append(x.granted, end)
	x.mu.Unlock()
}

// endTurn ends the grants of the turn.
func (x *extensions) endTurn() {
	x.mu.Lock()
	ends := x.granted
	x.granted = nil
	x.mu.Unlock()
	for _, end := range ends {
		end()
	}
}

// duringTurn is the turn's events, the grants made for it ended once
// the turn is over, however it ends (done, failed, or its consumer
// stopped).
func (x *extensions) duringTurn(events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) {
		defer x.endTurn()
		for ev, err := range events {
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (x *extensions) report(ws []string) {
	if x.warn == nil {
		return
	}
	for _, w := range ws {
		x.warn(w)
	}
}

// listing is the system prompt section naming the skills (and the
// commands the model may run) with their descriptions: fixed for the
// session, so it never breaks the prompt cache.
func (x *extensions) listing() string {
	if x.set == nil {
		return ""
	}
	var lines []string
	for _, k := range x.set.Skills {
		lines = append(lines, "- "+k.Name+": "+oneLine(k.Description))
	}
	for _, c := range x.set.Commands {
		if !c.DisableModelInvocation && c.Description != "" {
			lines = append(lines, "- "+c.Name+": "+oneLine(c.Description))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "# Skills\nLoad one with the Skill tool when a task matches what its line says (name: when to use it):\n\n" + strings.Join(lines, "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// expand makes a prompt "/name args" naming a command or skill into the
// turn's input; ok is false when the prompt names neither.
// The command's (or skill's) allowed-tools are granted until the turn
// ends (duringTurn), and its model, resolved against the session's
// model, names the turn's requests.
func (x *extensions) expand(ctx context.Context, text, sessionModel string) (in engine.Input, ok bool, err error) {
	name, args, ok := SlashCommand(text)
	if !ok || x.set == nil {
		return in, false, nil
	}
	var ex *extension.Expansion
	var path, modelName string
	var allowed []string
	if k := x.set.Skill(name); k != nil {
		ex, err = k.Expand(ctx, args, x.options())
		if err == nil {
			x.remember(k.Name)
		}
		path, allowed, modelName = k.Path, k.AllowedTools, k.Model
	} else if c := x.set.Command(name); c != nil {
		ex, err = c.Expand(ctx, args, x.options())
		path, allowed, modelName = c.Path, c.AllowedTools, c.Model
	} else {
		return in, false, nil
	}
	if err != nil {
		return in, true, err
	}
	x.report(ex.Warnings)
	in.Message = model.Message{Role: model.RoleUser}
	for _, b := range ex.Blocks {
		in.Message.Content = append(in.Message.Content, model.TextBlock(b))
	}
	for _, f := range ex.Files {
		in.Attachments = append(in.Attachments, fileAttachment(f))
	}
	if modelName != "" {
		in.Model = subagent.ResolveModel(modelName, sessionModel)
	}
	in.Attachments = append(in.Attachments, commandPermissions(allowed, modelName))
	x.grantTurn(path, allowed)
	return in, true, nil
}

// CommandPermissionsAttachment is the type of the attachment that
// records what a command or skill allowed for its turn (its
// allowed-tools, and its model when it names one), as Claude Code
// records it. The model is not shown it.
const CommandPermissionsAttachment = "command_permissions"

func commandPermissions(allowed []string, modelName string) engine.Attachment {
	data := map[string]any{"allowedTools": append([]string{}, allowed...)}
	if modelName != "" {
		data["model"] = modelName
	}
	return engine.Attachment{Type: CommandPermissionsAttachment, Data: data}
}

// fileAttachment is an @path include, shown to the model as a Read of
// the file, as Claude Code shows it.
func fileAttachment(f extension.File) engine.Attachment {
	content := strings.TrimSuffix(f.Content, "\n")
	lines := strings.Count(content, "\n") + 1
	input, _ := jsonw.Marshal(map[string]string{"file_path": f.Path})
	return engine.Attachment{
		Type: "file",
		Data: map[string]any{
			"filename": f.Path,
			"content":  map[string]any{"type": "text", "file": map[string]any{"filePath": f.Path, "content": content, "numLines": lines, "startLine": 1, "totalLines": lines}},
		},
		Rendered: []model.Block{
			model.TextBlock(transcript.WrapSystemReminder("Called the Read tool with the following input: " + string(input))),
			model.TextBlock(transcript.WrapSystemReminder("Result of calling the Read tool:\n" + transcript.NumberLines(content, 1))),
		},
	}
}

// survivors carries the skills loaded so far through a compaction, the
// newest first within the budgets.
func (x *extensions) survivors(context.Context) []engine.Attachment {
	x.mu.Lock()
	names := slices.Clone(x.loaded)
	x.mu.Unlock()
	var parts []string
	var kept []map[string]any
	var total int64
	for i := len(names) - 1; i >= 0; i-- {
		k := x.set.Skill(names[i])
		if k == nil {
			continue
		}
		text := k.Text("")
		if tokens.Estimate(text) > skillTokens {
			text = cutTokens(text, skillTokens) + "\n\n[The rest of this skill was cut to fit; read " + k.Path + " for all of it.]"
		}
		n := tokens.Estimate(text)
		if total+n > skillsTokens {
			break
		}
		total += n
		parts = append(parts, "### Skill: "+k.Name+"\nPath: "+k.Path+"\n\n"+text)
		kept = append(kept, map[string]any{"name": k.Name, "path": k.Path})
	}
	if len(parts) == 0 {
		return nil
	}
	text := "The following skills were loaded earlier in this session and still apply; keep following them:\n\n" + strings.Join(parts, "\n\n---\n\n")
	return []engine.Attachment{{
		Type:     InvokedSkillsAttachment,
		Data:     map[string]any{"skills": kept},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))},
	}}
}

// cutTokens shortens text to about n tokens, at a line end.
func cutTokens(text string, n int64) string {
	limit := int(n * 4)
	if len(text) <= limit {
		return text
	}
	cut := text[:limit]
	if i := strings.LastIndexByte(cut, '\n'); i > limit/2 {
		cut = cut[:i]
	}
	return strings.ToValidUTF8(cut, "")
}

// loadedSkills are the skills a transcript loaded, oldest first: those
// the last compaction carried, then the Skill calls and /name prompts
// after it.
func loadedSkills(entries []transcript.Entry) []string {
	var names []string
	for _, e := range entries {
		if e.Type == transcript.TypeAttachment {
			var a struct {
				Type   string `json:"type"`
				Skills []struct {
					Name string `json:"name"`
				} `json:"skills"`
			}
			if json.Unmarshal(e.Attachment, &a) == nil && a.Type == InvokedSkillsAttachment {
				for _, s := range a.Skills {
					names = append(names, s.Name)
				}
			}
			continue
		}
		m, ok, err := e.DecodeMessage()
		if !ok || err != nil {
			continue
		}
		for _, b := range m.Content {
			switch {
			case b.Type == model.BlockToolUse && b.Name == "Skill":
				var in struct {
					Skill string `json:"skill"`
				}
				if json.Unmarshal(b.Input, &in) == nil && in.Skill != "" {
					names = append(names, strings.TrimPrefix(in.Skill, "/"))
				}
			case b.Type == model.BlockText && strings.HasPrefix(b.Text, "<command-message>"):
				if name, _, ok := strings.Cut(strings.TrimPrefix(b.Text, "<command-message>"), "</command-message>"); ok {
					names = append(names, name)
				}
			}
		}
	}
	return names
}

// SlashCommand splits a prompt "/name args" into its parts; "//x" and
// paths are not commands.
func SlashCommand(prompt string) (name, args string, ok bool) {
	prompt = strings.TrimSpace(prompt)
	if !strings.HasPrefix(prompt, "/") || strings.HasPrefix(prompt, "//") {
		return "", "", false
	}
	name, args, _ = strings.Cut(prompt[1:], " ")
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, args = name[:i], prompt[1+i+1:]
	}
	if name == "" || strings.ContainsAny(name, "/\\.") {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}

// failed is a turn that fails before it starts.
func failed(err error) iter.Seq2[engine.Event, error] {
	return func(yield func(engine.Event, error) bool) { yield(engine.Event{}, err) }
}

// Commands are the session's custom commands and skills, for the UI's
// /help and completion.
func (a *Agent) Extensions() *extension.Set { return a.ext.set }
