package compact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// Reference defaults of context collapse.
const (
	// DefaultCollapseStageAt is the share of the auto-compaction threshold
	// from which spans are folded in the background.
	DefaultCollapseStageAt = 0.80
	// DefaultCollapseCommitAt is the share of the auto-compaction threshold
	// from which the folds that are ready are committed, all at once.
	DefaultCollapseCommitAt = 0.90
	// DefaultCollapseBlockAt is the share of the effective window from
	// which a request waits for its folds (or folds synchronously); never
	// later than the auto-compaction threshold.
	DefaultCollapseBlockAt = 0.95
	// DefaultCollapseKeepRecent is the share of the effective window the
	// newest messages keep verbatim.
	DefaultCollapseKeepRecent = 0.25
	// DefaultCollapseKeepPrompts is how many of the user's latest prompts
	// are never folded.
	DefaultCollapseKeepPrompts = 3
	// DefaultFoldTimeout bounds one fold request, and how long a blocking
	// commit waits for a fold under way.
	DefaultFoldTimeout = 2 * time.Minute
)

// Bounds of the folds themselves.
const (
	// collapseTarget is the share of the auto-compaction threshold a
	// staging aims to bring the context down to.
	collapseTarget = 0.5
	// maxFoldSpans is the most spans one fold request summarises.
	maxFoldSpans = 12
	// foldTokensPerSpan is the output allowed for each span's summary.
	foldTokensPerSpan = 512
	// minSpanTokens is the smallest span worth a summary.
	minSpanTokens = 400
)

// Triggers of a collapse commit, as recorded in its line.
const (
	// CollapseStaged: folds made in the background, committed at the
	// commit threshold.
	CollapseStaged = "staged"
	// CollapseBlocking: the context reached the blocking threshold and the
	// request waited for its folds.
	CollapseBlocking = "blocking"
)

// CollapseConfig configures context collapse.
type CollapseConfig struct {
	// Model and ModelName fold spans. The fold request then repeats the
	// conversation's last request and adds its instruction at the end, so
	// all of it but the instruction is read from the prompt cache.
	Model     model.Model
	ModelName string
	// SmallModel and SmallModelName, when set, fold spans instead: a
	// cheaper model, which is sent the spans as text (its cache does not
	// hold the conversation).
	SmallModel     model.Model
	SmallModelName string
	// Transcript records each commit (a context_collapse_commit line), so
	// a resume folds the same spans. If it implements Lines, the lines
	// tell what each message is made of (permission decisions, the
	// attachments of instructions, todos and plans).
	Transcript Transcript
	// Pins are the session's pins, which are never folded. May be nil.
	Pins *Pins
	// StageAt and CommitAt are shares of the auto-compaction threshold;
	// BlockAt of the effective window. 0 is the default of each.
	StageAt, CommitAt, BlockAt float64
	// KeepRecent is the share of the effective window the newest messages
	// keep verbatim; 0 is DefaultCollapseKeepRecent.
	KeepRecent float64
	// KeepPrompts is how many of the user's latest prompts are never
	// folded; 0 is DefaultCollapseKeepPrompts.
	KeepPrompts int
	// SpanTokens is the largest span one summary replaces; 0 is a tenth
	// of the effective window (at least 2,000).
	SpanTokens int64
	// Timeout bounds one fold request and a blocking commit's wait; 0 is
	// DefaultFoldTimeout.
	Timeout time.Duration
	// Collapsed continues a resumed session: the spans its transcript
	// records as folded (transcript.Conversation.Collapsed).
	Collapsed []transcript.CollapseSpan
	// Notify, when set, hears what happens in the background; it is called
	// without any lock held, from the engine's goroutine or a fold's.
	Notify func(CollapseEvent)
	// Disabled turns context collapse off.
	Disabled bool
}

// CollapseEvent reports one step of context collapse.
type CollapseEvent struct {
	// Kind is "started" (a background fold of Spans spans), "staged" (it
	// made Spans summaries), "failed" (it made none: Err), "dropped" (a
	// compaction, rewind or Close made it obsolete: every "started" ends
	// in one of these three), or "committed" (Spans spans folded into the
	// requests from now on).
	Kind  string
	Spans int
	Err   error
}

// Collapse is the context collapse layer (SPEC C3): a projection that
// folds older spans of the conversation — a prompt and the work that
// answered it, never a tool call without its result — into short
// summaries, while the history and the transcript keep every message.
//
// When the context passes StageAt, the oldest spans that may be folded are
// summarised by the model in the background; when it passes CommitAt, the
// summaries that are ready are committed together, so the prefix the
// prompt cache holds changes once for the batch; from BlockAt the request
// waits for the fold under way, or folds synchronously. Each commit is
// recorded in the transcript (a context_collapse_commit line naming each
// span's first and last uuid and its summary), and a resumed session
// folds exactly the same spans. Never folded: the newest messages
// (KeepRecent), the user's latest prompts (KeepPrompts), the message the
// conversation starts with, instruction files, todo lists, plans,
// permission decisions, pins, and what compaction wrote (its summary and
// what it carries verbatim). Collapse does not replace auto-compaction:
// when it cannot free enough (nothing left to fold, a fold that failed or
// took too long), auto-compaction runs as it would without it.
//
// Apply, Reset and Close are called from the engine's goroutine; a fold
// runs on a goroutine of its own. One mutex guards the state they share.
type Collapse struct {
	cfg CollapseConfig

	mu        sync.Mutex
	committed []transcript.CollapseSpan
	staged    []transcript.CollapseSpan // summaries ready, not committed
	running   *foldRun                  // the background fold under way
	gen       int                       // bumped by Reset: older folds are dropped
	failure   error                     // of the last background fold, not told yet
	// stageAgain and blockAgain are the context sizes before which a
	// staging (or a synchronous fold) that found nothing or failed is not
	// tried again.
	stageAgain, blockAgain int64
	// failures counts folds that failed in a row; at maxFoldFailures the
	// layer stops folding for the session (off), as auto-compaction's
	// breaker does, and says so once (told).
	failures  int
	off, told bool
	wg        sync.WaitGroup
}

// maxFoldFailures is how many folds may fail in a row before context
// collapse stops trying for the session.
const maxFoldFailures = 3

// foldFailed counts a failed fold; the caller holds c.mu.
func (c *Collapse) foldFailed() {
	c.failures++
	if c.failures >= maxFoldFailures {
		c.off = true
	}
}

// foldRun is a background fold.
type foldRun struct {
	done   chan struct{}
	cancel context.CancelFunc
}

// NewCollapse returns the context collapse layer.
func NewCollapse(cfg CollapseConfig) *Collapse {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.StageAt, DefaultCollapseStageAt)
	def(&cfg.CommitAt, DefaultCollapseCommitAt)
	def(&cfg.BlockAt, DefaultCollapseBlockAt)
	def(&cfg.KeepRecent, DefaultCollapseKeepRecent)
	if cfg.KeepPrompts <= 0 {
		cfg.KeepPrompts = DefaultCollapseKeepPrompts
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultFoldTimeout
	}
	return &Collapse{cfg: cfg, committed: slices.Clone(cfg.Collapsed)}
}

// Name implements Layer.
func (c *Collapse) Name() string { return "collapse" }

// Committed returns the spans folded so far, in commit order.
func (c *Collapse) Committed() []transcript.CollapseSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.committed)
}

// Reset implements Resetter: a compaction starts the history afresh, so
// what was folded, staged or under way no longer applies.
func (c *Collapse) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if c.running != nil {
		c.running.cancel()
		c.running = nil
	}
	c.committed, c.staged, c.failure = nil, nil, nil
	c.stageAgain, c.blockAgain = 0, 0
}

// Restore implements Restorer: it starts again from the spans conv's
// chain records as folded, dropping what was staged or under way.
func (c *Collapse) Restore(conv *transcript.Conversation) {
	c.Reset()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.committed = slices.Clone(conv.Collapsed)
}

// Folds reports whether the message with uuid id is inside a span
// committed as folded, in msgs (the history): the model sees only the
// span's summary.
func (c *Collapse) Folds(msgs []model.Message, id string) bool {
	c.mu.Lock()
	covered := coveredBy(msgs, c.committed)
	c.mu.Unlock()
	i := slices.IndexFunc(msgs, func(m model.Message) bool { return slices.Contains(m.IDs, id) })
	return i >= 0 && covered[i]
}

// Close stops a fold under way and waits for its goroutine to end.
func (c *Collapse) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.gen++
	if c.running != nil {
		c.running.cancel()
		c.running = nil
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// thresholds are the context sizes at which the layer acts.
type thresholds struct{ stage, commit, block, target int64 }

func (c *Collapse) thresholds(w tokens.Window) thresholds {
	ac := w.AutoCompactAt()
	share := func(n int64, f float64) int64 { return int64(float64(n) * f) }
	return thresholds{
		stage:  share(ac, c.cfg.StageAt),
		commit: share(ac, c.cfg.CommitAt),
		block:  min(share(w.Effective(), c.cfg.BlockAt), ac),
		target: share(ac, collapseTarget),
	}
}

// Apply implements Layer: it folds the committed spans into what is sent,
// commits the folds that are ready once the context passes the commit
// threshold, waits for them (or folds at once) past the blocking one, and
// starts a background fold past the staging one. It reports the tokens
// freed by spans committed for this request; spans committed before were
// already out of the context the last response reported.
func (c *Collapse) Apply(ctx context.Context, st *State) (int64, error) {
	if c.cfg.Disabled {
		return 0, nil
	}
	c.mu.Lock()
	base := st.Send
	send := collapseView(base, c.committed)
	failure, off, tell := c.failure, c.off, c.off && !c.told
	c.failure, c.told = nil, c.told || tell
	c.mu.Unlock()
	switch {
	case tell:
		c.notice(st, fmt.Sprintf("context collapse: %d folds failed in a row (the last: %v); no more folds this session, auto-compaction takes over", maxFoldFailures, failure))
	case failure != nil:
		c.notice(st, fmt.Sprintf("context collapse: a background fold failed (%v); the next one will try again", failure))
	}
	if off {
		// What was folded stays folded, so the prefix keeps its bytes.
		st.Send = send
		return 0, nil
	}
	if st.Prep != nil && st.Prep.Overflow != nil {
		// The request did not fit: auto-compaction handles it at once.
		st.Send = send
		return 0, nil
	}
	th := c.thresholds(st.Window)
	used := st.Remaining()
	var freed int64
	if used >= th.commit {
		freed += c.commitReady(ctx, st, base, &send, CollapseStaged, used)
	}
	if used-freed >= th.block {
		freed += c.block(ctx, st, base, &send, used-freed, th)
	}
	if used-freed >= th.stage {
		c.stage(ctx, st, base, send, used-freed, th)
	}
	st.Send = send
	return freed, nil
}

func (c *Collapse) notice(st *State, text string) {
	if st.Prep != nil {
		st.Prep.Notices = append(st.Prep.Notices, text)
	}
}

func (c *Collapse) notify(e CollapseEvent) {
	if c.cfg.Notify != nil {
		c.cfg.Notify(e)
	}
}

// commitReady commits the staged summaries that still apply to base, in
// one transcript line, and folds them into *send. It returns the tokens
// freed.
func (c *Collapse) commitReady(ctx context.Context, st *State, base []model.Message, send *[]model.Message, trigger string, used int64) int64 {
	c.mu.Lock()
	staged := c.staged
	c.staged = nil
	committed := c.committed
	c.mu.Unlock()
	if len(staged) == 0 {
		return 0
	}
	// Keep the spans that still fold (nothing snipped out of them, no
	// overlap with what is folded already, nothing pinned since they were
	// chosen) and free something.
	all := slices.Clone(committed)
	var spans []transcript.CollapseSpan
	after := *send
	at := indexIDs(base)
	for _, s := range staged {
		if c.pinnedIn(base, at, s) {
			continue
		}
		try := collapseView(base, append(slices.Clone(all), s))
		if tokens.EstimateMessages(try) >= tokens.EstimateMessages(after) {
			continue
		}
		all, after = append(all, s), try
		spans = append(spans, s)
	}
	if len(spans) == 0 {
		return 0
	}
	saved := tokens.EstimateMessages(*send) - tokens.EstimateMessages(after)
	if err := c.record(ctx, trigger, used, saved, spans); err != nil {
		c.notice(st, fmt.Sprintf("context collapse: commit skipped: %v", err))
		return 0
	}
	c.mu.Lock()
	c.committed = all
	c.mu.Unlock()
	*send = after
	c.notify(CollapseEvent{Kind: "committed", Spans: len(spans)})
	return saved
}

// pinnedIn reports whether a message of span s of msgs (indexed by at)
// is pinned.
func (c *Collapse) pinnedIn(msgs []model.Message, at map[string]int, s transcript.CollapseSpan) bool {
	i, ok1 := at[s.FromUUID]
	j, ok2 := at[s.ToUUID]
	for k := i; c.cfg.Pins != nil && ok1 && ok2 && k <= j; k++ {
		if c.cfg.Pins.Pinned(msgs[k].IDs) {
			return true
		}
	}
	return false
}

// record writes the commit to the transcript, so a resume folds the same
// spans.
func (c *Collapse) record(ctx context.Context, trigger string, pre, saved int64, spans []transcript.CollapseSpan) error {
	md := transcript.CollapseMetadata{Trigger: trigger, PreTokens: pre, TokensSaved: saved, Spans: spans}
	text := fmt.Sprintf("Context collapsed: %d spans folded into summaries", len(spans))
	if err := recordSystem(ctx, c.cfg.Transcript, transcript.SubtypeCollapseCommit, text, "collapseMetadata", md); err != nil {
		return fmt.Errorf("record the commit: %w", err)
	}
	return nil
}

// block runs at the blocking threshold: it waits for the fold under way
// and commits what is ready, then, if the context is still past the
// threshold, folds synchronously. A fold that fails or takes longer than
// the timeout leaves the request as it is, for auto-compaction to take
// over.
func (c *Collapse) block(ctx context.Context, st *State, base []model.Message, send *[]model.Message, used int64, th thresholds) int64 {
	c.mu.Lock()
	run, ready, again := c.running, len(c.staged) > 0, c.blockAgain
	c.mu.Unlock()
	if run == nil && !ready && used < again {
		return 0
	}
	if p := st.Prep; p != nil && p.Status != nil {
		p.Status("collapsing")
		defer p.Status("")
	}
	if run != nil {
		timer := time.NewTimer(c.cfg.Timeout)
		defer timer.Stop()
		select {
		case <-run.done:
		case <-timer.C:
			c.notice(st, fmt.Sprintf("context collapse: the background fold took longer than %s; auto-compaction takes over", c.cfg.Timeout))
			return 0
		case <-ctx.Done():
			return 0
		}
	}
	freed := c.commitReady(ctx, st, base, send, CollapseBlocking, used)
	if used-freed < th.block || used < again {
		return freed
	}
	spans := c.choose(ctx, base, used-freed-th.target, st.Window)
	if len(spans) == 0 {
		c.setAgain(&c.blockAgain, used, st.Window)
		return freed
	}
	req := c.request(st, base, *send, spans)
	fctx, cancel := context.WithTimeoutCause(ctx, c.cfg.Timeout, fmt.Errorf("the fold took longer than %s", c.cfg.Timeout))
	defer cancel()
	folded, err := c.fold(fctx, req)
	if err != nil {
		// Neither this request nor the next ones until the context grows
		// send the same spans again, in the background either.
		c.setAgain(&c.blockAgain, used, st.Window)
		c.setAgain(&c.stageAgain, used, st.Window)
		c.mu.Lock()
		c.foldFailed()
		off := c.off
		c.told = c.told || off
		c.mu.Unlock()
		if off {
			c.notice(st, fmt.Sprintf("context collapse: %v; %d folds failed in a row, so no more folds this session: auto-compaction takes over", err, maxFoldFailures))
		} else {
			c.notice(st, fmt.Sprintf("context collapse: %v; auto-compaction takes over", err))
		}
		return freed
	}
	c.mu.Lock()
	c.staged = append(c.staged, folded...)
	c.failures = 0
	c.mu.Unlock()
	return freed + c.commitReady(ctx, st, base, send, CollapseBlocking, used-freed)
}

// setAgain puts off a retry until the context grows by a twentieth of
// the auto-compaction threshold.
func (c *Collapse) setAgain(at *int64, used int64, w tokens.Window) {
	c.mu.Lock()
	*at = used + w.AutoCompactAt()/20
	c.mu.Unlock()
}

// stage starts a background fold of the oldest spans that may be folded,
// enough to bring the context down to the target, unless one is under
// way or ready.
func (c *Collapse) stage(ctx context.Context, st *State, base, send []model.Message, used int64, th thresholds) {
	c.mu.Lock()
	busy := c.running != nil || len(c.staged) > 0 || used < c.stageAgain
	c.mu.Unlock()
	if busy {
		return
	}
	spans := c.choose(ctx, base, used-th.target, st.Window)
	if len(spans) == 0 {
		c.setAgain(&c.stageAgain, used, st.Window)
		return
	}
	req := c.request(st, base, send, spans)
	// The fold outlives this request (not the session: Reset and Close
	// stop it).
	fctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), c.cfg.Timeout, fmt.Errorf("the fold took longer than %s", c.cfg.Timeout))
	run := &foldRun{done: make(chan struct{}), cancel: cancel}
	again := used + st.Window.AutoCompactAt()/20
	c.mu.Lock()
	c.running = run
	gen := c.gen
	c.wg.Add(1)
	c.mu.Unlock()
	c.notify(CollapseEvent{Kind: "started", Spans: len(spans)})
	go func() {
		defer c.wg.Done()
		defer cancel()
		folded, err := c.fold(fctx, req)
		c.mu.Lock()
		current := c.gen == gen
		if current {
			c.running = nil
			if err != nil {
				c.failure, c.stageAgain = err, again
				c.foldFailed()
			} else {
				c.staged = append(c.staged, folded...)
				c.failures = 0
			}
		}
		c.mu.Unlock()
		close(run.done)
		switch {
		case !current:
			c.notify(CollapseEvent{Kind: "dropped"})
		case err != nil:
			c.notify(CollapseEvent{Kind: "failed", Err: err})
		default:
			c.notify(CollapseEvent{Kind: "staged", Spans: len(folded)})
		}
	}()
}

// span is a candidate for folding: msgs[from..to].
type span struct {
	from, to int
	tokens   int64
}

// choose picks the oldest spans of msgs that may be folded and are not
// folded or staged yet, until they hold at least need tokens (at most
// maxFoldSpans). A span is made of whole units — a message, or a
// response with the results of its tool calls — starts anew at each
// prompt the user typed, and holds at most SpanTokens.
func (c *Collapse) choose(ctx context.Context, msgs []model.Message, need int64, w tokens.Window) []span {
	if need <= 0 || len(msgs) < 3 {
		return nil
	}
	var lines *lineInfo
	if l, ok := c.cfg.Transcript.(Lines); ok {
		if entries, err := l.Lines(ctx); err == nil {
			lines = newLineInfo(entries)
		}
	}
	c.mu.Lock()
	covered := coveredBy(msgs, append(slices.Clone(c.committed), c.staged...))
	c.mu.Unlock()
	keep := recentStart(msgs, int64(float64(w.Effective())*c.cfg.KeepRecent))
	prompts := typedPrompts(msgs, c.cfg.KeepPrompts)
	protected := func(i int) bool {
		m := msgs[i]
		switch {
		case i == 0 || i >= keep || covered[i] || prompts[i] || len(m.IDs) == 0:
			return true
		case c.cfg.Pins != nil && c.cfg.Pins.Pinned(m.IDs):
			return true
		}
		return lines.reason(m.IDs) != "" || contentReason(m) != ""
	}
	limit := c.cfg.SpanTokens
	if limit <= 0 {
		limit = max(2_000, w.Effective()/10)
	}
	var out []span
	var total int64
	var cur *span
	flush := func() {
		if cur != nil && cur.tokens >= minSpanTokens && len(out) < maxFoldSpans && total < need {
			out = append(out, *cur)
			total += cur.tokens
		}
		cur = nil
	}
	for i := 0; i < keep && len(out) < maxFoldSpans && total < need; {
		last := i
		if callsTools(msgs[i]) && i+1 < len(msgs) && startsWithResults(msgs[i+1]) {
			last = i + 1
		}
		// Adjacent user messages (results, then an interruption or the
		// next prompt) are one message once a resume has loaded them: a
		// unit holds them all, so a span names the same messages live
		// and resumed.
		for msgs[last].Role == model.RoleUser && last+1 < len(msgs) && msgs[last+1].Role == model.RoleUser {
			last++
		}
		free := !startsWithResults(msgs[i]) && last < keep
		var n int64
		for j := i; j <= last; j++ {
			free = free && !protected(j)
			n += tokens.EstimateMessages(msgs[j : j+1])
		}
		switch {
		case !free:
			flush()
		default:
			if cur != nil && (cur.tokens+n > limit || slices.ContainsFunc(msgs[i:last+1], isPrompt)) {
				flush()
			}
			if cur == nil {
				cur = &span{from: i}
			}
			cur.to, cur.tokens = last, cur.tokens+n
		}
		i = last + 1
	}
	flush()
	return out
}

// recentStart returns the first of the newest messages worth keep tokens,
// moved back so that it does not start on the results of an older call.
func recentStart(msgs []model.Message, keep int64) int {
	k := len(msgs)
	var size int64
	for i := len(msgs) - 1; i >= 1 && size < keep; i-- {
		size += tokens.EstimateMessages(msgs[i : i+1])
		k = i
	}
	for k > 0 && k < len(msgs) && startsWithResults(msgs[k]) {
		k--
	}
	return k
}

func callsTools(m model.Message) bool {
	return m.Role == model.RoleAssistant && slices.ContainsFunc(m.Content, func(b model.Block) bool { return b.Type == model.BlockToolUse })
}

// isPrompt reports whether m holds words the user typed, after tool
// results too (a resume joins a prompt to the results before it).
func isPrompt(m model.Message) bool {
	if m.Role != model.RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type != model.BlockText || harnessText(b.Text) {
			continue
		}
		if t := strings.TrimSpace(StripTag(b.Text)); t != "" && !strings.HasPrefix(t, "[Request interrupted") && !strings.HasPrefix(t, collapsedPrefix) {
			return true
		}
	}
	return false
}

// typedPrompts returns the indexes of the newest n messages the user typed.
func typedPrompts(msgs []model.Message, n int) map[int]bool {
	out := map[int]bool{}
	for i := len(msgs) - 1; i >= 0 && len(out) < n; i-- {
		if isPrompt(msgs[i]) {
			out[i] = true
		}
	}
	return out
}

// coveredBy marks the messages of msgs inside the given spans.
func coveredBy(msgs []model.Message, spans []transcript.CollapseSpan) map[int]bool {
	out := map[int]bool{}
	at := indexIDs(msgs)
	for _, s := range spans {
		i, ok1 := at[s.FromUUID]
		j, ok2 := at[s.ToUUID]
		for k := i; ok1 && ok2 && k <= j; k++ {
			out[k] = true
		}
	}
	return out
}

func indexIDs(msgs []model.Message) map[string]int {
	at := make(map[string]int, len(msgs))
	for i, m := range msgs {
		for _, id := range m.IDs {
			at[id] = i
		}
	}
	return at
}

// foldInstruction asks for the summaries of the spans listed after it.
const foldInstruction = `Stop working on the task for a moment: some older parts of the conversation above are about to be folded to free room in the context window. Each part will be replaced by a short summary of it, and everything else stays word for word. Do not call any tool. For each part listed below, write a summary of a few sentences: what the user asked or what was being attempted, what was found or changed (files, functions, commands, and exact names, numbers and values that may matter later), and how it ended. Write each summary as <fold n="N">…</fold>, N being the part's number, and nothing else.`

// foldSystem and foldTextInstruction ask a model that does not share the
// conversation's cache for the summaries of the parts it is sent.
const (
	foldSystem          = "You summarise parts of a conversation between a user and a coding agent, for the agent to continue its work with the summaries in their place."
	foldTextInstruction = `Each <part n="N"> above is an older part of the conversation, about to be replaced by a short summary. For each part write a summary of a few sentences: what the user asked or what was being attempted, what was found or changed (files, functions, commands, and exact names, numbers and values that may matter later), and how it ended. Write each summary as <fold n="N">…</fold>, N being the part's number, and nothing else.`
)

// foldRequest is a fold request ready to send, with the spans it asks
// about (their summaries still empty) and their sizes in tokens.
type foldRequest struct {
	model model.Model
	req   *model.Request
	spans []transcript.CollapseSpan
	sizes []int64
}

// request builds the fold request for spans of base. With the
// conversation's model it repeats send — what this request carries — and
// names the spans by their tags, so all but the instruction is read from
// the prompt cache; with the small model, or spans the tags cannot name,
// it sends the spans as text.
func (c *Collapse) request(st *State, base, send []model.Message, spans []span) *foldRequest {
	fr := &foldRequest{}
	for _, s := range spans {
		ids := base[s.to].IDs
		fr.spans = append(fr.spans, transcript.CollapseSpan{FromUUID: base[s.from].IDs[0], ToUUID: ids[len(ids)-1]})
		fr.sizes = append(fr.sizes, s.tokens)
	}
	maxTokens := min(foldTokensPerSpan*len(spans)+256, 8_192)
	if c.cfg.SmallModel == nil {
		if names, ok := nameSpans(base, spans); ok {
			r := &model.Request{Model: c.cfg.ModelName, MaxTokens: maxTokens,
				Messages: engine.WithCacheBreakpoint(appendInstruction(send, foldInstruction+"\n\nThe parts:\n"+names))}
			if p := st.Prep; p != nil {
				r.System, r.Tools, r.ContextManagement, r.Betas = p.System, p.Tools, p.ContextManagement, slices.Clone(p.Betas)
			}
			fr.model, fr.req = c.cfg.Model, r
			return fr
		}
	}
	fr.model = c.cfg.Model
	name := c.cfg.ModelName
	if c.cfg.SmallModel != nil {
		fr.model, name = c.cfg.SmallModel, c.cfg.SmallModelName
	}
	// The parts together stay within half the window.
	perPart := int(st.Window.Effective() / 2 * tokens.BytesPerToken / int64(len(spans)))
	var b strings.Builder
	for k, s := range spans {
		var part strings.Builder
		for _, line := range render(base[s.from : s.to+1]) {
			part.WriteString(shorten(line, 4_000))
			part.WriteByte('\n')
		}
		fmt.Fprintf(&b, "<part n=\"%d\">\n%s</part>\n", k+1, shorten(part.String(), perPart))
	}
	fr.req = &model.Request{Model: name, MaxTokens: maxTokens, System: []model.SystemBlock{{Text: foldSystem}},
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(b.String()), model.TextBlock(foldTextInstruction)}}}}
	return fr
}

// nameSpans lists spans by the tags of the messages they start and end
// with (the snip layer's [id:…] tags, which the model reads); false when
// a span's ends carry no tag, or a tag is not unique.
func nameSpans(msgs []model.Message, spans []span) (string, bool) {
	count := map[string]int{}
	for _, m := range msgs {
		if t := tagIn(m); t != "" {
			count[t]++
		}
	}
	unique := func(i int) string {
		if i < 0 || i >= len(msgs) {
			return ""
		}
		if t := tagIn(msgs[i]); count[t] == 1 {
			return t
		}
		return ""
	}
	var b strings.Builder
	for k, s := range spans {
		var from, to string
		switch {
		case unique(s.from) != "":
			from = "from the message tagged " + unique(s.from)
		case s.from < s.to && msgs[s.from].Role == model.RoleAssistant && unique(s.from+1) != "":
			from = "from your response just before the message tagged " + unique(s.from+1)
		default:
			return "", false
		}
		switch {
		case unique(s.to) != "":
			to = "through the message tagged " + unique(s.to)
		case s.from < s.to && msgs[s.to].Role == model.RoleAssistant && unique(s.to-1) != "":
			to = "through your response just after the message tagged " + unique(s.to-1)
		default:
			return "", false
		}
		fmt.Fprintf(&b, "%d. %s %s\n", k+1, from, to)
	}
	return b.String(), true
}

// tagIn returns the tag a request put on m, "" if it has none.
func tagIn(m model.Message) string {
	if m.Role != model.RoleUser || len(m.IDs) == 0 {
		return ""
	}
	t := Tag(m.IDs[0])
	for _, b := range m.Content {
		if b.Type == model.BlockText && strings.HasSuffix(b.Text, t) {
			return t
		}
	}
	return ""
}

var foldPattern = regexp.MustCompile(`(?s)<fold n="(\d+)">(.*?)</fold>`)

// fold sends a fold request and returns the spans it summarised. A
// summary that would not save half of its span's tokens is dropped.
func (c *Collapse) fold(ctx context.Context, fr *foldRequest) ([]transcript.CollapseSpan, error) {
	var resp *model.Response
	for ch, err := range fr.model.Stream(ctx, fr.req) {
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				err = cause
			}
			return nil, fmt.Errorf("fold request: %w", err)
		}
		if ch.Kind == model.ChunkDone {
			resp = ch.Response
		}
	}
	if resp == nil {
		return nil, errors.New("fold request: no response")
	}
	reply := model.Message{Role: model.RoleAssistant, Content: resp.Content}
	text := reply.Text()
	summaries := make([]string, len(fr.spans))
	for _, m := range foldPattern.FindAllStringSubmatch(text, -1) {
		if n, err := strconv.Atoi(m[1]); err == nil && n >= 1 && n <= len(summaries) && summaries[n-1] == "" {
			summaries[n-1] = strings.TrimSpace(m[2])
		}
	}
	// One part answered without the tags is its summary; not the words
	// before a tool call, which the model made instead of summarising.
	if len(summaries) == 1 && summaries[0] == "" && !strings.Contains(text, "<fold") && len(reply.ToolUses()) == 0 {
		summaries[0] = strings.TrimSpace(text)
	}
	var out []transcript.CollapseSpan
	for k, s := range summaries {
		if s == "" || tokens.Estimate(collapsedText(s)) > fr.sizes[k]/2 {
			continue
		}
		sp := fr.spans[k]
		sp.Summary = s
		out = append(out, sp)
	}
	if len(out) == 0 {
		return nil, errors.New("the fold request returned no usable summary")
	}
	return out, nil
}

// collapsedPrefix starts the message a folded span is sent as.
const collapsedPrefix = "[Collapsed: "

func collapsedText(summary string) string { return collapsedPrefix + summary + "]" }

// collapseView returns msgs with each span folded into one user message
// holding its summary, a summary and the user messages next to it joined
// as a resume of the transcript joins adjacent user lines. A span that is
// not whole in msgs, overlaps an earlier one, or would part a tool call
// from its result is left unfolded. msgs itself is left as it is.
func collapseView(msgs []model.Message, spans []transcript.CollapseSpan) []model.Message {
	if len(spans) == 0 {
		return msgs
	}
	at := indexIDs(msgs)
	type fold struct {
		from, to int
		text     string
	}
	var folds []fold
	for _, s := range spans {
		i, ok1 := at[s.FromUUID]
		j, ok2 := at[s.ToUUID]
		if !ok1 || !ok2 || i > j || startsWithResults(msgs[i]) || (callsTools(msgs[j]) && j+1 < len(msgs) && startsWithResults(msgs[j+1])) {
			continue
		}
		folds = append(folds, fold{i, j, collapsedText(s.Summary)})
	}
	if len(folds) == 0 {
		return msgs
	}
	slices.SortStableFunc(folds, func(a, b fold) int { return a.from - b.from })
	out := make([]model.Message, 0, len(msgs))
	afterSummary := false
	push := func(m model.Message, summary bool) {
		if n := len(out); n > 0 && m.Role == model.RoleUser && out[n-1].Role == model.RoleUser && (summary || afterSummary) {
			out[n-1] = join(out[n-1], m)
		} else {
			out = append(out, m)
		}
		afterSummary = summary
	}
	next := 0
	for _, f := range folds {
		if f.from < next {
			continue
		}
		for _, m := range msgs[next:f.from] {
			push(m, false)
		}
		push(model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(f.text)}}, true)
		next = f.to + 1
	}
	for _, m := range msgs[next:] {
		push(m, false)
	}
	return out
}
