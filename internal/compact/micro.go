package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// ClearedText replaces the content of a tool result that micro-compaction
// cleared.
const ClearedText = "[Old tool result content cleared]"

// Triggers of a micro-compaction, as recorded in its boundary.
const (
	// MicroTime: the prompt cache went cold while the user was away, so
	// rewriting the prefix costs nothing more.
	MicroTime = "time"
	// MicroCount: too many live results of compactable tools.
	MicroCount = "count"
)

// Anthropic's server-side clearing of old tool results (context editing).
const (
	ContextManagementBeta = "context-management-2025-06-27"
	ClearToolUsesEdit     = "clear_tool_uses_20250919"
)

// Compactable returns the names of the tools in reg whose results can be
// obtained again (tool.Reobtainable), so an old one may be cleared.
func Compactable(reg *tool.Registry) []string {
	var out []string
	for _, t := range reg.Tools() {
		if tool.IsReobtainable(t) {
			out = append(out, t.Spec().Name)
		}
	}
	return out
}

// Reference defaults of micro-compaction (seed 000 §2.1).
const (
	DefaultKeepRecent   = 5
	DefaultMicroCount   = 30
	DefaultMicroGap     = 60 * time.Minute
	DefaultClearAtLeast = 10_000
)

// MicroConfig configures micro-compaction. The zero value is the defaults,
// cleared client-side.
type MicroConfig struct {
	// KeepRecent is how many of the newest compactable results are never
	// cleared; 0 is DefaultKeepRecent, and at least 1 is always kept.
	KeepRecent int
	// Count is the count trigger: this many live (uncleared) compactable
	// results clear all but the newest KeepRecent. 0 is DefaultMicroCount.
	Count int
	// Gap is the time trigger: a request this long after the previous one
	// finds the prompt cache cold and clears all but the newest
	// KeepRecent. 0 is DefaultMicroGap.
	Gap time.Duration
	// ClearAtLeast is the fewest tokens a count-triggered clearing must
	// free, so the prefix changes rarely and for a worthwhile gain (also
	// sent as the server's clear_at_least). 0 is DefaultClearAtLeast;
	// negative is none.
	ClearAtLeast int64
	// ServerSide is set when the provider clears old tool results itself
	// (Anthropic context management): while the cache is warm the prefix
	// is left byte for byte as it was and each request asks the server to
	// clear; client-side clearing happens only when the cache is cold.
	ServerSide bool
	// ServerTrigger is the server's trigger in input tokens; 0 is 100,000
	// or three quarters of the auto-compaction threshold when lower.
	ServerTrigger int64
	// Tools name the compactable tools (Compactable lists a registry's);
	// results of other tools are never cleared, except those Cleared
	// names.
	Tools []string
	// Disabled turns micro-compaction off.
	Disabled bool
	// Transcript records each clearing (a microcompact_boundary line) so
	// a resumed session clears the same results. May be nil.
	Transcript Transcript
	// Cleared and Since continue a resumed session: the tool_use ids its
	// transcript records as cleared (transcript.Conversation.Cleared) and
	// the time of its last assistant message.
	Cleared map[string]bool
	Since   time.Time
}

// Micro is the micro-compaction layer (SPEC C2): old results of
// compactable tools lose their content to ClearedText while every
// tool_use/tool_result pair stays. It clears in batches — when the cache
// is cold anyway (the time trigger) or when enough live results have piled
// up (the count trigger) — and a result once cleared stays cleared in
// every later request and after a resume, so the prefix the prompt cache
// holds changes only at a batch.
//
// A Micro belongs to one Manager and is not safe for concurrent use.
type Micro struct {
	cfg     MicroConfig
	tools   map[string]bool
	cleared map[string]bool
	// last is when the previous request was prepared (or, resumed, the
	// last assistant message was written); zero before any.
	last time.Time
}

// NewMicro returns the micro-compaction layer.
func NewMicro(cfg MicroConfig) *Micro {
	if cfg.KeepRecent <= 0 {
		cfg.KeepRecent = DefaultKeepRecent
	}
	if cfg.Count <= 0 {
		cfg.Count = DefaultMicroCount
	}
	if cfg.Gap <= 0 {
		cfg.Gap = DefaultMicroGap
	}
	switch {
	case cfg.ClearAtLeast == 0:
		cfg.ClearAtLeast = DefaultClearAtLeast
	case cfg.ClearAtLeast < 0:
		cfg.ClearAtLeast = 0
	}
	m := &Micro{cfg: cfg, tools: map[string]bool{}, cleared: map[string]bool{}, last: cfg.Since}
	for _, t := range cfg.Tools {
		m.tools[t] = true
	}
	for id, ok := range cfg.Cleared {
		if ok {
			m.cleared[id] = true
		}
	}
	return m
}

// Name implements Layer.
func (m *Micro) Name() string { return "micro" }

// indifferentToMarks: Micro reads and clears tool results only, which
// snip's tags leave where they are.
func (m *Micro) indifferentToMarks() {}

// Reset forgets what was cleared: after a compaction (SPEC C4's
// post-compaction cleanup) the history starts afresh, and a resume reads
// no clearing from before the compaction's boundary. The set is a new
// one: a clearing left to the Manager keeps the set it was decided with
// (see Apply).
func (m *Micro) Reset() { m.cleared = map[string]bool{} }

// Restore implements Restorer: the results cleared so far are the ones
// conv's chain records as cleared.
func (m *Micro) Restore(conv *transcript.Conversation) {
	m.cleared = make(map[string]bool, len(conv.Cleared)) // a new set, as Reset's
	for id, ok := range conv.Cleared {
		if ok {
			m.cleared[id] = true
		}
	}
}

// Cleared returns the tool_use ids cleared so far, sorted.
func (m *Micro) Cleared() []string {
	out := make([]string, 0, len(m.cleared))
	for id := range m.cleared {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// compactable is one result of a compactable tool in the request.
type compactable struct {
	id        string
	msg, blk  int
	block     *model.Block
	isCleared bool // its content is the placeholder already
}

// clearedJSON is a cleared result's content as the request carries it.
var clearedJSON = jsonw.String(ClearedText)

// Apply implements Layer. It returns the tokens freed by results it
// cleared for this request; results cleared before were already out of
// the context the last response reported. A clearing is recorded before
// the request goes out; when the request is over the auto-compaction
// threshold even so, the Manager's compaction makes the record moot, and
// it is written only if the request goes out without one. Over the
// threshold is also the request weighed as itself (State.sendFloor, as
// the Manager weighs it) when the server does not clear results. As the
// last layer, it leaves the clearing itself to the Manager (see
// State.projected).
func (m *Micro) Apply(ctx context.Context, st *State) (int64, error) {
	cold := !m.last.IsZero() && st.Now.Sub(m.last) >= m.cfg.Gap
	m.last = st.Now
	if m.cfg.Disabled {
		return 0, nil
	}
	results := m.collect(st.Send)
	var freed int64
	if trigger, batch, saved := m.batch(results, cold); trigger != "" {
		pre := st.Remaining()
		over := pre-saved >= st.Window.AutoCompactAt()
		if st.managed && !over && !m.cfg.ServerSide {
			// The Manager also weighs the request as itself (see
			// State.floor): over by that, it compacts all the same.
			over = st.sendFloor()-saved >= st.Window.AutoCompactAt()
		}
		switch {
		case st.managed && over:
			// Over the threshold even so, the Manager compacts, and its
			// boundary makes the clearing's moot: the clearing is recorded
			// only if the request goes out as it is after all.
			m.clear(batch)
			freed = saved
			st.later = append(st.later, func(st *State) {
				if err := m.record(ctx, trigger, pre, saved, batch); err != nil {
					st.Prep.Notices = append(st.Prep.Notices, fmt.Sprintf("micro-compaction not recorded (a resume may send the results it cleared): %v", err))
				}
			})
		default:
			if err := m.record(ctx, trigger, pre, saved, batch); err != nil {
				st.Prep.Notices = append(st.Prep.Notices, fmt.Sprintf("micro-compaction skipped: %v", err))
				break
			}
			m.clear(batch)
			freed = saved
		}
	}
	if st.managed && st.last {
		// Nothing after this layer reads what is sent: the Manager
		// clears the results in it once it knows the request goes out as
		// it is, and a summary as it reads each message. A resumed long
		// session's first request, over the threshold, is a summary that
		// reads the first part of the history only.
		if w, ok := m.weighProjection(results); ok {
			// The results cleared are those of now: a compaction's
			// cleanup (Reset) replaces the set before a request that goes
			// out as it is after all (the compaction's read back failed).
			send, cleared := st.Send, m.cleared
			st.projected = func(msgs []model.Message) []model.Message {
				if slicesSame(msgs, send) {
					return project(msgs, results, cleared) // the whole request
				}
				return projectEach(msgs, cleared)
			}
			st.projectedWeight = w
		}
	} else {
		st.Send = project(st.Send, results, m.cleared)
	}
	if m.cfg.ServerSide && len(results) > 0 {
		m.askServer(st)
	}
	return freed, nil
}

// clear adds the ids to those cleared.
func (m *Micro) clear(ids []string) {
	if len(m.cleared) == 0 {
		m.cleared = make(map[string]bool, len(ids)) // a resume's first batch clears thousands
	}
	for _, id := range ids {
		m.cleared[id] = true
	}
}

// collect finds the results of compactable tools in msgs, oldest first.
func (m *Micro) collect(msgs []model.Message) []compactable {
	var names toolNames
	var out []compactable
	for i := range msgs {
		content := msgs[i].Content
		for j := range content {
			b := &content[j] // not a copy: most blocks are not results
			if b.Type == model.BlockToolResult && (len(m.cleared) > 0 && m.cleared[b.ToolUseID] || m.tools[names.of(msgs, i, j, b.ToolUseID)]) {
				out = append(out, compactable{
					id: b.ToolUseID, msg: i, blk: j, block: b,
					isCleared: bytes.Equal(b.Content, clearedJSON),
				})
			}
		}
	}
	return out
}

// toolNames finds the tool a result answers: the name of the latest
// tool_use with its id before it. The call is almost always in the
// message just before the result's; for the others a map of the calls
// before that message is kept, built once as far as needed.
type toolNames struct {
	names  map[string]string
	mapped int // names holds the calls of msgs[:mapped]
}

// of returns the name of the latest call with id before msgs[i].Content[j].
func (t *toolNames) of(msgs []model.Message, i, j int, id string) string {
	for k := j - 1; k >= 0; k-- {
		if b := &msgs[i].Content[k]; b.Type == model.BlockToolUse && b.ID == id {
			return b.Name
		}
	}
	if i > 0 {
		content := msgs[i-1].Content
		for k := len(content) - 1; k >= 0; k-- {
			if b := &content[k]; b.Type == model.BlockToolUse && b.ID == id {
				return b.Name
			}
		}
	}
	if t.names == nil {
		t.names = map[string]string{}
	}
	for ; t.mapped < i-1; t.mapped++ {
		for _, b := range msgs[t.mapped].Content {
			if b.Type == model.BlockToolUse {
				t.names[b.ID] = b.Name
			}
		}
	}
	return t.names[id]
}

// batch decides what this request clears: nothing, or every live result
// but the newest KeepRecent, when a trigger fires. It returns the trigger,
// the ids, and the tokens they free.
func (m *Micro) batch(results []compactable, cold bool) (string, []string, int64) {
	live := 0
	for _, r := range results {
		if !r.isCleared && !m.cleared[r.id] {
			live++
		}
	}
	trigger := ""
	switch {
	case cold:
		trigger = MicroTime
	case !m.cfg.ServerSide && live >= m.cfg.Count:
		trigger = MicroCount
	default:
		return "", nil, 0 // the usual case: nothing is measured
	}
	var ids []string
	var saved int64
	placeholder := tokens.Estimate(ClearedText)
	for _, r := range results[:max(0, len(results)-m.cfg.KeepRecent)] {
		if r.isCleared || m.cleared[r.id] {
			continue
		}
		ids = append(ids, r.id)
		saved += max(0, tokens.EstimateBlock(*r.block)-placeholder)
	}
	if len(ids) == 0 || saved == 0 || (trigger == MicroCount && saved < m.cfg.ClearAtLeast) {
		return "", nil, 0
	}
	return trigger, ids, saved
}

// record writes the clearing to the transcript, so a resume repeats it.
func (m *Micro) record(ctx context.Context, trigger string, pre, saved int64, ids []string) error {
	md := transcript.MicrocompactMetadata{Trigger: trigger, PreTokens: pre, TokensSaved: saved, CompactedToolIDs: ids}
	if err := recordSystem(ctx, m.cfg.Transcript, transcript.SubtypeMicrocompactBoundary, "Context microcompacted", "microcompactMetadata", md); err != nil {
		return fmt.Errorf("record the clearing: %w", err)
	}
	return nil
}

// recordSystem appends an info system line of the given subtype after the
// leaf, its metadata under key; a nil transcript records nothing.
func recordSystem(ctx context.Context, t Transcript, subtype, content, key string, metadata any) error {
	if t == nil {
		return nil
	}
	md, err := jsonw.Marshal(metadata)
	if err != nil {
		return err
	}
	e := t.NewEntry(transcript.TypeSystem, t.Leaf())
	e.Subtype, e.Content, e.Level = subtype, jsonw.String(content), "info"
	e.Extra = map[string]json.RawMessage{key: md}
	return t.Append(ctx, e)
}

// project returns msgs with the content of every result of results that
// cleared holds replaced, the messages it changes copied (msgs itself is
// left as it is).
func project(msgs []model.Message, results []compactable, cleared map[string]bool) []model.Message {
	// One allocation holds the copied messages' blocks.
	n, last := 0, -1
	for _, r := range results {
		if !r.isCleared && cleared[r.id] && r.msg != last {
			n += len(msgs[r.msg].Content)
			last = r.msg
		}
	}
	if n == 0 {
		return msgs
	}
	out := slices.Clone(msgs)
	pool := make([]model.Block, 0, n)
	last = -1
	for _, r := range results {
		if r.isCleared || !cleared[r.id] {
			continue
		}
		if r.msg != last {
			start := len(pool)
			pool = append(pool, msgs[r.msg].Content...)
			out[r.msg].Content = pool[start:len(pool):len(pool)]
			last = r.msg
		}
		out[r.msg].Content[r.blk].Content = clearedJSON
	}
	return out
}

// weighProjection returns what project would change the floor
// (tokens.EstimateFloor) of the messages results were collected from by;
// ok is false when it would change nothing.
func (m *Micro) weighProjection(results []compactable) (int64, bool) {
	var w int64
	ok := false
	for _, r := range results {
		if r.isCleared || !m.cleared[r.id] {
			continue
		}
		cleared := *r.block
		cleared.Content = clearedJSON
		w += tokens.EstimateBlock(cleared) - tokens.EstimateBlock(*r.block)
		ok = true
	}
	return w, ok
}

// projectEach is project for messages read one at a time: a result is
// cleared by its id alone (project's results also tell which tools are
// compactable, which only choosing a batch needs).
func projectEach(msgs []model.Message, cleared map[string]bool) []model.Message {
	var out []model.Message
	for i := range msgs {
		copied := false
		for j, b := range msgs[i].Content {
			if b.Type != model.BlockToolResult || !cleared[b.ToolUseID] || bytes.Equal(b.Content, clearedJSON) {
				continue
			}
			if out == nil {
				out = slices.Clone(msgs)
			}
			if !copied {
				out[i].Content, copied = slices.Clone(msgs[i].Content), true
			}
			out[i].Content[j].Content = clearedJSON
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// askServer puts the clear_tool_uses edit on the request: the server
// clears what the client leaves, and the prefix bytes stay as they were.
func (m *Micro) askServer(st *State) {
	p := st.Prep
	trigger := m.cfg.ServerTrigger
	if trigger <= 0 {
		trigger = max(1, min(100_000, st.Window.AutoCompactAt()*3/4))
	}
	var exclude []string
	for _, t := range p.Tools {
		if !m.tools[t.Name] {
			exclude = append(exclude, t.Name)
		}
	}
	threshold := func(typ string, v int64) []byte {
		var o jsonw.Object
		o.Str("type", typ)
		o.Raw("value", strconv.AppendInt(nil, v, 10))
		return o.Bytes()
	}
	var edit jsonw.Object
	edit.Str("type", ClearToolUsesEdit)
	edit.Raw("trigger", threshold("input_tokens", trigger))
	edit.Raw("keep", threshold("tool_uses", int64(m.cfg.KeepRecent)))
	if m.cfg.ClearAtLeast > 0 {
		edit.Raw("clear_at_least", threshold("input_tokens", m.cfg.ClearAtLeast))
	}
	if len(exclude) > 0 {
		names, _ := jsonw.Marshal(exclude)
		edit.Raw("exclude_tools", names)
	}
	var cm jsonw.Object
	cm.Raw("edits", append(append([]byte{'['}, edit.Bytes()...), ']'))
	p.ContextManagement = cm.Bytes()
	if !slices.Contains(p.Betas, ContextManagementBeta) {
		p.Betas = append(p.Betas, ContextManagementBeta)
	}
}
