package compact

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// Triggers of a compaction, as recorded in its boundary.
const (
	TriggerAuto   = "auto"
	TriggerManual = "manual"
)

// MaxFailures is how many auto-compactions may fail in a row before
// auto-compaction stops for the session.
const MaxFailures = 3

// Transcript is what compaction needs of the session's transcript.
type Transcript interface {
	// Leaf is the uuid of the last entry written.
	Leaf() string
	// NewEntry returns a chain entry of the session hanging off parent.
	NewEntry(typ, parent string) transcript.Entry
	// Append writes entries durably and moves the leaf to the last one.
	Append(ctx context.Context, entries ...transcript.Entry) error
	// Reload reads the conversation back as a resume would see it.
	Reload(ctx context.Context) ([]model.Message, error)
	// Path names the transcript for the summary's pointer to it ("" if
	// it has no file).
	Path() string
}

// Config is what a Manager compacts with.
type Config struct {
	Model     model.Model
	ModelName string
	Window    tokens.Window
	// SummaryMaxTokens bounds the summary's length; 0 is 16,000.
	SummaryMaxTokens int
	// SummaryTimeout bounds one summary request; 0 is 5 minutes. A
	// summary that takes longer counts as a failed compaction.
	SummaryTimeout time.Duration
	// Disabled turns auto-compaction off (CAIRN_DISABLE_AUTO_COMPACT);
	// manual compaction and overflow recovery still work.
	Disabled   bool
	Transcript Transcript
	// Survivors returns what must come through every compaction verbatim
	// besides the user's latest requests (instruction files, pins, the
	// todo list, the plan). May be nil.
	Survivors func(ctx context.Context) []engine.Attachment
	// Instructions returns standing compaction instructions (from the
	// project's instruction files). May be nil.
	Instructions func() string
	// PreCompact runs first (hooks); its answer is added to the
	// instructions; an error cancels the compaction. May be nil.
	PreCompact func(ctx context.Context, trigger, instructions string) (string, error)
	// PostCompact runs last with the summary (hooks); the attachments it
	// returns travel with the compacted history. May be nil.
	PostCompact func(ctx context.Context, trigger, summary string) []engine.Attachment
	// CWD is where recently read files are re-read from.
	CWD string
	// Tools are the session's tools: the files their calls worked on
	// (tool.PathToucher) are read again after a compaction. Nil re-reads
	// none.
	Tools *tool.Registry
	// Cleanup, when set, runs after each compaction is written, with the
	// layers' own reset: the session's post-compaction clean-up (caches
	// that may follow files again now that the prefix changes).
	Cleanup func()
	// Compacting, when set, runs once a compaction is under way (its
	// PreCompact hooks passed), before its summary is made, from the
	// session notes or by the model: the session lets go of what it keeps
	// to read its transcript back cheaply (for a long conversation, all
	// of its entries), which the compaction makes history, so the
	// summary's requests do not wait with it in memory. The early
	// compaction from the notes (compactEarly) does not run it; the
	// boundary it writes is the session's sign then.
	Compacting func()
	// Notes, when set, are tried first at an auto-compaction: notes that
	// are not empty are the summary, with no summary request (SPEC SM4).
	Notes Notes
	// EarlyAt, when positive and below the auto-compaction threshold, is
	// where a compaction from the notes alone happens (no summary
	// request): from EarlyAt tokens, each request whose notes cover
	// enough of the history compacts to the notes and what they do not
	// cover. Reading a context costs a tenth of its size on every
	// request, so a small context is cheaper than clearing old results,
	// and the notes keep what the results held. Below the threshold a
	// compaction that the notes cannot make is not tried and not counted
	// as failed; at the threshold the usual compaction runs.
	EarlyAt int64
	Now     func() time.Time
}

// Manager runs compaction for one session. It is not safe for concurrent
// use: the engine's goroutine owns it.
type Manager struct {
	cfg      Config
	layers   []Layer
	failures int
	stopped  bool // the circuit breaker tripped
	dropped  int64
	freed    map[string]int64
	// waited is the time spent in summary requests by the compaction
	// under way.
	waited time.Duration
	// spent is the usage of those summary requests.
	spent model.Usage
	// lastFreed is what the lighter layers took off the last request;
	// lastFloor what that request came to weighed as itself, when that
	// decided (see Prepare). Both are 0 once a compaction or a rewind
	// replaced the history.
	lastFreed, lastFloor int64
	// inEarly is set while an early compaction (Config.EarlyAt) writes.
	inEarly bool
	// status, while an automatic compaction runs, tells the user how far
	// it has got (Prep.Status); nil otherwise.
	status func(string)
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SummaryMaxTokens == 0 {
		cfg.SummaryMaxTokens = 16_000
	}
	if cfg.SummaryTimeout == 0 {
		cfg.SummaryTimeout = 5 * time.Minute
	}
	return &Manager{cfg: cfg, freed: map[string]int64{}}
}

// Layer is one of the lighter layers of the pipeline (snip, micro-
// compaction, collapse): it shrinks what the next request sends, before
// auto-compaction is considered. Layers run lightest first, each told
// what the ones before it freed, so nothing is compacted twice.
type Layer interface {
	// Name names the layer in reports ("snip", "micro", "collapse").
	Name() string
	// Apply shrinks st.Send (a projection: the history stays whole) or,
	// rarely, rewrites the history through st.Prep; it reports the tokens
	// it freed.
	Apply(ctx context.Context, st *State) (freed int64, err error)
}

// State is what the layers of one Prepare share.
type State struct {
	Prep *engine.Prep
	// Send is what the request will carry; layers replace it.
	Send []model.Message
	// Used is the context's size before the layers; Freed what they have
	// freed so far, by layer.
	Used  int64
	Freed map[string]int64
	// Window is the window the thresholds come from.
	Window tokens.Window
	Now    time.Time

	// managed is set when the Manager runs the layers; later holds what
	// a layer left for the Manager to do once it knows the request goes
	// out without a compaction (see Snip.Apply).
	managed bool
	later   []func(*State)
	// deferMarks is set when the layers after the Markers ignore their
	// tags, so a Marker may leave them to the Manager; unmarked is set
	// when one did: Send lacks its tags (see Snip.Apply), which mgr adds
	// once it knows the request goes out as it is.
	deferMarks, unmarked bool
	mgr                  *Manager
	// last is set from when the last layer runs; projected, when set, is
	// what it left for the Manager to apply to Send (see Micro.Apply)
	// once it knows the request goes out as it is, as the Markers leave
	// their tags, and projectedWeight what that changes Send's floor by.
	last            bool
	projected       func([]model.Message) []model.Message
	projectedWeight int64
	// weighed is the Send sendFloor last weighed (until settle applies
	// what was left) and base what it came to before the projection:
	// micro weighs the request, and the Manager the same one again once
	// the layers are done.
	weighed []model.Message
	base    int64
	// floor is what the request comes to by the estimate (sendFloor:
	// Send, with what the layers left to the Manager counted as done),
	// set once the layers are done when the count is under the threshold
	// and the server does not clear results (see Prepare): Remaining is
	// never less. 0 otherwise.
	floor int64
}

// markIndifferent is a layer that reads and changes only what the
// Markers' tags leave alone (tool results), so it works the same on
// messages tagged or not.
type markIndifferent interface{ indifferentToMarks() }

// settle applies to Send what the layers left to the Manager: the last
// layer's projection, the Markers' tags.
func (st *State) settle() {
	st.Send = st.owed().apply(st.Send)
	st.projected, st.projectedWeight, st.unmarked, st.weighed = nil, 0, false, nil
}

// owed is what the layers left to the Manager, for a summary to apply to
// each message of Send it reads.
func (st *State) owed() owed {
	o := owed{project: st.projected}
	if st.unmarked {
		o.mark = st.mgr.mark
	}
	return o
}

// sendFloor is what Send comes to by tokens.EstimateFloor with what the
// layers left to the Manager counted as if it were done. The Markers'
// weights are each weighed on untagged messages: exact for one Marker
// (snip's tags, the only one), or for several whose tags do not change
// where the others go.
func (st *State) sendFloor() int64 {
	if st.weighed == nil || !slicesSame(st.weighed, st.Send) {
		n := tokens.EstimateFloor(st.Send)
		if st.unmarked {
			for _, l := range st.mgr.layers {
				if mk, ok := l.(Marker); ok {
					n += mk.MarkWeight(st.Send)
				}
			}
		}
		st.weighed, st.base = st.Send, n
	}
	return st.base + st.projectedWeight
}

// runLater does what the layers left for a request sent as it is.
func (st *State) runLater() {
	for _, f := range st.later {
		f(st)
	}
	st.later = nil
}

// Remaining is the context's size after the layers so far: what was
// used less what they freed, and, once they are done, at least what the
// request they leave comes to by the estimate.
func (st *State) Remaining() int64 {
	n := st.Used
	for _, f := range st.Freed {
		n -= f
	}
	return max(n, st.floor)
}

// Projected is what the trigger compares with its threshold for a
// context of used tokens: used less what the lighter layers took off the
// last request, and no less than that request weighed as itself when
// that decided (after a compaction or a rewind, used alone). The context
// meter shows it, so the display and the trigger agree.
func (m *Manager) Projected(used int64) int64 { return max(0, used-m.lastFreed, m.lastFloor) }

// Window is the window the thresholds come from: the configured one, or
// the smaller one a server stated in a prompt-too-long error.
func (m *Manager) Window() tokens.Window { return m.cfg.Window }

// AddLayer adds a layer after the ones already added.
func (m *Manager) AddLayer(l Layer) { m.layers = append(m.layers, l) }

// Resetter is a layer whose state a compaction makes obsolete (the
// post-compaction cleanup of SPEC C4): Reset is called after each one.
type Resetter interface{ Reset() }

// Restorer is a layer whose state a transcript's chain records (what
// micro-compaction cleared, what collapse folded): Restore takes it from
// the chain of a conversation that replaces the one the layer followed.
type Restorer interface {
	Restore(conv *transcript.Conversation)
}

// Restore gives every layer that keeps state the state conv's chain
// records: after a rewind, the live session then sends what a resume of
// the new chain would.
func (m *Manager) Restore(conv *transcript.Conversation) {
	m.lastFreed, m.lastFloor = 0, 0 // the old chain's
	for _, l := range m.layers {
		if r, ok := l.(Restorer); ok {
			r.Restore(conv)
		}
	}
}

func (m *Manager) resetLayers() {
	for _, l := range m.layers {
		if r, ok := l.(Resetter); ok {
			r.Reset()
		}
	}
	if m.cfg.Cleanup != nil {
		m.cfg.Cleanup()
	}
}

// Marker is a layer that marks every message it sends (snip's ids): a
// history a compaction has just made is marked before it is sent too, so
// the first request after a compaction starts the prefix the next ones
// repeat. Mark only adds text, so marked messages never weigh less than
// unmarked ones (the summary weighs them unmarked first).
type Marker interface {
	Mark(msgs []model.Message) []model.Message
	// MarkWeight is what Mark adds to msgs as tokens.EstimateFloor
	// counts it, found without marking them: EstimateFloor(Mark(msgs))
	// is EstimateFloor(msgs) + MarkWeight(msgs).
	MarkWeight(msgs []model.Message) int64
}

// marksDeferrable reports whether every layer after the first Marker is
// a Marker or indifferent to their tags, so the tags may be added once
// the layers are done.
func (m *Manager) marksDeferrable() bool {
	seen := false
	for _, l := range m.layers {
		_, marker := l.(Marker)
		_, indifferent := l.(markIndifferent)
		if seen && !marker && !indifferent {
			return false
		}
		seen = seen || marker
	}
	return true
}

func (m *Manager) mark(msgs []model.Message) []model.Message {
	for _, l := range m.layers {
		if mk, ok := l.(Marker); ok {
			msgs = mk.Mark(msgs)
		}
	}
	return msgs
}

// Freed reports, by layer, the tokens each layer freed over the session
// (auto-compaction's under "auto").
func (m *Manager) Freed() map[string]int64 { return maps.Clone(m.freed) }

// Prepare is the engine's Prepare hook: the lighter layers shrink the
// request first, then auto-compaction runs when the context is still at
// the threshold or the model refused the request as too long.
func (m *Manager) Prepare(ctx context.Context, p *engine.Prep) error {
	overflow := p.Overflow != nil
	if overflow && p.Overflow.Limit > 0 && int64(p.Overflow.Limit) < m.cfg.Window.Size {
		// The server's window is smaller than the one assumed (a proxy, a
		// smaller deployment): believe the server from now on.
		p.Notices = append(p.Notices, fmt.Sprintf("the model's context window is %d tokens, not the %d assumed; compacting for %d", p.Overflow.Limit, m.cfg.Window.Size, p.Overflow.Limit))
		m.cfg.Window.Size = int64(p.Overflow.Limit)
	}
	st := &State{Prep: p, Send: p.History, Used: p.Used, Freed: map[string]int64{}, Window: m.cfg.Window, Now: m.cfg.Now(), managed: true, deferMarks: m.marksDeferrable(), mgr: m}
	for i, l := range m.layers {
		history, send := p.History, st.Send
		st.last = i == len(m.layers)-1
		freed, err := l.Apply(ctx, st)
		if err != nil {
			return fmt.Errorf("%s: %w", l.Name(), err)
		}
		st.Freed[l.Name()] += freed
		m.freed[l.Name()] += freed
		if !slicesSame(p.History, history) && slicesSame(st.Send, send) {
			// The layer rewrote the history and left what is sent alone:
			// what it sends follows the new history.
			st.Send = p.History
		}
	}
	w := m.cfg.Window
	if st.Remaining() < w.AutoCompactAt() && p.ContextManagement == nil {
		// Used is the last response's usage, and what a layer frees is
		// an estimate: when the usage a transcript recorded is lower than
		// the estimate of its content (another tool's count, a generator's),
		// the difference can fall far below the request that goes out. A
		// resumed 30 MB transcript with no compaction came to 70K tokens
		// by it and sent 1.9 MB, a request far over the window. What is
		// sent is counted as itself too (a low estimate:
		// tokens.EstimateFloor), and the larger of the two decides
		// whether to compact and is the size compacted from. Not when the
		// server clears results (ContextManagement): the request then
		// carries results the server takes out before it counts.
		st.floor = st.sendFloor()
	}
	// The larger of the usage and the floor is the context compacted
	// from (a compaction measures its gain against it).
	pre := max(p.Used, st.floor)
	m.lastFreed, m.lastFloor = max(0, st.Used-st.Remaining()), 0
	if st.floor > 0 && st.Remaining() == st.floor {
		m.lastFloor = st.floor // the floor decided
	}
	if !overflow && (m.cfg.Disabled || st.Remaining() < w.AutoCompactAt()) {
		st.settle()
		st.runLater()
	}
	if !slicesSame(st.Send, p.History) {
		p.Send = st.Send
	}
	if !overflow && (m.cfg.Disabled || st.Remaining() < w.AutoCompactAt()) {
		if m.cfg.Disabled || m.stopped || !m.early(st.Remaining()) {
			return nil
		}
		res, err := m.compactEarly(ctx, p.History, p.System, p.Tools, pre)
		if err != nil || res == nil {
			if err != nil && !errors.Is(err, errNotesBehind) {
				p.Notices = append(p.Notices, fmt.Sprintf("compaction from the session notes skipped: %v", err))
			}
			return nil
		}
		p.History, p.Replaced, p.Compaction, p.Send = res.history, true, res.report, m.mark(res.history)
		m.freed["notes"] += max(0, res.report.PreTokens-res.report.PostTokens)
		return nil
	}
	if p.Status != nil {
		p.Status("compacting")
		m.status = p.Status
		defer func() { m.status = nil; p.Status("") }()
	}
	var res *result
	err := errBreaker
	if !m.stopped || overflow {
		res, err = m.compact(ctx, p.History, st.Send, st.owed(), p.System, p.Tools, TriggerAuto, "", pre)
	}
	if res == nil && err != nil && ctx.Err() != nil {
		// Cancelled (the user interrupted the turn): nothing was written,
		// and nothing is — not the last resort either, which would drop
		// the history for a summary that was only stopped.
		return fmt.Errorf("compaction stopped: %w", context.Cause(ctx))
	}
	if res != nil {
		// Written to the transcript, so the history follows it even when
		// the compaction counts as failed.
		p.History, p.Replaced, p.Compaction, p.Send = res.history, true, res.report, m.mark(res.history)
		m.freed["auto"] += max(0, res.report.PreTokens-res.report.PostTokens)
	}
	if err != nil && err != errBreaker {
		m.failures++
		if m.failures >= MaxFailures && !m.stopped {
			m.stopped = true
			p.Notices = append(p.Notices, fmt.Sprintf("auto-compaction failed %d times in a row and is off for this session (%v); use /compact to try again", m.failures, err))
		} else {
			p.Notices = append(p.Notices, fmt.Sprintf("auto-compaction failed: %v", err))
		}
	}
	if err != nil {
		remaining := st.Remaining()
		if res != nil {
			remaining = res.report.PostTokens
		}
		// Estimates run low (about 4 bytes a token; code tokenises denser),
		// so a request within 15% of the window is treated as not fitting.
		if !overflow && remaining < w.Effective()*85/100 {
			// The request still fits; the next one will try again. Unless
			// a summary replaced it, it goes out as the layers left it.
			if res == nil {
				st.settle()
				if st.runLater(); !slicesSame(st.Send, p.History) {
					p.Send = st.Send
				}
			}
			return nil
		}
		// The request does not fit and could not be summarised: drop the
		// oldest history rather than stop the session.
		res, err = m.truncate(ctx, p.History, p.System, p.Tools, pre)
		if err != nil {
			return err
		}
		p.History, p.Replaced, p.Compaction, p.Send = res.history, true, res.report, m.mark(res.history)
		return nil
	}
	m.failures = 0
	return nil
}

// early reports whether a context of used tokens is due for a compaction
// from the notes (Config.EarlyAt).
func (m *Manager) early(used int64) bool {
	return m.cfg.EarlyAt > 0 && m.cfg.Notes != nil && used >= m.cfg.EarlyAt && m.cfg.EarlyAt < m.cfg.Window.AutoCompactAt()
}

// errNotesBehind: the notes do not cover enough of the history yet for a
// compaction from them; the next request tries again.
var errNotesBehind = errors.New("the session notes do not cover enough of the conversation yet")

// compactEarly compacts history to the notes and the messages they do not
// cover (Config.EarlyAt). It returns errNotesBehind, writing nothing, when
// the notes are empty, cover an unknown point, or leave more than 70% of
// EarlyAt uncovered.
func (m *Manager) compactEarly(ctx context.Context, history []model.Message, system []model.SystemBlock, tools []model.ToolSpec, used int64) (*result, error) {
	start := m.cfg.Now()
	m.waited, m.spent = 0, model.Usage{}
	if len(history) < 2 {
		return nil, errNotesBehind
	}
	summary, keep, ok := m.fromNotesEarly(ctx, history, system, tools)
	if !ok {
		return nil, errNotesBehind
	}
	if m.cfg.PreCompact != nil {
		if _, err := m.cfg.PreCompact(ctx, TriggerAuto, ""); err != nil {
			return nil, fmt.Errorf("PreCompact hook: %w", err)
		}
	}
	var after []engine.Attachment
	if m.cfg.PostCompact != nil {
		after = m.cfg.PostCompact(ctx, TriggerAuto, summary)
	}
	m.inEarly = true
	res, err := m.write(ctx, history, keep, summary, TriggerAuto, used, start, after, system, tools, true)
	m.inEarly = false
	if err != nil {
		return nil, err
	}
	res.report.Summary += " (early: the session notes were the summary, no summary request)"
	return res, nil
}

// slicesSame reports whether a and b are the same slice (not merely equal).
func slicesSame(a, b []model.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Compact compacts history now (a manual /compact, or a library call),
// following instructions when given.
func (m *Manager) Compact(ctx context.Context, history []model.Message, system []model.SystemBlock, tools []model.ToolSpec, instructions string) ([]model.Message, *engine.Compaction, error) {
	used := tokens.EstimateRequest(system, tools, history)
	// Marked as requests were, so the summary request reads them from the cache.
	res, err := m.compact(ctx, history, m.mark(history), owed{}, system, tools, TriggerManual, instructions, used)
	if err != nil {
		if res != nil {
			return res.history, res.report, err
		}
		return nil, nil, err
	}
	m.failures, m.stopped = 0, false
	return res.history, res.report, nil
}

type result struct {
	history []model.Message
	report  *engine.Compaction
}

// ErrNothingToCompact is returned when a history is too short to compact.
var ErrNothingToCompact = errors.New("nothing to compact yet")

// compact summarises history. sent is what the conversation's last
// request carried (history after the lighter layers' projection): the
// summary request repeats it, so its whole prefix is read from the cache;
// what is kept and measured is chosen on the full history.
//
// sent lacks what owe adds (the Markers' tags, the last layer's
// projection), which the summary adds to each message it reads.
func (m *Manager) compact(ctx context.Context, history, sent []model.Message, owe owed, system []model.SystemBlock, tools []model.ToolSpec, trigger, instructions string, used int64) (*result, error) {
	start := m.cfg.Now()
	m.waited, m.spent = 0, model.Usage{}
	if len(history) < 2 {
		return nil, ErrNothingToCompact
	}
	if m.cfg.Instructions != nil {
		instructions = joinNonEmpty(m.cfg.Instructions(), instructions)
	}
	if m.cfg.PreCompact != nil {
		extra, err := m.cfg.PreCompact(ctx, trigger, instructions)
		if err != nil {
			return nil, fmt.Errorf("PreCompact hook: %w", err)
		}
		instructions = joinNonEmpty(instructions, extra)
	}
	if m.cfg.Compacting != nil {
		m.cfg.Compacting()
	}
	keep := preservedStart(history, m.cfg.Window)
	summary, keep, fromNotes := m.fromNotes(ctx, history, keep, trigger, system, tools)
	var err error
	if !fromNotes {
		summary, err = m.summarize(ctx, sent, owe, keep < len(history), system, tools, instructions)
	}
	if err != nil {
		return nil, err
	}
	var after []engine.Attachment
	if m.cfg.PostCompact != nil {
		after = m.cfg.PostCompact(ctx, trigger, summary)
	}
	res, err := m.write(ctx, history, keep, summary, trigger, used, start, after, system, tools, true)
	if err != nil {
		return nil, err
	}
	if fromNotes {
		res.report.Summary += " (the session notes were the summary: no summary request)"
	}
	// A compaction that does not free a real share of the window would
	// only trigger again at once; weighed as the trigger weighs a
	// request too (a kept tail of many small blocks comes to more than
	// its content).
	post := max(res.report.PostTokens, tokens.EstimateFloor(m.mark(res.history)))
	if limit := m.cfg.Window.AutoCompactAt() * 8 / 10; post > limit {
		return res, fmt.Errorf("the compacted context still holds %d tokens, over %d: %w", post, limit, errNotEnough)
	}
	return res, nil
}

var errNotEnough = errors.New("compaction did not free enough of the window")

// errBreaker marks an auto-compaction not tried: the breaker is open.
var errBreaker = errors.New("auto-compaction is off for this session")

func joinNonEmpty(parts ...string) string {
	var out string
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "\n\n"
		}
		out += p
	}
	return out
}
