// Package agent assembles a working session from its parts — the model,
// the tools, the system prompt, the transcript — and picks the session to
// run: a new one, the newest of the project (--continue), a named one
// (--resume), or a copy (--fork-session). The command line and the
// terminal UI both start sessions here.
package agent

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/extension"
	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/internal/fsfault"
	"github.com/cairn-dev/cairn/internal/gcpace"
	"github.com/cairn-dev/cairn/internal/gitinfo"
	"github.com/cairn-dev/cairn/internal/hugeheap"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/prompt"
	"github.com/cairn-dev/cairn/internal/sessionmemory"
	"github.com/cairn-dev/cairn/internal/tokens"
	coretools "github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// Version is what cairn writes in the version field of its transcripts.
const Version = "cairn-0.1.0"

// Options describe the session to open.
type Options struct {
	// Home is the cairn home: its file history, plans and session-memory
	// texts are kept there.
	Home session.Home
	Cwd  string
	// Store keeps the session's transcript and the files beside it
	// (transcript.Sidecars: large tool results, subagent transcripts,
	// session notes); it must implement transcript.Sidecars. --continue
	// and --resume look for the session in it: the newest session, or an
	// id or the unique start of one. nil is the convenience of the
	// command line: the file store of Home's project folder for Cwd
	// (Home.Store), with Claude Code's lookup across the home's projects
	// and by transcript path (session.Latest, Home.Find).
	Store transcript.Store

	Model     model.Model
	ModelName string
	MaxTokens int
	Window    tokens.Window

	// Tools are the model's tools; the session gives TodoWrite, the
	// plan-mode tools and Task (tools.NewTask) its own state.
	Tools []tool.Tool
	// MCPInstructions is the system prompt section holding the MCP
	// servers' instructions (mcp.Servers.Instructions); their tools are
	// in Tools. Whoever connected the servers closes them after the
	// session.
	MCPInstructions string
	// Late, when set, brings tools that were not ready when the session
	// opened (MCP servers still starting). It is asked at the start of
	// each turn, never during one, and must not block: it returns ok false
	// while they are not ready. The first time it returns ok their tools
	// join the session with their system prompt section ("" for none),
	// and it is not asked again — so the tool list and the system prompt
	// change once, at a turn boundary, and the prompt cache breaks once.
	// Before that, Late may return part of the tools with ok false, and
	// then they join at once: a headless run's first request carries the
	// servers that started in time, the others join in a second change.
	// A tool Late returns under a name it returned before replaces that
	// one in place (a server configured earlier that came up later owns
	// the name); a section it returns replaces the one before, so it
	// covers every server joined so far.
	Late func() (tools []tool.Tool, instructions string, ok bool)
	// LateEachRequest asks Late before every model request, not only at
	// the start of a turn: a headless run, which may have a single turn,
	// takes the tools at its next request once they are ready.
	LateEachRequest bool
	// Middleware decide over the session and add to it, besides what
	// the session does itself (see Middleware).
	Middleware Middleware

	// MapTranscript lets a resume keep the conversation's messages in
	// the transcript file's mapping instead of copies (see
	// transcript.LoadOptions.Map): for a run that reads few of them, as a
	// headless one does, or a terminal that reads a result when it comes
	// into view. Requests check the mapping before they read it; another
	// reader of the history's results does so under filemap.Guard.
	MapTranscript bool
	// FitGC lets a resume set the collector, for the whole process: at a
	// laxer pace, under a bound, while the transcript loads, then to what
	// the resumed conversation needs (see gcpace): for a
	// program that is the agent, as the command line is, not one that
	// embeds it beside work of its own.
	FitGC bool

	// Which session: at most one of Continue and Resume; Fork copies the
	// chosen session into a new one; SessionID names a new session.
	Continue  bool
	Resume    string
	Fork      bool
	SessionID string

	MaxTurns           int
	AppendSystemPrompt string
	// SystemPrompt, when set, replaces cairn's own instructions in the
	// system prompt (--system-prompt).
	SystemPrompt string
	// DisableAutoCompact turns auto-compaction off
	// (CAIRN_DISABLE_AUTO_COMPACT); /compact still works.
	DisableAutoCompact bool
	// SummaryTimeout bounds a compaction's summary request (0: 5 minutes).
	SummaryTimeout time.Duration
	// ContextManagement is set when the provider clears old tool results
	// itself (Anthropic's context management): micro-compaction then
	// leaves a warm prompt cache's prefix alone and asks the server to.
	ContextManagement bool
	// MicroCompact tunes micro-compaction (SPEC C2); the zero value is the
	// defaults. The agent sets its ServerSide, Transcript, Cleared and
	// Since.
	MicroCompact compact.MicroConfig
	// Collapse turns context collapse on (SPEC C3): older spans of the
	// conversation are sent folded into summaries. The agent sets its
	// Transcript, Pins and Collapsed, and its Model and ModelName when
	// they are not set. nil leaves it off.
	Collapse *compact.CollapseConfig
	// SessionMemory tunes the session notes (SPEC §6); the zero value is
	// the defaults. The agent sets its Path, ConfigDir, Model, ModelName,
	// MaxTokens, Lookup, Cwd and Warn. DisableSessionMemory stops the
	// background updates (as does DisableAutoCompact); /summary still
	// works.
	SessionMemory        sessionmemory.Config
	DisableSessionMemory bool
	// EarlyCompactAt is where the session compacts to its notes, with no
	// summary request, before the auto-compaction threshold (see
	// economy.go): 0 is a share of the threshold, negative is never.
	EarlyCompactAt int64

	// Instructions are the session's instruction files (CLAUDE.md and
	// kin); nil loads none. Memory turns on long-term memory; nil has none.
	Instructions *instructions.Tracker
	Memory       *MemoryOptions

	// Extensions are the session's custom commands, skills and output
	// style; the zero value has none.
	Extensions ExtensionOptions

	PermissionMode string
	// Mode, when set, is the permission mode as it stands, recorded on
	// each prompt in place of PermissionMode (plan mode comes and goes).
	Mode func() string
	// PlanModes moves the session in and out of plan mode and puts the
	// model's plans to whoever approves them (SPEC E3); nil leaves the
	// plan-mode tools refusing to run.
	PlanModes coretools.PlanModes
	// Entrypoint is recorded on every line: "cli" or "sdk-cli".
	Entrypoint string
	// Eager writes every transcript line synchronously.
	Eager bool
	// Warn hears about problems met while the session runs that do not
	// stop it (a change file history could not back up). May be nil.
	Warn func(string)
	// Replicate, when set, wraps the session's transcript appender so its
	// lines also go elsewhere (the team store), after the local file.
	// before is the transcript as it was on disk before this run (nil for
	// a new session), for the copy to catch up on; Replicate closes it.
	Replicate func(sessionID string, local transcript.Appender, before transcript.Source) transcript.Appender

	Now     func() time.Time
	NewUUID func() string
}

// ExtensionOptions are a session's custom commands, skills and output
// style, and what their lines may do.
type ExtensionOptions struct {
	// Set holds the custom commands, skills and output styles
	// (extension.Load); nil has none.
	Set *extension.Set
	// AllowShell decides whether a command's !`…` line may run (see
	// extension.ExpandOptions.Allow); nil refuses them all.
	AllowShell func(ctx context.Context, command string, allowedTools []string) error
	// AllowRead decides whether a command's @path include may be read
	// (extension.ExpandOptions.Read); nil allows the project's files.
	AllowRead func(ctx context.Context, path string) error
	// OutputStyle, when set and not "default", is the style whose text
	// goes into the system prompt.
	OutputStyle *extension.Style
	// Grant, when set, lets a custom command's or skill's allowed-tools
	// rules run without asking until end is called: the agent grants them
	// for the turn the command starts (or, for a skill the model loads,
	// the rest of that turn) and ends the grant with the turn, as Claude
	// Code does. source names the file; err names rules left out (told
	// as a warning). Nil grants nothing: the rules then hold only for the
	// command's !`…` lines.
	Grant func(source string, rules []string) (end func(), err error)
}

// Middleware are the session's hook points (package middleware) that the
// one who opens it fills: permissions and hooks (package governance), or
// an embedder's own. The session composes them with its own middlewares
// — the memory-write gate first among the gates, the instruction files,
// recalled memories and token budget first among the providers, the
// token budget after the stop handler, memory extraction first among the
// enders — and its subagents share Gate and AfterTool. The zero value
// adds nothing.
type Middleware struct {
	// Gate decides whether a tool call may run, after the memory-write
	// gate; nil allows every call.
	Gate middleware.Gate
	// AfterTool may change a call's result (PostToolUse hooks); see
	// engine.Config. May be nil.
	AfterTool func(ctx context.Context, t tool.Tool, call model.Block, res tool.Result) tool.Result
	// BeforePrompt may refuse the user's message or attach context to it
	// (UserPromptSubmit hooks); see engine.Config. May be nil.
	BeforePrompt func(ctx context.Context, in engine.Input) (engine.Input, error)
	// Stop runs when the model ends its turn, once the transcript holds
	// the reply (Stop hooks), before the token budget is asked. May be
	// nil.
	Stop middleware.StopHandler
	// Providers add context to prompts and results after the session's
	// own; Enders hear of each turn that ended well after memory
	// extraction. Open takes both over: Close closes them, and so does
	// Open when it fails.
	Providers []middleware.Provider
	Enders    []middleware.Ender
	// SubagentStart and SubagentStop are the hook points of the Task
	// tool's subagents: SubagentStart runs before a subagent's first
	// request, and what it returns goes with the subagent's task;
	// SubagentStop is the subagent's Stop. Both may be nil.
	SubagentStart func(ctx context.Context, a Subagent) []engine.Attachment
	SubagentStop  func(ctx context.Context, a Subagent, res *engine.Result, again bool) string
	// PreCompact and PostCompact are the compaction's hooks (see
	// compact.Config). Both may be nil.
	PreCompact  func(ctx context.Context, trigger, instructions string) (string, error)
	PostCompact func(ctx context.Context, trigger, summary string) []engine.Attachment
}

// Agent is an open session, holding its transcript's lock until Close.
type Agent struct {
	opts Options
	id   string
	// store keeps the session's transcript under id, and sidecars the
	// files beside it; path is the transcript's file when store is a
	// FileStore, else "".
	store    transcript.Store
	sidecars transcript.Sidecars
	path     string
	// dir is the session's folder on disk, where tools reach its files by
	// path: the store's own (a FileStore's <project>/<id>), or, for a store
	// that keeps them elsewhere, a working copy in scratch, removed at
	// Close (see workdir.go).
	dir, scratch string
	resumed      bool
	// byHome is set when the store is the one Open made from Home.
	byHome bool
	// closers close what start opened, newest first (Close, or a failed
	// start).
	closers []func() error
	writer  *transcript.Writer
	// held is the lock on the transcript taken before reading it, while
	// the writer has not taken it over (a resumed file named other than
	// its session).
	held transcript.Appender
	// saveLast is the last save failure told, so a retry failing the same
	// way is not told again.
	saveMu   sync.Mutex
	saveLast string
	recorder *session.Recorder
	engine   *engine.Session
	prompts  *prompt.Builder
	tools    *tool.Registry
	compact  *compact.Manager
	snip     *compact.Snip
	collapse *compact.Collapse
	pins     *compact.Pins
	todos    *coretools.TodoList
	plan     *coretools.Plan
	notes    *sessionmemory.Keeper
	mw       middlewares // instruction files, long-term memory, token budgets, gates
	ext      *extensions // custom commands and skills
	history  *filehistory.History
	// from and fromKey are the store and name of the transcript a resumed
	// session was read from, and fromID that session's id (another one's
	// when forking).
	from            transcript.Store
	fromKey, fromID string
	// Warnings from loading the transcript, for the user to read.
	Warnings []string
	// discarded is set when Close removed the empty transcript.
	discarded bool
	// created is set when this start made the session's transcript (a
	// new session's, a fork's, a resume's under another id); startFailed
	// when the start failed, which then removes it whatever it holds.
	created, startFailed bool
	// title is the name the session was given (/rename).
	title string
	// lines holds the lines of the session's transcript decoded so far,
	// so reading it back decodes only what was appended since.
	lines *transcript.LineCache
	// chain is the session's active chain as last read back, so that
	// reading it again decodes only what carried it on since.
	chain liveChain
	// snaps gives the file-history snapshots of the resumed transcript,
	// read beside the start; nil when nothing is resumed.
	snaps <-chan loadedSnapshots
	// lateJoined is set once Options.Late's tools have joined.
	lateJoined bool
	// lateNames are the names of the tools Options.Late brought so far.
	lateNames map[string]bool
	// mwClosed is set once the middlewares were closed.
	mwClosed bool
}

// Open picks the session, loads it if it exists, and gets it ready to run.
// It takes over o.Middleware's providers and enders: Close closes them,
// and so does Open when it fails.
func Open(ctx context.Context, o Options) (*Agent, error) {
	a, err := open(ctx, o)
	if err != nil && (a == nil || !a.mwClosed) {
		closeGiven(o.Middleware)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// open is Open, but for the middlewares given: the *Agent it returns
// with an error says whether it closed them.
func open(ctx context.Context, o Options) (*Agent, error) {
	if o.Model == nil {
		return nil, errors.New("no model configured")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewUUID == nil {
		o.NewUUID = uuid.NewString
	}
	if o.Window.Size == 0 {
		// A window cairn knows for the model, else Claude's 200K.
		if w, ok := tokens.ForModel(o.ModelName); ok {
			o.Window = w
		} else {
			o.Window = tokens.Window{Size: 200_000, MaxOutput: 32_000}
		}
	}
	if o.Continue && o.Resume != "" {
		return nil, errors.New("--continue and --resume pick different sessions; give one of them")
	}
	byHome := o.Store == nil
	if byHome {
		o.Store = o.Home.Store(o.Cwd)
	}
	a := &Agent{opts: o, store: o.Store, byHome: byHome, lines: &transcript.LineCache{}}
	var conv *transcript.Conversation
	switch {
	case o.Continue || o.Resume != "":
		from, key, err := a.pick(ctx)
		if o.Continue && errors.Is(err, session.ErrNoSessions) {
			// Nothing to continue here: start a session, as Claude Code does.
			a.id = a.newID()
			break
		}
		if err != nil {
			return nil, err
		}
		if !o.Fork {
			// Take the session before reading it, and keep it: a run still
			// writing it refuses this one here, and one that has finished
			// is read whole. Reading first and locking after would resume
			// from a view taken before the other run's last lines.
			if a.held, err = from.OpenAppender(ctx, key); err != nil {
				return nil, unsaveable(err)
			}
		}
		// When the session goes on in this file, what is decoded now serves
		// the reads of it the turns make.
		cache, chain := a.lines, &a.chain
		if o.Fork {
			cache, chain = nil, nil
		}
		var grown func()
		conv, grown, err = load(ctx, from, key, transcript.LoadOptions{NewUUID: o.NewUUID, Now: o.Now, Cache: cache, Map: o.MapTranscript,
			Raw: []string{transcript.TypeFileHistorySnapshot}}, loadHow{chain: chain, fitGC: o.FitGC})
		if err != nil {
			a.release()
			return nil, err
		}
		// The load kept the snapshot lines of what it read; the part of
		// the transcript before that (none, when the conversation goes
		// back to its start) is read on another core, beside the start
		// and past Open (see openHistory): not with Open's context, which
		// its caller may end once Open returns (the UI's /resume does).
		a.snaps = preloadSnapshots(context.WithoutCancel(ctx), from, key, o.Cwd, conv.RawFrom, conv.Raw)
		// What the start builds on the conversation (its messages, the
		// tools' state) goes on in the huge pages the load grew into.
		defer grown()
		a.Warnings = conv.Warnings
		a.resumed = true
		a.from, a.fromKey, a.fromID = from, key, cmp.Or(conv.SessionID, key)
		if o.Fork {
			a.id = a.newID()
		} else {
			a.store = from
			a.id = cmp.Or(conv.SessionID, key)
			if a.id != key {
				a.chain.forget() // read from another file than the session's
			}
		}
	default:
		a.id = a.newID()
		if src, err := a.store.OpenSource(ctx, a.id); err == nil {
			src.Close()
			return nil, fmt.Errorf("session %s already exists; continue it with --resume %s", a.id, a.id)
		}
	}
	if fs, ok := a.store.(*transcript.FileStore); ok {
		a.path = fs.Path(a.id)
	}
	if err := a.start(ctx, conv); err != nil {
		a.startFailed = true
		a.closeAll() // what the start opened, newest first
		a.release()
		return a, err
	}
	return a, nil
}

// saveFailed tells the person, once per failure, that the transcript is
// not being saved: a write of the model's reply or a tool's result failed
// while the turn goes on (the turn stops at its next record).
func (a *Agent) saveFailed(err error) {
	if a.opts.Warn == nil {
		return
	}
	msg := err.Error()
	a.saveMu.Lock()
	repeat := msg == a.saveLast
	a.saveLast = msg
	a.saveMu.Unlock()
	if !repeat {
		a.opts.Warn(msg)
	}
}

// unsaveable says plainly why a transcript could not be opened for
// writing: the session is then not started, and no request is made.
func unsaveable(err error) error {
	if err == nil || errors.Is(err, transcript.ErrLocked) {
		return err
	}
	cause, advice := fsfault.Describe(err)
	msg := "the session cannot be saved, so it was not started: " + cause
	if advice != "" {
		msg += "; " + advice + " and run again"
	}
	return fmt.Errorf("%s (%w)", msg, err)
}

// release lets go of a lock taken before reading that the writer did not
// take over.
func (a *Agent) release() {
	if a.held != nil {
		a.held.Close()
		a.held = nil
	}
}

func (a *Agent) newID() string {
	if a.opts.SessionID != "" {
		return a.opts.SessionID
	}
	return a.opts.NewUUID()
}

// pick finds the session to resume: the store holding it and its name
// there.
func (a *Agent) pick(ctx context.Context) (transcript.Store, string, error) {
	o := a.opts
	if !a.byHome {
		return pickIn(ctx, a.store, o.Continue, o.Resume)
	}
	var path string
	if o.Continue {
		info, err := session.Latest(ctx, o.Home, o.Cwd)
		if err != nil {
			return nil, "", err
		}
		path = info.Path
	} else {
		var err error
		if path, err = o.Home.Find(o.Cwd, o.Resume); err != nil {
			return nil, "", err
		}
	}
	store, key := transcript.FileStoreOf(path)
	return store, key, nil
}

// pickIn finds the session to resume in store: the newest one that holds
// something, or the one whose id is ref or starts with it.
func pickIn(ctx context.Context, store transcript.Store, latest bool, ref string) (transcript.Store, string, error) {
	infos, err := store.Sessions(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("list the store's sessions: %w", err)
	}
	if latest {
		var best *transcript.SessionInfo
		for i := range infos {
			if infos[i].Size > 0 && (best == nil || infos[i].ModTime.After(best.ModTime)) {
				best = &infos[i]
			}
		}
		if best == nil {
			return nil, "", fmt.Errorf("%w: start one first", session.ErrNoSessions)
		}
		return store, best.ID, nil
	}
	var found []string
	for _, in := range infos {
		if in.ID == ref {
			return store, ref, nil
		}
		if strings.HasPrefix(in.ID, ref) {
			found = append(found, in.ID)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", fmt.Errorf("no session with id %q in the store (%w); list them with `cairn sessions list`", ref, session.ErrNotFound)
	case 1:
		return store, found[0], nil
	default:
		slices.Sort(found)
		return nil, "", fmt.Errorf("%q is the start of %d session ids (%s); give more of the id", ref, len(found), strings.Join(found, ", "))
	}
}

// loadHow is what a load does besides reading the conversation.
type loadHow struct {
	// chain, when set, keeps the chain read for the reads of the
	// transcript the turns make (see liveChain).
	chain *liveChain
	// fitGC sets the collector (gcpace.Load) and backs the heap the load
	// builds with huge pages (growHeap, loadHeap): for the resume, once.
	fitGC bool
}

// load loads the session key of store with opts (with Map, the messages
// may stay in the file's mapping: see Options.MapTranscript), doing what
// how says besides. With how.fitGC, grown ends the huge pages, and the
// caller calls it once what it builds on the conversation is built (for a
// failed load, load has); without, grown does nothing.
func load(ctx context.Context, store transcript.Store, key string, opts transcript.LoadOptions, how loadHow) (_ *transcript.Conversation, grown func(), _ error) {
	src, err := store.OpenSource(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	size := src.Size()
	loaded, grown := func() {}, func() {}
	if how.fitGC {
		loaded = gcpace.Load()
		grown = growHeap(loadHeap(src, size))
	}
	conv, err := transcript.Load(ctx, src, opts)
	loaded()
	if how.chain != nil {
		if err != nil {
			how.chain.forget()
		} else {
			how.chain.keepLoaded(src, size, conv)
		}
	}
	if err != nil {
		grown()
		where := key
		if fs, ok := store.(*transcript.FileStore); ok {
			where = fs.Path(key)
		}
		return nil, nil, fmt.Errorf("load %s: %w", where, err)
	}
	return conv, grown, nil
}

// growHeap is hugeheap.Grow; tests see through it what a load asks.
var growHeap = hugeheap.Grow

// start opens the transcript for appending and builds the engine. What
// it opens is on a.closers, which a failed start leaves for Open to close.
func (a *Agent) start(ctx context.Context, conv *transcript.Conversation) error {
	// What the tools take from the conversation is read beside the
	// messages the engine goes on from: both only read the entries.
	state := make(chan toolState, 1)
	go func() { state <- a.toolStateOf(conv) }()
	history, err := a.openTranscript(ctx, conv)
	st := <-state
	if err != nil {
		return err
	}
	// A recall in flight is stopped, an extraction under way waited for.
	a.onClose(a.closeMiddleware)
	if conv != nil {
		a.title = conv.CustomTitle
		if a.title != "" && (a.opts.Fork || a.fromKey != a.id) {
			// A transcript of its own (a fork's) carries the name too.
			if err := a.writer.Append(a.titleEntries()...); err != nil {
				return fmt.Errorf("write the session's name: %w", err)
			}
		}
	}
	a.ext, a.pins, a.todos, a.plan = st.ext, st.pins, st.todos, st.plan
	reg, err := a.buildTools()
	if err != nil {
		return err
	}
	a.buildMiddleware(conv, reg)
	a.buildEngine(conv, reg, history)
	return nil
}

// toolState is what the session's tools take from the conversation it
// goes on from: the skills it loaded and listed, its pins, its todo list
// and its plan.
type toolState struct {
	ext   *extensions
	pins  *compact.Pins
	todos *coretools.TodoList
	plan  *coretools.Plan
}

// toolStateOf reads the tools' state from conv (nil for a new session).
func (a *Agent) toolStateOf(conv *transcript.Conversation) toolState {
	return toolState{ext: newExtensions(a.opts, conv), pins: pinsOf(conv), todos: todosOf(conv), plan: planOf(conv, a.opts.Home, a.id)}
}

// onClose adds f to what Close closes, in the reverse order of the adds.
func (a *Agent) onClose(f func() error) { a.closers = append(a.closers, f) }

// closeAll runs the closers, newest first, and returns the first error.
func (a *Agent) closeAll() error {
	var first error
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	a.closers = nil
	return first
}

// openTranscript takes the session's transcript for appending, with the
// session's folder, its writer, its file history and its recorder, and
// writes what a resume or a fork carries over. It returns the
// conversation to go on from.
func (a *Agent) openTranscript(ctx context.Context, conv *transcript.Conversation) ([]model.Message, error) {
	o := a.opts
	sc, ok := a.store.(transcript.Sidecars)
	if !ok {
		return nil, fmt.Errorf("the session store %T keeps no files beside a session (transcript.Sidecars); give a store that does", a.store)
	}
	a.sidecars = sc
	app, err := a.held, error(nil)
	if app != nil && a.fromKey == a.id {
		a.held = nil // the writer takes over the lock taken before reading
	} else {
		if src, err := a.store.OpenSource(ctx, a.id); err == nil {
			src.Close()
		} else {
			a.created = errors.Is(err, transcript.ErrNotFound)
		}
		if app, err = a.store.OpenAppender(ctx, a.id); err != nil {
			return nil, unsaveable(err)
		}
	}
	if err := a.openDir(ctx); err != nil {
		app.Close()
		return nil, err
	}
	a.onClose(func() error { a.closeDir(); return nil })
	if o.Replicate != nil {
		before, _ := a.store.OpenSource(ctx, a.id) // nil for a new session
		app = o.Replicate(a.id, app, before)
	}
	wo := transcript.WriterOptions{Eager: o.Eager, Now: o.Now, OnError: a.saveFailed}
	if conv != nil && !o.Fork {
		// The writer goes on in the file that holds the entries read.
		wo.KnownIn = knownIn(conv.FromFile())
	}
	a.writer = transcript.NewWriter(app, wo)
	a.onClose(a.closeWriter)
	if a.history, err = a.openHistory(ctx); err != nil {
		return nil, err
	}
	a.onClose(func() error { a.history.Close(); return nil }) // the shadow copy of the project; backups stay
	a.recorder = session.NewRecorder(a.writer, session.RecorderOptions{
		Envelope: session.Envelope{
			SessionID: a.id, CWD: o.Cwd, Version: Version, GitBranch: gitinfo.Branch(o.Cwd),
			Entrypoint: o.Entrypoint,
		},
		PermissionMode: o.PermissionMode,
		Mode:           o.Mode,
		Now:            o.Now,
		NewUUID:        o.NewUUID,
		OnPrompt:       a.history.Prompt,
	})
	var history []model.Message
	if conv != nil {
		// A fork writes the whole conversation into its own file, under
		// its own id; a resume only what the loader repaired.
		carry := conv.Repairs()
		if o.Fork {
			carry = make([]transcript.Entry, len(conv.Entries))
			for i, e := range conv.Entries {
				carry[i] = *e
				carry[i].SessionID = a.id
			}
		}
		if err := a.recorder.Append(ctx, carry...); err != nil {
			return nil, fmt.Errorf("write the resumed session: %w", err)
		}
		if len(carry) == 0 {
			a.recorder.SetLeaf(conv.Leaf)
		}
		history = conv.Messages()
	}
	return history, nil
}

// knownIn returns a test of whether a uuid is one of entries', for the
// Writer of a resumed session (WriterOptions.KnownIn). The set is built
// on another goroutine, beside the rest of the start; the first test
// waits for it.
func knownIn(entries []*transcript.Entry) func(string) bool {
	var set uuidSet
	ready := make(chan struct{})
	go func() {
		set = newUUIDSet(len(entries))
		for _, e := range entries {
			set.add(e.UUID)
		}
		close(ready)
	}()
	return func(id string) bool {
		<-ready
		return set.has(id)
	}
}

// uuidSet is a set of uuids that holds none of the strings it is given:
// a uuid in its canonical form (36 characters, lower-case hexadecimal)
// is kept as its 16 bytes, any other string as a copy. A set of the
// uuids of a loaded conversation then does not keep in memory the
// entries' bodies they were sliced from (see knownIn: the writer keeps
// the set for the whole session, long after a compaction let the entries
// go), and the collector need not scan it.
type uuidSet struct {
	ids    map[[16]byte]struct{}
	others map[string]struct{}
}

func newUUIDSet(n int) uuidSet {
	return uuidSet{ids: make(map[[16]byte]struct{}, n)}
}

// canonicalUUID returns the bytes of s when s is a uuid in its canonical
// form: uuid.Parse reads other forms too, and upper case, which would
// make two different strings one.
func canonicalUUID(s string) ([16]byte, bool) {
	if len(s) != 36 || strings.ToLower(s) != s {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

func (s *uuidSet) add(id string) {
	if u, ok := canonicalUUID(id); ok {
		s.ids[u] = struct{}{}
		return
	}
	if s.others == nil {
		s.others = make(map[string]struct{})
	}
	s.others[strings.Clone(id)] = struct{}{}
}

func (s *uuidSet) has(id string) bool {
	if u, ok := canonicalUUID(id); ok {
		_, in := s.ids[u]
		return in
	}
	_, in := s.others[id]
	return in
}

// buildTools builds the system prompt and the session's tools, bound to
// its state.
func (a *Agent) buildTools() (*tool.Registry, error) {
	o := a.opts
	po := prompt.Options{
		Cwd: o.Cwd, IsGitRepo: gitinfo.Root(o.Cwd) != "", ModelName: o.ModelName, AppendText: o.AppendSystemPrompt,
		Memory: a.memorySection(), TokenBudgets: true, MCPInstructions: o.MCPInstructions,
		SystemPrompt: o.SystemPrompt,
	}
	if st := o.Extensions.OutputStyle; st != nil && st.Text != "" {
		po.OutputStyle, po.DropCodingRules = st.Text, !st.KeepCodingInstructions
	}
	a.prompts = prompt.NewBuilder(prompt.Cairn(po)...)
	tools := slices.Clone(o.Tools)
	if len(a.ext.current()) > 0 && !slices.ContainsFunc(tools, func(t tool.Tool) bool { return t.Spec().Name == "Skill" }) {
		tools = append(tools, coretools.Skill{})
	}
	// The tools that work on the session's state take it here; the
	// session knows none of them by type or name.
	tools = coretools.Bind(tools, &coretools.Session{
		Todos: a.todos, Plan: a.plan, PlanModes: o.PlanModes, Subagents: subagents{a}, Skills: a.ext,
		TrackShell: func(t tool.Tool) tool.Tool { return filehistory.TrackShell(t, a.history) },
	})
	a.snip = compact.NewSnip(compact.SnipConfig{Transcript: transcriptOf{a}, History: a.History, Pins: a.pins})
	tools = append(tools, a.snip.Tool())
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		return nil, err
	}
	a.tools = reg
	return reg, nil
}

// buildEngine builds the session notes, the compaction layers and the
// engine over the tools reg, going on from history.
func (a *Agent) buildEngine(conv *transcript.Conversation, reg *tool.Registry, history []model.Message) {
	o := a.opts
	env := tool.NewEnv(o.Cwd)
	env.Now = o.Now
	env.SessionDir = a.dir
	env.BeforeChange = a.history.BeforeChange
	early := earlyCompactAt(o)
	sm := o.SessionMemory
	sm.Thresholds = notesThresholds(sm.Thresholds, early)
	sm.Path, sm.Model, sm.ModelName, sm.MaxTokens, sm.Lookup, sm.Cwd, sm.Warn = sessionmemory.Path(env.SessionDir), o.Model, o.ModelName, o.MaxTokens, reg.Lookup, o.Cwd, o.Warn
	sm.Saved = a.notesSaved
	if o.Home.Dir != "" {
		sm.ConfigDir = filepath.Join(o.Home.Dir, "session-memory")
	}
	a.notes = sessionmemory.New(sm)
	// An update of the notes under way is stopped; the notes stay whole.
	a.onClose(func() error { a.notes.Close(); return nil })
	var notes compact.Notes
	var afterResponse func(context.Context, *model.Request, *model.Response, []string)
	if !o.DisableSessionMemory && !o.DisableAutoCompact {
		notes, afterResponse = a.notes, a.notes.AfterResponse
	}
	a.compact = compact.New(compact.Config{
		Model: o.Model, ModelName: o.ModelName, Window: o.Window, Disabled: o.DisableAutoCompact, SummaryTimeout: o.SummaryTimeout,
		Transcript: transcriptOf{a}, CWD: o.Cwd, Tools: reg, Now: o.Now, Survivors: survivors(a.pins.Survivors, a.todos.Survivors, a.plan.Survivors, a.mw.context.Survivors, a.ext.survivors),
		PreCompact: o.Middleware.PreCompact, PostCompact: o.Middleware.PostCompact, Notes: notes, Instructions: a.compactGuidance, EarlyAt: early,
		Cleanup:    func() { a.prompts.Forget(prompt.MemoryKey) }, // the memory index as it stands now
		Compacting: a.forgetReadBack,
	})
	micro := microFor(o.MicroCompact, early)
	micro.ServerSide, micro.Transcript = o.ContextManagement && early == 0, transcriptOf{a}
	if micro.Tools == nil {
		micro.Tools = compact.Compactable(reg)
	}
	if conv != nil {
		micro.Cleared, micro.Since = conv.Cleared, conv.LastAssistantTime()
	}
	a.compact.AddLayer(a.snip)
	a.compact.AddLayer(compact.NewMicro(micro))
	if o.Collapse != nil {
		a.collapse = compact.NewCollapse(a.collapseConfig(*o.Collapse, conv))
		a.onClose(func() error { a.collapse.Close(); return nil }) // a fold under way is dropped
		a.compact.AddLayer(a.collapse)
	}
	a.engine = engine.New(engine.Config{
		Model: o.Model, ModelName: o.ModelName, MaxTokens: o.MaxTokens,
		Tools: reg, Env: env, System: a.system, Recorder: a.recorder, Prepare: a.compact.Prepare,
		Gate: middleware.CheckFunc(a.mw.gate), AfterTool: o.Middleware.AfterTool, BeforePrompt: o.Middleware.BeforePrompt, BeforeStop: middleware.BeforeStopFunc(a.mw.stop),
		MaxTurns: o.MaxTurns, Now: o.Now, AfterResponse: afterResponse,
		ShapeResults: a.shapeResults(compact.Offload(a.offloadConfig(reg))),
	}, history)
	if conv != nil {
		a.engine.SetUsage(conv.UsageAt(history))
	}
}

// openHistory rebuilds the session's file history (SPEC F4): from the
// transcript being resumed, with a fork's backups brought into its own
// folder; empty for a new session. Resuming changes no file.
func (a *Agent) openHistory(ctx context.Context) (*filehistory.History, error) {
	o := a.opts
	opts := filehistory.Options{
		Dir: o.Home.FileHistory(a.id), Now: o.Now, Warn: o.Warn,
		Record: func(_ context.Context, e transcript.Entry) error { return a.writer.Append(e) },
	}
	if a.from == nil {
		return filehistory.New(opts, nil), nil
	}
	// The snapshots are read since the load (see open); the first
	// request need not wait for those of a long transcript.
	snaps := a.snaps
	a.snaps = nil
	return filehistory.OpenLater(ctx, o.Home.FileHistory(a.fromID), opts, func() ([]filehistory.Snapshot, []string, error) {
		r := <-snaps
		return r.snaps, r.warnings, r.err
	})
}

// loadedSnapshots is what filehistory.LoadRest returned.
type loadedSnapshots struct {
	snaps    []filehistory.Snapshot
	warnings []string
	err      error
}

// preloadSnapshots reads the file-history snapshots of session key of
// store in the background; the channel gives the result once. The load
// kept the snapshot lines it read (rest) and its reading began at from:
// only the transcript before from is read (see filehistory.LoadRest).
func preloadSnapshots(ctx context.Context, store transcript.Store, key, cwd string, from int64, rest []transcript.RawLine) <-chan loadedSnapshots {
	ch := make(chan loadedSnapshots, 1)
	if from == 0 {
		var r loadedSnapshots
		r.snaps, r.warnings, r.err = filehistory.LoadRest(ctx, bytes.NewReader(nil), rest, cwd)
		ch <- r
		return ch
	}
	go func() {
		var r loadedSnapshots
		src, err := store.OpenSource(ctx, key)
		if err != nil {
			r.err = err
			ch <- r
			return
		}
		defer src.Close()
		r.snaps, r.warnings, r.err = filehistory.LoadRest(ctx, io.NewSectionReader(src, 0, from), rest, cwd)
		ch <- r
	}()
	return ch
}

// ModelName is the model the session talks to.
func (a *Agent) ModelName() string { return a.opts.ModelName }

// Conversation reads the session's transcript back as a resume would see
// it, with what was written so far.
func (a *Agent) Conversation(ctx context.Context) (*transcript.Conversation, error) {
	if err := a.writer.Flush(ctx); err != nil {
		return nil, err
	}
	conv, _, err := load(ctx, a.store, a.id, transcript.LoadOptions{NewUUID: a.opts.NewUUID, Now: a.opts.Now, Cache: a.lines}, loadHow{chain: &a.chain})
	if errors.Is(err, transcript.ErrNotFound) {
		return &transcript.Conversation{SessionID: a.id}, nil
	}
	if err != nil {
		return nil, err
	}
	if conv.SessionID == "" {
		conv.SessionID = a.id
	}
	return conv, nil
}

// ID is the session's id.
func (a *Agent) ID() string { return a.id }

// Path is the session's transcript file; "" when the store keeps it
// elsewhere than in a file.
func (a *Agent) Path() string { return a.path }

// Store is the store the session is written to (with the files beside
// it: it implements transcript.Sidecars).
func (a *Agent) Store() transcript.Store { return a.store }

// ToolSpecs are the tools the model is offered.
func (a *Agent) ToolSpecs() []model.ToolSpec { return a.tools.Specs() }

// History is the conversation so far.
func (a *Agent) History() []model.Message { return a.engine.History() }

// System returns the system prompt the next request carries.
func (a *Agent) System(ctx context.Context) ([]model.SystemBlock, error) {
	return a.prompts.Build(ctx)
}

// Run sends text as the user's next message and runs the turn.
//
// A text "/name args" naming one of the session's custom commands or
// skills sends the command's (or skill's) text instead; a command that
// cannot be expanded (a !`…` line the rules refuse) fails the turn
// before anything is sent or recorded.
//
// The command's allowed-tools rules are allowed for the turn (Grant) and
// its model names the turn's requests; both end with the turn.
func (a *Agent) Run(ctx context.Context, text string) iter.Seq2[engine.Event, error] {
	in := engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text)}}}
	if x, ok, err := a.ext.expand(ctx, text, a.opts.ModelName); err != nil {
		return failed(err)
	} else if ok {
		in = x
	}
	a.JoinLate()
	if !a.resumed && len(a.engine.History()) == 0 {
		in.Attachments = append(in.Attachments, a.environment())
	}
	listed := func(events iter.Seq2[engine.Event, error]) iter.Seq2[engine.Event, error] { return events }
	if l, sent, ok := a.ext.listingDue(); ok {
		in.Attachments, listed = append(in.Attachments, l), sent
	}
	in.Attachments = append(in.Attachments, a.mw.provider.Prompt(ctx, text)...)
	if r, ok := a.planReminder(); ok {
		in.Attachments = append(in.Attachments, r)
	}
	events := a.ext.duringTurn(a.afterTurn(ctx, len(a.engine.History()), listed(a.engine.Run(ctx, in))))
	if a.opts.FitGC {
		events = refitAfter(events)
	}
	return events
}

// system is the system prompt of the next request; with
// Options.LateEachRequest it first adds the late tools if they are ready,
// so the request that follows carries them.
func (a *Agent) system(ctx context.Context) ([]model.SystemBlock, error) {
	if a.opts.LateEachRequest {
		a.JoinLate()
	}
	return a.prompts.Build(ctx)
}

// JoinLate adds the tools Options.Late brings, as they are ready. Run
// and (with Options.LateEachRequest) each request do it; a headless run
// also does it once it has waited for its MCP servers, so that what it
// reports before its first turn (the stream-json init, /context) lists
// the tools that request will carry. Not during a turn.
func (a *Agent) JoinLate() {
	if a.opts.Late == nil || a.lateJoined {
		return
	}
	ts, instructions, ok := a.opts.Late()
	if !ok && len(ts) == 0 && instructions == "" {
		return
	}
	a.lateJoined = ok
	var added, replaced []tool.Tool
	for _, t := range ts {
		if a.lateNames[t.Spec().Name] {
			replaced = append(replaced, t)
		} else {
			added = append(added, t)
		}
	}
	err := a.tools.Add(added...)
	if err == nil {
		err = a.tools.Replace(replaced...)
	}
	if err != nil {
		if a.opts.Warn != nil {
			a.opts.Warn(fmt.Sprintf("the tools of the MCP servers that started late were not added: %v", err))
		}
		return
	}
	if a.lateNames == nil {
		a.lateNames = map[string]bool{}
	}
	for _, t := range added {
		a.lateNames[t.Spec().Name] = true
	}
	if instructions != "" {
		a.prompts.Set(prompt.MCPKey, instructions)
	}
}

// environment is the context attached to a new session's first prompt:
// facts that change from day to day stay out of the system prompt, so its
// cache survives, and are recorded with the turn, so a resume replays them.
func (a *Agent) environment() engine.Attachment {
	date := a.opts.Now().Format("2006-01-02")
	var files []instructions.File
	if a.opts.Instructions != nil {
		files = a.opts.Instructions.Start()
	}
	data := map[string]any{"currentDate": date}
	if len(files) > 0 {
		data["instructionFiles"] = records(files)
	}
	return engine.Attachment{
		Type:     "cairn_context",
		Data:     data,
		Rendered: []model.Block{model.TextBlock(StartContext(files, date))},
	}
}

// StartContext is the context reminder a new session's first prompt
// carries: the instruction files that load at the start (none: only the
// date) and the date (2006-01-02). /memory and `cairn context` measure
// the instructions of a session that has not sent its first prompt yet
// with it, so they count what will be sent.
func StartContext(files []instructions.File, date string) string {
	claudeMd := ""
	if len(files) > 0 {
		claudeMd = "# claudeMd\n" + instructions.Render(files) + "\n"
	}
	return transcript.WrapSystemReminder(contextIntro + claudeMd + "# currentDate\nToday's date is " + date + ".")
}

// readableHistory is the conversation, for a reader outside a request
// (whose build checks it): an error naming the transcript when results it
// holds in the file's mapping were cut off since (engine.CheckMapped).
func (a *Agent) readableHistory() ([]model.Message, error) {
	h := a.engine.History()
	return h, engine.CheckMapped(h)
}

// Compact compacts the conversation now (/compact), following
// instructions when given.
func (a *Agent) Compact(ctx context.Context, instructions string) (*engine.Compaction, error) {
	system, err := a.prompts.Build(ctx)
	if err != nil {
		return nil, err
	}
	history, err := a.readableHistory()
	if err != nil {
		return nil, err
	}
	h, rep, err := a.compact.Compact(ctx, history, system, a.tools.Specs(), instructions)
	if h != nil {
		a.engine.SetHistory(h)
	}
	if err == nil {
		err = a.writer.Flush(ctx)
	}
	return rep, err
}

// Summary brings the session notes up to date now, waiting for an update
// under way first, and returns them (SPEC SM5, /summary).
func (a *Agent) Summary(ctx context.Context) (string, error) {
	err := a.notes.Extract(ctx, func(ctx context.Context) (sessionmemory.Prefix, error) {
		history, err := a.readableHistory()
		if err != nil {
			return sessionmemory.Prefix{}, err
		}
		system, err := a.prompts.Build(ctx)
		return sessionmemory.HistoryPrefix(system, a.tools.Specs(), history), err
	})
	if err != nil {
		return "", fmt.Errorf("update the session notes: %w", err)
	}
	return a.notes.Read()
}

// NotesPath is the session's notes file.
func (a *Agent) NotesPath() string { return a.notes.Path() }

// transcriptOf gives the compaction manager the session's transcript.
type transcriptOf struct{ a *Agent }

func (t transcriptOf) Leaf() string { return t.a.recorder.Leaf() }
func (t transcriptOf) NewEntry(typ, parent string) transcript.Entry {
	return t.a.recorder.NewEntry(typ, parent)
}
func (t transcriptOf) Append(ctx context.Context, entries ...transcript.Entry) error {
	if err := t.a.recorder.Append(ctx, entries...); err != nil {
		return err
	}
	if !slices.ContainsFunc(entries, func(e transcript.Entry) bool { return e.IsCompactBoundary() }) {
		return nil
	}
	// A resume reads the transcript back only to its last compact
	// boundary, and so does the session: what it kept of the lines
	// before is let go (see forgetReadBack), and its name is written
	// again.
	t.a.forgetReadBack()
	if t.a.title != "" {
		return t.a.writer.Append(t.a.titleEntries()...)
	}
	return nil
}
func (t transcriptOf) Path() string { return t.a.path }
func (t transcriptOf) Reload(ctx context.Context) ([]model.Message, error) {
	conv, err := t.a.live(ctx)
	if err != nil {
		return nil, err
	}
	return conv.Messages(), nil
}

// forgetReadBack lets go of what the session keeps to read its transcript
// back cheaply (the line cache and the chain a load read: for a long
// conversation, all of its entries, most of its memory), once a
// compaction is under way and once its boundary is written. Reading back
// then stops at the boundary; a compaction that failed costs the next
// read back one read of the whole file.
func (a *Agent) forgetReadBack() {
	a.chain.forget()
	a.lines.Forget()
}

// live reads the session's transcript back as written so far, without the
// repairs a resume adds.
func (a *Agent) live(ctx context.Context) (*transcript.Conversation, error) {
	src, err := a.openWritten(ctx)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return a.loadLive(ctx, src)
}

// openWritten waits for what the writer holds to be written and opens the
// session's transcript to read it back.
func (a *Agent) openWritten(ctx context.Context) (transcript.Source, error) {
	if err := a.writer.Flush(ctx); err != nil {
		return nil, err
	}
	return a.store.OpenSource(ctx, a.id)
}

// written flushes w and reads the session key of store back, without
// repairs.
func written(ctx context.Context, w *transcript.Writer, store transcript.Store, key string) (*transcript.Conversation, error) {
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	src, err := store.OpenSource(ctx, key)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	return transcript.Load(ctx, src, transcript.LoadOptions{NoRepair: true})
}

// Close waits for the transcript to be written and releases the session.
func (a *Agent) Close() error {
	err := a.closeAll()
	a.release()
	return err
}

// closeWriter waits for the transcript to be written, and removes it when
// this start made it and the session never wrote anything, or the start
// failed (a fork's copied lines are no session of their own).
func (a *Agent) closeWriter() error {
	err := a.writer.Close()
	switch {
	case err != nil || !a.created:
	case a.startFailed:
		if a.store.Remove(context.Background(), a.id) == nil {
			a.discarded = true
		}
		_ = os.Remove(a.opts.Home.FileHistory(a.id)) // only if empty
	default:
		a.discardEmpty()
	}
	return err
}

// discardEmpty removes the transcript of a new session that holds nothing
// (no prompt was ever written: the UI opened and closed, `cairn -p
// /bogus`), and the folders it left empty, so that no empty session is
// listed or continued.
func (a *Agent) discardEmpty() {
	ctx := context.Background()
	src, err := a.store.OpenSource(ctx, a.id)
	if err != nil {
		return
	}
	size := src.Size()
	src.Close()
	if size > 0 {
		return
	}
	if names, err := a.sidecars.ListSidecars(ctx, a.id); err != nil || len(names) > 0 {
		return // something was kept beside it
	}
	if a.store.Remove(ctx, a.id) == nil {
		a.discarded = true
	}
	_ = os.Remove(a.opts.Home.FileHistory(a.id)) // only if empty
}

// Discarded reports whether Close removed the session's transcript
// because nothing was ever written to it: there is nothing to resume.
func (a *Agent) Discarded() bool { return a.discarded }
