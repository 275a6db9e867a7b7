package sessionmemory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Thresholds decide when the notes are due (SPEC SM2). The zero value of
// a field is its default.
type Thresholds struct {
	// Init is the context size, in tokens, at which the first update is
	// due (10,000).
	Init int64
	// Growth is how much the context must grow between updates (5,000).
	Growth int64
	// ToolCalls is how many tool calls since the last update make one
	// due (3); a response that calls no tool, a natural pause, does too.
	ToolCalls int
	// At, when positive, replaces the three above with batches: one
	// update is due when the context reaches At tokens, and the next
	// after the context shrank (a compaction) or grew by another quarter
	// of At since the last update started (the compaction it was for did
	// not happen, or the update failed). An
	// update reads the whole context, so one per compaction costs a
	// fraction of one every few thousand tokens.
	At int64
}

// Config is what a Keeper works with.
type Config struct {
	// Path is the notes file (see Path).
	Path string
	// ConfigDir holds the template and prompt overrides
	// ($CAIRN_HOME/session-memory); "" keeps the defaults.
	ConfigDir string
	// Model and ModelName are the conversation's: the fork must use the
	// same model to read the conversation's prompt cache.
	Model     model.Model
	ModelName string
	MaxTokens int
	// Lookup finds the conversation's tools by name. The fork offers the
	// model exactly the tools the main request listed (so its prefix is
	// the same) and runs the ones its gate lets through.
	Lookup func(name string) (tool.Tool, bool)
	// Cwd is the fork's working directory.
	Cwd        string
	Thresholds Thresholds
	// Timeout bounds one update (0: 3 minutes); Wait is how long a
	// compaction waits for an update under way (0: 15 seconds); MaxTurns
	// bounds the fork's requests (0: 5).
	Timeout  time.Duration
	Wait     time.Duration
	MaxTurns int
	// Warn is told when an update fails; the conversation goes on. May
	// be nil.
	Warn func(string)
	// Saved, when set, is called after each update that succeeded, on the
	// update's goroutine, once the notes at Path (and their full copy
	// beside them, when a section was cut) are written: the session
	// stores them where it keeps the files beside it. May be nil.
	Saved func(ctx context.Context, path string)
}

// Stats count a Keeper's updates.
type Stats struct {
	Updates, Failures int
}

// Keeper keeps one session's notes. Its methods are safe for concurrent
// use: the engine's goroutine calls AfterResponse and Summary, a slash
// command Extract, and at most one update runs in a goroutine of its own.
type Keeper struct {
	cfg   Config
	texts Texts

	mu sync.Mutex // guards the fields below
	// started is set once the first update was due; base is the context's
	// size when the last update started, size at the last response, and
	// calls the tool calls since the last update started.
	started bool
	base    int64
	size    int64
	calls   int
	// covered is the uuid of the last message the notes cover; "" when
	// not known (no update of this process succeeded yet).
	covered string
	// last is the last exchange of the main conversation.
	last *exchange
	// running is closed when the update under way ends; nil when none
	// is; cancel stops it.
	running chan struct{}
	cancel  context.CancelFunc
	// stalled is the update under way that Summary already waited
	// Config.Wait for in vain; it is not waited for again.
	stalled chan struct{}
	closed  bool
	noEdit  bool // the conversation has no Edit tool
	// failing is set from a failed update to the next one that succeeds:
	// a run of failures is said once.
	failing bool
	// spent is set once the batch update (Thresholds.At) of the current
	// context ran; a compaction clears it.
	spent bool
	stats Stats
	wg    sync.WaitGroup
}

// exchange is a request of the main conversation and its response, as the
// engine reported them; neither is changed afterwards.
type exchange struct {
	req  *model.Request
	resp *model.Response
	ids  []string
}

func (e *exchange) prefix() Prefix { return prefixOf(e.req, e.resp, e.ids) }

// ErrClosed is returned by Extract once the Keeper is closed.
var ErrClosed = errors.New("the session's notes are closed")

// errTimeout is the cause of an update that ran out of time.
type errTimeout time.Duration

func (e errTimeout) Error() string {
	return fmt.Sprintf("the update took longer than %s", time.Duration(e))
}

// New returns a Keeper for the notes at cfg.Path. An override that cannot
// be read is reported through Warn and the default is used.
func New(cfg Config) *Keeper {
	if cfg.Thresholds.Init == 0 {
		cfg.Thresholds.Init = 10_000
	}
	if cfg.Thresholds.Growth == 0 {
		cfg.Thresholds.Growth = 5_000
	}
	if cfg.Thresholds.ToolCalls == 0 {
		cfg.Thresholds.ToolCalls = 3
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Minute
	}
	if cfg.Wait == 0 {
		cfg.Wait = 15 * time.Second
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = 5
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	texts, err := LoadTexts(cfg.ConfigDir)
	if err != nil {
		cfg.Warn(fmt.Sprintf("session notes: %v; using the default", err))
	}
	return &Keeper{cfg: cfg, texts: texts}
}

// Path is the notes file.
func (k *Keeper) Path() string { return k.cfg.Path }

// Stats reports how many updates succeeded and failed.
func (k *Keeper) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stats
}

// AfterResponse is the engine's hook (engine.Config.AfterResponse): it
// remembers the conversation as req sent it and, when the notes are due
// and no update is running, starts one in the background. It never waits.
// A turn already stopped when its response arrives (ctx done: an
// interrupt, a spent --max-budget-usd) starts no update: it is paid work
// the stop asked not to do; the next response that is due starts it.
func (k *Keeper) AfterResponse(ctx context.Context, req *model.Request, resp *model.Response, ids []string) {
	u := resp.Usage
	size := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
	calls := len(model.Message{Content: resp.Content}.ToolUses())
	var warn string
	defer func() { // after the unlock below
		if warn != "" {
			k.cfg.Warn(warn)
		}
	}()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = &exchange{req, resp, ids}
	if size < k.size {
		// The context shrank (a compaction): keep the growth seen since
		// the last update, measured from the new size.
		k.base = size - max(0, k.size-k.base)
		k.spent = false
	}
	k.size = size
	k.calls += calls
	if k.closed || k.noEdit || k.running != nil || ctx.Err() != nil || !k.due(size, calls) {
		return // not due, or one at a time: a running update is left alone
	}
	if !slices.ContainsFunc(req.Tools, func(s model.ToolSpec) bool { return s.Name == "Edit" }) {
		k.noEdit = true // said once, and no request is made for nothing
		warn = "session notes: " + ErrNoEdit.Error()
		return
	}
	p := k.last.prefix()
	done, uctx := k.claim(context.WithoutCancel(ctx))
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		err := k.update(uctx, p)
		k.saved(uctx, err)
		if k.finish(p, err) && !errors.Is(err, context.Canceled) {
			k.cfg.Warn(fmt.Sprintf("session notes: the background update failed (%v); the conversation goes on, compacting with a summary if it must, and a later update will try again", err))
		}
		k.end(done) // after the warning: a waiter sees the update whole
	}()
}

// due reports whether the notes are due at a response that left the
// context at size tokens and made calls tool calls. k.mu is held.
func (k *Keeper) due(size int64, calls int) bool {
	th := k.cfg.Thresholds
	if th.At > 0 {
		if size < th.At || (k.spent && size-k.base < th.At/4) {
			return false
		}
		k.spent = true
		return true
	}
	if !k.started {
		if size < th.Init {
			return false
		}
		k.started = true
	}
	return size-k.base >= th.Growth && (k.calls >= th.ToolCalls || calls == 0)
}

// claim marks an update as running and returns its end signal and
// context. k.mu is held.
func (k *Keeper) claim(ctx context.Context) (chan struct{}, context.Context) {
	done := make(chan struct{})
	k.running = done
	k.base, k.calls = k.size, 0
	ctx, k.cancel = context.WithTimeoutCause(ctx, k.cfg.Timeout, errTimeout(k.cfg.Timeout))
	return done, ctx
}

// finish records the end of an update, which the caller marks ended
// (end) after its warning; it reports whether err is the first failure
// after a success (or the first of all), the one to tell the user of. A
// failed update leaves what the notes cover as it was; a batch
// (Thresholds.At) is tried again once the context grew by a quarter of
// At.
func (k *Keeper) finish(p Prefix, err error) (firstFailure bool) {
	k.mu.Lock()
	k.cancel()
	if err == nil {
		k.covered = p.Covered
		k.stats.Updates++
		k.failing = false
	} else {
		k.stats.Failures++
		firstFailure = !k.failing
		k.failing = true
	}
	k.mu.Unlock()
	return firstFailure
}

// end marks the update whose end signal is done as no longer running and
// closes done.
func (k *Keeper) end(done chan struct{}) {
	k.mu.Lock()
	if k.running == done {
		k.running, k.cancel = nil, nil
	}
	k.mu.Unlock()
	close(done)
}

// Extract updates the notes now, whatever the thresholds (SPEC SM5,
// /summary): it waits for an update under way, then runs one from the
// conversation as the last request sent it, or, when no request was sent
// yet (a session just resumed), from fallback. Cancelling ctx stops it.
func (k *Keeper) Extract(ctx context.Context, fallback func(context.Context) (Prefix, error)) error {
	for {
		k.mu.Lock()
		if k.closed {
			k.mu.Unlock()
			return ErrClosed
		}
		ch := k.running
		if ch == nil {
			break // k.mu stays held
		}
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	last := k.last
	done, uctx := k.claim(ctx)
	k.mu.Unlock()
	var p Prefix
	var err error
	switch {
	case last != nil:
		p = last.prefix()
	case fallback != nil:
		p, err = fallback(uctx)
	default:
		err = errors.New("there is no conversation to take notes of yet; send a prompt first")
	}
	if err == nil {
		err = k.update(uctx, p)
	}
	k.saved(uctx, err)
	k.finish(p, err)
	k.end(done)
	return err
}

// saveTimeout bounds Config.Saved: a store that does not answer (a
// database out of reach) must not hold up Close.
const saveTimeout = 10 * time.Second

// saved tells Config.Saved of an update that succeeded, with a deadline
// of its own (the update's may be spent); Saved warns of a failed write.
func (k *Keeper) saved(ctx context.Context, err error) {
	if err == nil && k.cfg.Saved != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
		defer cancel()
		k.cfg.Saved(sctx, k.cfg.Path)
	}
}

// Wait blocks until no update is running, or ctx ends.
func (k *Keeper) Wait(ctx context.Context) error {
	for {
		k.mu.Lock()
		ch := k.running
		k.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Read returns the notes as they are on disk; "" when there are none.
func (k *Keeper) Read() (string, error) {
	b, err := os.ReadFile(k.cfg.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// Summary gives compaction the notes to stand as its summary (SPEC SM4),
// after waiting up to Config.Wait for an update under way (once: an update
// it waited for in vain is not waited for again): the notes with
// over-long sections cut and pointing to the file, and the uuid of the
// last message they cover ("" when not known, as after a resume). Notes
// that hold nothing beyond the template return "", and so do notes that
// no update of this process has brought up to date while one failed
// (they may cover any part of the conversation). It implements
// compact.Notes.
func (k *Keeper) Summary(ctx context.Context) (summary, covered string, err error) {
	k.mu.Lock()
	ch := k.running
	if ch == k.stalled {
		ch = nil // waited for once already: a stalled update holds up one compaction, not every request
	}
	k.mu.Unlock()
	if ch != nil {
		t := time.NewTimer(k.cfg.Wait)
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C: // use the notes as they are
			k.mu.Lock()
			k.stalled = ch
			k.mu.Unlock()
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
	notes, err := k.Read()
	if err != nil {
		return "", "", fmt.Errorf("read the session notes: %w", err)
	}
	if Empty(notes, k.texts.Template) {
		return "", "", nil
	}
	k.mu.Lock()
	covered, failed := k.covered, k.stats.Failures > 0
	k.mu.Unlock()
	if covered == "" && failed {
		// No update of this process succeeded and one failed: what the
		// notes hold (an earlier process's, or what a failed update wrote
		// before it failed) covers an unknown part of this conversation,
		// not all of it.
		return "", "", nil
	}
	summary, _ = fit(notes, MaxSectionTokens, MaxTotalTokens, k.cfg.Path)
	return summary, covered, nil
}

// Close lets an update under way finish — within Config.Wait, after
// which it is stopped (the notes stay whole either way) — and starts no
// more. An update already paid for its input, and finishing it keeps the
// notes for a later --continue.
func (k *Keeper) Close() {
	k.mu.Lock()
	k.closed = true
	ch, cancel := k.running, k.cancel
	k.mu.Unlock()
	if ch != nil {
		t := time.NewTimer(k.cfg.Wait)
		select {
		case <-ch:
		case <-t.C:
			cancel()
		}
		t.Stop()
	}
	k.wg.Wait()
}
