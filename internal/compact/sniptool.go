package compact

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// SnipToolName is the name the model calls the Snip tool by.
const SnipToolName = "Snip"

// Lines is implemented by a Transcript that can read the conversation's
// lines back. The Snip tool reads them to learn what each message is made
// of — permission decisions, attachments, compaction records; without
// them it judges messages by their content alone.
type Lines interface {
	// Lines returns the entries of the conversation's active chain as a
	// resume reads them, with what was written so far, in pieces to read
	// one after the other (a chain read back and what carried it on
	// since). The caller changes none of them.
	Lines(ctx context.Context) ([][]*transcript.Entry, error)
}

// Refusal says why one id named to Remove cannot be snipped.
type Refusal struct {
	ID     string // as given
	Reason string
}

// RefusedError is Remove's error when some ids cannot be snipped; nothing
// was snipped then.
type RefusedError struct{ Refusals []Refusal }

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("nothing was snipped:")
	for _, r := range e.Refusals {
		fmt.Fprintf(&b, "\n- %q: %s", r.ID, r.Reason)
	}
	return b.String()
}

// ErrNoTranscript is returned when a snip cannot be recorded.
var ErrNoTranscript = errors.New("snip: the session has no transcript to record the snip in")

// Removal reports what one snip removed.
type Removal struct {
	// Named are the tags of the messages named, in the order given.
	Named []string
	// UUIDs are the transcript lines removed, in conversation order: the
	// messages named and the tool calls or results paired with them.
	UUIDs []string
	// Messages counts the messages removed; Tokens estimates their size.
	Messages int
	Tokens   int64
	// Boundary is the uuid of the snip_boundary line recording it.
	Boundary string
	// What describes each message named, for the model.
	What []string
}

// Remove snips the messages named by ids — short ids as tagged ([id:…]
// or the six characters alone) or full uuids — together with the tool
// calls and results paired with them, so no tool_use is left without its
// tool_result. It refuses, snipping nothing, when any id is unknown or
// names what is never snipped: the user's latest request, the current
// turn, the message the conversation starts with, todo lists, plans,
// permission decisions, instruction files, compaction summaries and what
// compaction carries verbatim, and pinned messages. The snip is recorded
// (a snip_boundary line listing the removed uuids, as Claude Code writes
// it) before Remove returns; the next request leaves the messages out.
func (s *Snip) Remove(ctx context.Context, ids []string, reason string) (*Removal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	history := s.last
	if s.cfg.History != nil {
		history = s.cfg.History()
	}
	view, _ := dropSnipped(history, s.removed)
	var lines *lineInfo
	if l, ok := s.cfg.Transcript.(Lines); ok {
		entries, err := l.Lines(ctx)
		if err != nil {
			return nil, fmt.Errorf("snip: read the transcript: %w", err)
		}
		lines = newLineInfo(entries)
	}
	short := map[string][]int{}
	full := map[string]int{}
	for i, m := range view {
		for _, id := range m.IDs {
			full[id] = i
			if k := ShortID(id); !slices.Contains(short[k], i) {
				short[k] = append(short[k], i)
			}
		}
	}
	latest := latestPrompt(view)
	turn := len(view) - 1
	if turn > 0 && view[turn].Role == model.RoleAssistant {
		turn-- // the response calling Snip and what it answers
	}
	var refusals []Refusal
	take := map[int]bool{}
	rm := &Removal{}
	seen := map[string]bool{}
	for _, raw := range ids {
		id := normalizeID(raw)
		if seen[id] {
			continue
		}
		seen[id] = true
		i, ok := full[id]
		if !ok {
			switch at := short[id]; len(at) {
			case 0:
				refusals = append(refusals, Refusal{raw, "no message in the conversation has this id (it may be snipped or compacted already); ids are the characters after \"id:\" in a tag such as [id:a1b2c3]"})
				continue
			case 1:
				i = at[0]
			default:
				refusals = append(refusals, Refusal{raw, "more than one message has this id; name the message by its full uuid"})
				continue
			}
		}
		unit := pairOf(view, i)
		why := ""
		for _, j := range unit {
			if why = s.reason(view, j, latest, turn, lines); why != "" {
				if j != i {
					why = pairedWord(view[i]) + " " + why
				}
				break
			}
		}
		if why != "" {
			refusals = append(refusals, Refusal{raw, why})
			continue
		}
		if !take[i] {
			rm.Named = append(rm.Named, Tag(view[i].IDs[0]))
			rm.What = append(rm.What, describe(view, unit))
		}
		for _, j := range unit {
			take[j] = true
		}
	}
	if len(refusals) > 0 {
		return nil, &RefusedError{Refusals: refusals}
	}
	for i, m := range view {
		if take[i] {
			rm.UUIDs = append(rm.UUIDs, m.IDs...)
			rm.Messages++
			rm.Tokens += tokens.EstimateMessages(view[i : i+1])
		}
	}
	if len(rm.UUIDs) == 0 {
		return nil, &RefusedError{Refusals: []Refusal{{strings.Join(ids, ", "), "the messages named are not in the transcript"}}}
	}
	b, err := s.record(ctx, rm.UUIDs, rm.Tokens, reason)
	if err != nil {
		return nil, err
	}
	rm.Boundary = b
	for _, id := range rm.UUIDs {
		s.removed[id] = true
	}
	s.fresh, s.since = true, 0
	return rm, nil
}

// record appends the snip_boundary line: a system line whose
// snipMetadata.removedUuids lists what was removed, which a resume (by
// Claude Code or cairn) applies whatever else the line says; tokensFreed
// is cairn's own, for `cairn context`.
func (s *Snip) record(ctx context.Context, uuids []string, freed int64, reason string) (string, error) {
	t := s.cfg.Transcript
	if t == nil {
		return "", ErrNoTranscript
	}
	e := t.NewEntry(transcript.TypeSystem, t.Leaf())
	e.Subtype = transcript.SubtypeSnipBoundary
	text := fmt.Sprintf("Snipped %d lines from the conversation", len(uuids))
	if reason = strings.TrimSpace(reason); reason != "" {
		text += ": " + reason
	}
	e.Content = jsonw.String(text)
	e.Level = "info"
	e.SnipMetadata, _ = jsonw.Marshal(map[string]any{"removedUuids": uuids, "tokensFreed": freed}) // always encodes
	if err := t.Append(ctx, e); err != nil {
		return "", fmt.Errorf("record the snip: %w", err)
	}
	return e.UUID, nil
}

// normalizeID accepts an id as the model may write it: "a1b2c3",
// "[id:a1b2c3]", "id:a1b2c3", or a full uuid.
func normalizeID(id string) string {
	id = strings.TrimSpace(id)
	id = strings.TrimSuffix(strings.TrimPrefix(id, "["), "]")
	id = strings.TrimPrefix(strings.TrimSpace(id), "id:")
	return strings.ToLower(strings.TrimSpace(id))
}

// pairWord names the message paired with m in a refusal.
func pairedWord(m model.Message) string {
	if m.Role == model.RoleAssistant {
		return "the result of its tool call:"
	}
	return "the tool call it answers:"
}

// pairOf returns the indexes of the messages that leave together with
// msgs[i]: a response with tool calls and the message answering them.
func pairOf(msgs []model.Message, i int) []int {
	m := msgs[i]
	if m.Role == model.RoleAssistant {
		calls := blockIDs(m, model.BlockToolUse)
		if len(calls) > 0 && i+1 < len(msgs) && msgs[i+1].Role == model.RoleUser && overlaps(blockIDs(msgs[i+1], model.BlockToolResult), calls) {
			return []int{i, i + 1}
		}
		return []int{i}
	}
	results := blockIDs(m, model.BlockToolResult)
	for k := i - 1; k >= 0 && len(results) > 0; k-- {
		if msgs[k].Role == model.RoleAssistant {
			if overlaps(blockIDs(msgs[k], model.BlockToolUse), results) {
				return []int{k, i}
			}
			break
		}
	}
	return []int{i}
}

// blockIDs returns the tool_use ids of m's blocks of type typ (tool_use or
// tool_result).
func blockIDs(m model.Message, typ string) []string {
	var out []string
	for _, b := range m.Content {
		switch {
		case b.Type != typ:
		case typ == model.BlockToolUse:
			out = append(out, b.ID)
		default:
			out = append(out, b.ToolUseID)
		}
	}
	return out
}

func overlaps(a, b []string) bool {
	return slices.ContainsFunc(a, func(x string) bool { return slices.Contains(b, x) })
}

// latestPrompt returns the index of the last message holding words the
// user typed, -1 when there is none.
func latestPrompt(msgs []model.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleUser {
			continue
		}
		for _, b := range msgs[i].Content {
			if b.Type != model.BlockText || harnessText(b.Text) {
				continue
			}
			t := strings.TrimSpace(StripTag(b.Text))
			if t != "" && !strings.HasPrefix(t, "[Request interrupted") {
				return i
			}
		}
	}
	return -1
}

// Why messages are never snipped.
const (
	whyPinned       = "it is pinned"
	whySummary      = "it is the summary of an earlier compaction"
	whyCarried      = "it carries what compaction keeps verbatim (the user's requests, re-read files, pins)"
	whyTodo         = "it holds the todo list"
	whyPlan         = "it holds the plan"
	whyInstructions = "it carries the instruction files and the session's context"
	whyPermission   = "it records a permission decision"
	whySkills       = "it lists the skills the model may load"
	whyLatest       = "it is the user's latest request"
	whyTurn         = "it belongs to the current turn"
	whyFirst        = "the conversation starts with it"
)

// Tools whose calls and results hold the todo list or the plan.
var (
	todoTools = []string{"TodoWrite", "TodoRead", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"}
	planTools = []string{"ExitPlanMode", "EnterPlanMode"}
)

// attachmentReasons are the attachment types that make the message they
// are part of impossible to snip.
var attachmentReasons = map[string]string{
	PinType:               whyPinned,
	"cairn_user_requests": whyCarried,
	"todo":                whyTodo,
	"todo_reminder":       whyTodo,
	"task_reminder":       whyTodo,
	"plan_file_reference": whyPlan,
	"plan_mode":           whyPlan,
	"plan_mode_reentry":   whyPlan,
	"plan_mode_exit":      whyPlan,
	"nested_memory":       whyInstructions,
	"claude_md":           whyInstructions,
	"cairn_context":       whyInstructions,
	"skill_listing":       whySkills,
}

// reason says why view[j] may not be snipped, "" when it may.
func (s *Snip) reason(view []model.Message, j, latest, turn int, lines *lineInfo) string {
	m := view[j]
	if s.cfg.Pins != nil && s.cfg.Pins.Pinned(m.IDs) {
		return whyPinned
	}
	if why := lines.reason(m.IDs); why != "" {
		return why
	}
	if why := contentReason(m); why != "" {
		return why
	}
	switch {
	case j == latest:
		return whyLatest
	case j >= turn:
		return whyTurn
	case j == 0:
		return whyFirst
	}
	return ""
}

// contentReason says why m may never be snipped, judging by its content.
func contentReason(m model.Message) string {
	for _, b := range m.Content {
		switch b.Type {
		case model.BlockToolUse:
			if slices.Contains(todoTools, b.Name) {
				return whyTodo
			}
			if slices.Contains(planTools, b.Name) {
				return whyPlan
			}
		case model.BlockText:
			t := strings.TrimSpace(b.Text)
			switch {
			case strings.HasPrefix(t, summaryPreamble):
				return whySummary
			case strings.HasPrefix(t, pinHeader):
				return whyPinned
			case strings.HasPrefix(t, requestHeader):
				return whyCarried
			case harnessText(t) && carriesInstructions(t):
				return whyInstructions
			}
		}
	}
	return ""
}

// carriesInstructions reports whether a reminder carries instruction files.
func carriesInstructions(t string) bool {
	if strings.Contains(t, "# claudeMd") {
		return true
	}
	if !strings.Contains(t, "Contents of ") {
		return false
	}
	return strings.Contains(t, "CLAUDE.md") || strings.Contains(t, "AGENTS.md") || strings.Contains(t, "CLAUDE.local.md")
}

// lineInfo is what the transcript says about the lines of the conversation.
type lineInfo struct {
	byUUID map[string]*transcript.Entry
	// carried are the lines a compaction wrote after its summary: what
	// it carries verbatim.
	carried map[string]bool
}

// newLineInfo reads the chain Lines gave in pieces.
func newLineInfo(pieces [][]*transcript.Entry) *lineInfo {
	n := 0
	for _, p := range pieces {
		n += len(p)
	}
	li := &lineInfo{byUUID: make(map[string]*transcript.Entry, n), carried: map[string]bool{}}
	after := map[string]bool{}
	for _, p := range pieces {
		for i := range p {
			e := p[i]
			li.byUUID[e.UUID] = e
			if e.IsCompactSummary {
				after[e.UUID] = true
			}
		}
	}
	// A compaction's attachments hang one off the other from its summary.
	for changed := true; changed; {
		changed = false
		for _, p := range pieces {
			for i := range p {
				e := p[i]
				if e.Type == transcript.TypeAttachment && after[e.ParentUUID] && !after[e.UUID] {
					after[e.UUID], li.carried[e.UUID], changed = true, true, true
				}
			}
		}
	}
	return li
}

// reason says why a message made of the lines ids may not be snipped.
func (li *lineInfo) reason(ids []string) string {
	if li == nil {
		return ""
	}
	for _, id := range ids {
		e := li.byUUID[id]
		if e == nil {
			continue
		}
		if e.IsCompactSummary {
			return whySummary
		}
		if e.Type == transcript.TypeAttachment {
			var a struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(e.Attachment, &a)
			if why := attachmentReasons[a.Type]; why != "" {
				return why
			}
			if li.carried[id] {
				return whyCarried
			}
		}
		raw, ok := e.Extra["permissionDecision"]
		if !ok {
			raw, ok = e.Unknown()["permissionDecision"]
		}
		if ok {
			var d struct {
				Decision string `json:"decision"`
				By       string `json:"by"`
			}
			if json.Unmarshal(raw, &d) == nil && (d.Decision != "allow" || d.By == "user") {
				return fmt.Sprintf("%s (%s, by %s)", whyPermission, cmp.Or(d.Decision, "unknown"), cmp.Or(d.By, "unknown"))
			}
		}
	}
	return ""
}

// Tool returns the Snip tool, which lets the model remove messages it no
// longer needs through Remove.
func (s *Snip) Tool() tool.Tool { return snipTool{s} }

type snipTool struct{ s *Snip }

var snipSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"ids":{"type":"array","items":{"type":"string"},"minItems":1,"description":"The ids of the messages to remove: the characters after \"id:\" in the [id:…] tag that ends each user message and tool result."},` +
	`"reason":{"type":"string","description":"Why these messages are no longer needed, in a few words."}},` +
	`"required":["ids"],"additionalProperties":false}`)

const snipDescription = `Removes messages you no longer need from the conversation, to free room in the context window without a full compaction. Each user message and tool result ends with a tag such as [id:a1b2c3]; pass those ids. A tool call and its result are removed together. The session's transcript keeps what you remove, but you will not see it again, so remove only what you are sure you will not need: finished explorations, failed attempts, superseded approaches, long output you have already acted on.

Some messages can never be removed: the user's latest request, the current turn, todo lists, plans, permission decisions, instruction files, compaction summaries, and messages the user pinned. Naming one of them removes nothing and says why.`

func (snipTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: SnipToolName, Description: snipDescription, InputSchema: snipSchema}
}

// The Snip tool changes nothing outside the session — no file, process
// or network state, only which messages the model is sent — so it counts
// as read-only, and every permission mode lets it run; what it removes
// stays in the transcript, so it is not destructive; it must see the
// history as the calls before it left it, so it runs alone.
func (snipTool) ReadOnly(json.RawMessage) bool        { return true }
func (snipTool) Destructive(json.RawMessage) bool     { return false }
func (snipTool) ConcurrencySafe(json.RawMessage) bool { return false }

// ForSubagent implements tool.SessionScoped: Snip removes messages of the
// session's own conversation, which a subagent does not have.
func (snipTool) ForSubagent() tool.Tool { return nil }

func (t snipTool) Run(ctx context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	var in struct {
		IDs        []string `json:"ids"`
		MessageIDs []string `json:"message_ids"` // Claude Code's name
		Reason     string   `json:"reason"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Errorf("The input is not valid: %v. Give {\"ids\": [\"a1b2c3\"]}.", err), nil
	}
	ids := append(in.IDs, in.MessageIDs...)
	if len(ids) == 0 {
		return tool.Errorf("No ids given: pass the ids of the messages to remove, as in {\"ids\": [\"a1b2c3\"]}; each user message and tool result ends with its tag [id:…]."), nil
	}
	rm, err := t.s.Remove(ctx, ids, in.Reason)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		var b strings.Builder
		b.WriteString("Nothing was snipped:")
		for _, r := range refused.Refusals {
			fmt.Fprintf(&b, "\n- %s: %s", r.ID, r.Reason)
		}
		b.WriteString("\nCall Snip again without these ids to remove the others.")
		return tool.Errorf("%s", b.String()), nil
	case err != nil:
		return tool.Result{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Snipped %d messages, about %s tokens:", rm.Messages, thousands(rm.Tokens))
	for i, tag := range rm.Named {
		fmt.Fprintf(&b, "\n- %s %s", tag, rm.What[i])
	}
	b.WriteString("\nThey are left out of the conversation from the next request on; the session's transcript keeps them.")
	return tool.Result{Content: []model.Block{model.TextBlock(b.String())}, Detail: map[string]any{"removedUuids": rm.UUIDs, "boundaryUuid": rm.Boundary}}, nil
}
