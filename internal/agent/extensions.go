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
	// listed are the listing lines the model was given, by name.
	listed map[string]string
	// granted end the grants of the turn under way.
	granted []func()
}

func newExtensions(o Options, conv *transcript.Conversation) *extensions {
	e := o.Extensions
	x := &extensions{set: e.Set, dir: o.Cwd, allow: e.AllowShell, read: e.AllowRead, grant: e.Grant, warn: o.Warn}
	if conv != nil {
		x.listed = listedIn(conv.Entries)
		x.loaded = loadedSkills(conv.Entries, x.set)
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

// SkillListingAttachment is the type of the attachment that lists the
// skills (and the commands the model may run) to the model, as Claude
// Code names it: the whole list with a new session's first prompt and
// after each compaction (isInitial), then only what was added or changed
// since, with the next prompt of a session resumed after the change. The
// list rides in the conversation, not in the system prompt, and is
// recorded with it: a resume sends the same first message, so the cached
// prefix holds.
const SkillListingAttachment = "skill_listing"

// The introductions of the listing's reminder: the whole list, and the
// lines added or changed since it.
const (
	listingIntro = "Skills you can load with the Skill tool when a task matches what its line says (name: when to use it):"
	listingMore  = "More skills you can load with the Skill tool, new or changed since the list you were given (name: when to use it):"
)

// IsSkillListing reports whether text is a reminder listing the skills:
// cairn's own, or the one Claude Code's transcripts render. Context
// accounting counts such reminders as skills.
func IsSkillListing(text string) bool {
	for _, intro := range []string{listingIntro, listingMore, transcript.SkillListingIntro} {
		if strings.HasPrefix(text, "<system-reminder>\n"+intro) {
			return true
		}
	}
	return false
}

// listingLine is one line of the listing: a skill or command by name.
type listingLine struct{ name, line string }

// current is the listing of the session's skills, then the commands the
// model may run, each "- name: description".
func (x *extensions) current() []listingLine {
	if x.set == nil {
		return nil
	}
	var lines []listingLine
	for _, k := range x.set.Skills {
		lines = append(lines, listingLine{k.Name, "- " + k.Name + ": " + oneLine(k.Description)})
	}
	for _, c := range x.set.Commands {
		if !c.DisableModelInvocation && c.Description != "" {
			lines = append(lines, listingLine{c.Name, "- " + c.Name + ": " + oneLine(c.Description)})
		}
	}
	return lines
}

// SkillListing is the reminder a new session's first prompt carries to
// list set's skills and model-run commands; "" when there are none.
// `cairn context` and /context count a session that has not sent its
// first prompt with it.
func SkillListing(set *extension.Set) string {
	x := &extensions{set: set}
	if a, ok := x.listingOf(x.current(), true); ok {
		return a.Rendered[0].Text
	}
	return ""
}

// listingOf is the attachment listing lines; initial for the whole list.
func (x *extensions) listingOf(lines []listingLine, initial bool) (engine.Attachment, bool) {
	if len(lines) == 0 {
		return engine.Attachment{}, false
	}
	intro := listingIntro
	if !initial {
		intro = listingMore
	}
	names, texts := make([]any, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		names[i], texts[i] = l.name, l.line
	}
	content := strings.Join(texts, "\n")
	return engine.Attachment{
		Type:     SkillListingAttachment,
		Data:     map[string]any{"content": content, "skillCount": len(lines), "isInitial": initial, "names": names},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(intro + "\n\n" + content))},
	}, true
}

// listingDue is the listing the next prompt carries: the whole list when
// the conversation (since its last compaction, which lists them all in
// its survivors) holds none, else the lines new or changed since; ok is false when nothing is due. The
// lines count as listed once sent, when the turn's events pass through
// the returned wrapper and the prompt is recorded (a prompt a hook
// refuses lists nothing).
func (x *extensions) listingDue() (a engine.Attachment, sent func(iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error], ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	cur := x.current()
	initial := len(x.listed) == 0
	var due []listingLine
	for _, l := range cur {
		if x.listed[l.name] != l.line {
			due = append(due, l)
		}
	}
	if len(due) == 0 {
		return engine.Attachment{}, nil, false
	}
	if initial {
		due = cur
	}
	sent = func(events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] {
		return func(yield func(engine.Event, error) bool) {
			for ev, err := range events {
				if err == nil && ev.Type == engine.EventUser {
					x.mu.Lock()
					x.markListed(due, initial)
					x.mu.Unlock()
				}
				if !yield(ev, err) {
					return
				}
			}
		}
	}
	a, _ = x.listingOf(due, initial)
	return a, sent, true
}

// relist goes on from what the chain entries (a rewound conversation's)
// listed.
func (x *extensions) relist(entries []*transcript.Entry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.listed = listedIn(entries)
}

// markListed records lines as listed; initial starts the record afresh.
// The caller holds x.mu.
func (x *extensions) markListed(lines []listingLine, initial bool) {
	if initial || x.listed == nil {
		x.listed = map[string]string{}
	}
	for _, l := range lines {
		x.listed[l.name] = l.line
	}
}

// listedIn reads what the skill listings of a transcript listed (since
// its last compaction): each "- name: …" line by name. It reads the
// listings from the end back to the last initial one.
func listedIn(entries []*transcript.Entry) map[string]string {
	listed := map[string]string{}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Type != transcript.TypeAttachment || e.AttachmentType() != SkillListingAttachment {
			continue
		}
		var a struct {
			Type      string `json:"type"`
			Content   string `json:"content"`
			IsInitial bool   `json:"isInitial"`
		}
		if json.Unmarshal(e.Attachment, &a) != nil || a.Type != SkillListingAttachment {
			continue
		}
		// Read backwards, the first line of a name is its latest.
		lines := strings.Split(a.Content, "\n")
		for k := len(lines) - 1; k >= 0; k-- {
			line := lines[k]
			if name, _, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": "); ok && strings.HasPrefix(line, "- ") {
				if _, later := listed[name]; !later {
					listed[name] = line
				}
			}
		}
		if a.IsInitial {
			break
		}
	}
	return listed
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

// survivors carries the skills through a compaction: the whole listing
// first (the compaction drops the messages that carried it), then the
// skills loaded so far, the newest first within the budgets.
func (x *extensions) survivors(context.Context) []engine.Attachment {
	x.mu.Lock()
	names := slices.Clone(x.loaded)
	x.mu.Unlock()
	// What the session listed is what the set holds (it loads once a
	// session, and each prompt lists what is due), so the record of what
	// was listed stands, whether the compaction goes through or not.
	var out []engine.Attachment
	if a, ok := x.listingOf(x.current(), true); ok {
		out = append(out, a)
	}
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
		return out
	}
	text := "The following skills were loaded earlier in this session and still apply; keep following them:\n\n" + strings.Join(parts, "\n\n---\n\n")
	return append(out, engine.Attachment{
		Type:     InvokedSkillsAttachment,
		Data:     map[string]any{"skills": kept},
		Rendered: []model.Block{model.TextBlock(transcript.WrapSystemReminder(text))},
	})
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

// loadedSkills are the skills of set a transcript loaded, each once,
// oldest last load first: those the last compaction carried, then the
// Skill calls and /name prompts after it. It reads entries from the end
// and stops once every skill of set is found: a set without skills reads
// nothing.
func loadedSkills(entries []*transcript.Entry, set *extension.Set) []string {
	if set == nil || len(set.Skills) == 0 {
		return nil
	}
	var names []string // newest first
	add := func(name string) {
		if set.Skill(name) != nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for i := len(entries) - 1; i >= 0 && len(names) < len(set.Skills); i-- {
		e := entries[i]
		if e.Type == transcript.TypeAttachment {
			if e.AttachmentType() != InvokedSkillsAttachment {
				continue
			}
			var a struct {
				Type   string `json:"type"`
				Skills []struct {
					Name string `json:"name"`
				} `json:"skills"`
			}
			if json.Unmarshal(e.Attachment, &a) == nil && a.Type == InvokedSkillsAttachment {
				for k := len(a.Skills) - 1; k >= 0; k-- {
					add(a.Skills[k].Name)
				}
			}
			continue
		}
		m, ok, err := e.DecodeMessage()
		if !ok || err != nil {
			continue
		}
		for j := len(m.Content) - 1; j >= 0; j-- {
			switch b := &m.Content[j]; {
			case b.Type == model.BlockToolUse && b.Name == "Skill":
				var in struct {
					Skill string `json:"skill"`
				}
				if json.Unmarshal(b.Input, &in) == nil && in.Skill != "" {
					add(strings.TrimPrefix(in.Skill, "/"))
				}
			case b.Type == model.BlockText && strings.HasPrefix(b.Text, "<command-message>"):
				if name, _, ok := strings.Cut(strings.TrimPrefix(b.Text, "<command-message>"), "</command-message>"); ok {
					add(name)
				}
			}
		}
	}
	slices.Reverse(names)
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
