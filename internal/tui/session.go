package tui

import (
	"context"
	"iter"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/history"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/filehistory"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// Session is what the UI needs of an open session; *agent.Agent is one.
// It is not safe for concurrent use: the UI calls it from one goroutine
// at a time, and during a Run only from inside the loop over the Run's
// events (where the engine is paused).
type Session interface {
	ID() string
	Path() string
	ModelName() string
	// Run sends text as the user's next message; cancelling ctx
	// interrupts the turn, leaving the transcript valid.
	Run(ctx context.Context, text string) iter.Seq2[engine.Event, error]
	Compact(ctx context.Context, instructions string) (*engine.Compaction, error)
	Pin(ctx context.Context, target string) (compact.Pin, error)
	// History is the conversation as the model sees it.
	History() []model.Message
	// Used is the context's size as the auto-compaction trigger counts
	// it; Window is what it is measured against.
	Used(ctx context.Context) (int64, error)
	Window() tokens.Window
	// Tools are the session's tools: they say how their calls are shown.
	Tools() *tool.Registry
	// SetModel makes the next requests go to the model called name
	// (/model); ModelName says it from then on.
	SetModel(name string) error
	// Rename names the session (/rename); Title is its name, "" when none.
	Rename(ctx context.Context, title string) error
	Title() string
	RewindPlan(messageID string) (*filehistory.Plan, error)
	Rewind(ctx context.Context, messageID string, code, conversation bool) (*filehistory.Plan, error)
	Close() error
}

// Opener opens another session for /resume (ref is a session id or a
// transcript path) and /clear (ref is ""). The UI closes the session it
// leaves.
type Opener func(ctx context.Context, ref string) (Session, error)

// Options are what the UI runs with. Session and Open are required; the
// reports may be nil, and the command then says it is not available.
type Options struct {
	Session Session
	Open    Opener
	// Home and Cwd are where sessions are listed from (/resume) and the
	// project the prompt history is kept for.
	Home session.Home
	Cwd  string
	// History keeps the prompts typed (↑/↓, history.jsonl). May be nil.
	History *history.Writer
	// Asker carries the permission gate's questions to the UI. May be nil.
	Asker *Asker
	// Notices carries what the rest of cairn has to tell the user while
	// the UI owns the terminal (hook messages, retries). May be nil.
	Notices *Notices
	// Context is the /context report of the session; Memory the /memory
	// report; Summary the session memory's summary (/summary);
	// Permissions the rules in force (/permissions).
	Context     func(ctx context.Context, s Session) (string, error)
	Memory      func(ctx context.Context) (string, error)
	Summary     func(ctx context.Context, s Session) (string, error)
	Permissions func() string
	// Status is /status: the version, model, session, folder, API and
	// settings in force. AddDir adds a folder the session may work in
	// (/add-dir) and says what it did. Export is the conversation as
	// text (/export). MCP, Hooks and Agents are the /mcp, /hooks and
	// /agents reports; Doctor runs the /doctor checks. Each may be nil.
	Status func(s Session) string
	AddDir func(dir string) (string, error)
	Export func(ctx context.Context, s Session) (string, error)
	MCP    func(ctx context.Context) (string, error)
	Hooks  func() string
	Agents func() string
	Doctor func(ctx context.Context) (string, error)
	// Cost prices a response's usage in US dollars for /cost. May be nil.
	Cost func(modelName string, u model.Usage) float64
	// Spent, when set, is what every request of the run cost so far, side
	// requests included (compaction summaries, session notes, memory,
	// folds); /cost shows it beside the conversation's own cost.
	Spent func() float64
	// Prompt is sent as the first message when not empty; PickResume
	// opens the /resume picker at once (cairn -r without an id).
	Prompt     string
	PickResume bool
	// Commands are the session's custom commands and skills: /help lists
	// them, the completion menu offers them, and typing one sends it to
	// the session as the prompt.
	Commands []Command
	// StatusLine, when set, is run for the line under the footer
	// (settings "statusLine"), at most every 300 ms and never waited for.
	StatusLine StatusLine
	// Starting, when set, names what is still starting in the background
	// (MCP servers): a line above the footer lists them while there are
	// any. Whoever sets it writes a notice when they are ready, so the
	// screen is drawn again.
	Starting func() []string
	// Theme is ThemeDark ("" too), ThemeLight or ThemePlain (no
	// colours, for NO_COLOR): the UI's colours and the Markdown style.
	Theme string
	// Warnings are shown when the UI starts (from loading the session).
	Warnings []string
	// Now is the clock (time.Now when nil): the spinner's elapsed time
	// and the prompt history's timestamps come from it.
	Now func() time.Time
}
