package session

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// Envelope is what every chain line of a session carries besides its
// message, as Claude Code writes it.
type Envelope struct {
	SessionID  string
	CWD        string
	Version    string
	GitBranch  string // "HEAD" outside git, as Claude Code writes it
	Entrypoint string // "cli" interactive, "sdk-cli" headless
	UserType   string // "external"
	// IsSidechain and AgentID mark a subagent's lines, written to its own
	// transcript under the session's subagents/ folder.
	IsSidechain bool
	AgentID     string
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	Envelope
	// Leaf is the uuid the next entry hangs off: a resumed session's
	// current leaf; empty for a new session.
	Leaf           string
	PermissionMode string
	// Mode, when set, is the permission mode as it stands (plan mode
	// entered or left during the session), recorded on each prompt
	// instead of PermissionMode.
	Mode    func() string
	Now     func() time.Time
	NewUUID func() string
	// OnPrompt, when set, is called with the uuid of each prompt once the
	// prompt is on disk and before the model sees it (file history takes
	// its snapshot there); not for the interruption marker. Its error is
	// Prompt's.
	OnPrompt func(ctx context.Context, uuid string) error
}

// Recorder writes a session's transcript as Claude Code does: the prompt
// durably before the request; one assistant line per content block, chained
// and sharing message.id and requestId; each tool result hanging off the
// line of its tool_use (so parallel results sit on side branches, which
// the loader re-attaches); a last-prompt record after every turn. It
// implements engine.Recorder. Safe for concurrent use.
type Recorder struct {
	w    *transcript.Writer
	opts RecorderOptions

	mu         sync.Mutex
	parent     string
	promptID   string
	lastPrompt string
	toolLines  map[string]string // tool_use id → uuid of its line, for the last response
}

var _ engine.Recorder = (*Recorder)(nil)

// NewRecorder returns a recorder writing through w.
func NewRecorder(w *transcript.Writer, opts RecorderOptions) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewUUID == nil {
		opts.NewUUID = uuid.NewString
	}
	if opts.UserType == "" {
		opts.UserType = "external"
	}
	return &Recorder{w: w, opts: opts, parent: opts.Leaf}
}

// Leaf returns the uuid of the last entry recorded.
func (r *Recorder) Leaf() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.parent
}

// entry returns a chain entry with the envelope, a new uuid and parent.
func (r *Recorder) entry(typ, parent string) transcript.Entry {
	o := r.opts
	return transcript.Entry{
		Type: typ, UUID: o.NewUUID(), ParentUUID: parent,
		SessionID: o.SessionID, CWD: o.CWD, Version: o.Version, GitBranch: o.GitBranch,
		Entrypoint: o.Entrypoint, UserType: o.UserType,
		IsSidechain: o.IsSidechain, AgentID: o.AgentID,
		Timestamp: transcript.FormatTime(o.Now()),
	}
}

// NewEntry returns a chain entry of the session — envelope, a new uuid,
// the time — hanging off parent, for writers besides the recorder's own
// methods (compaction records) to pass to Append.
func (r *Recorder) NewEntry(typ, parent string) transcript.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entry(typ, parent)
}

// SetLeaf makes the next entry hang off uuid.
func (r *Recorder) SetLeaf(uuid string) {
	r.mu.Lock()
	r.parent = uuid
	r.mu.Unlock()
}

// Append writes entries that continue the chain (a resume's repairs,
// compaction records) and moves the leaf to the last of them.
func (r *Recorder) Append(ctx context.Context, entries ...transcript.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	r.mu.Lock()
	r.parent = entries[len(entries)-1].UUID
	r.mu.Unlock()
	return r.w.AppendDurable(ctx, entries...)
}

// Prompt implements engine.Recorder: the prompt and an attachment line for
// each attachment (with what it rendered to, so a resume sends the same
// bytes) are synced before it returns.
func (r *Recorder) Prompt(ctx context.Context, msg model.Message, attachments []engine.Attachment) ([]string, error) {
	r.mu.Lock()
	e := r.entry(transcript.TypeUser, r.parent)
	text := msg.Text()
	interrupt := text == engine.InterruptedText
	if !interrupt {
		r.promptID = r.opts.NewUUID()
		r.lastPrompt = promptLine(text)
	}
	e.PromptID = r.promptID
	e.PermissionMode = r.opts.PermissionMode
	if r.opts.Mode != nil {
		e.PermissionMode = r.opts.Mode()
	}
	e.Message = userMessageJSON(msg)
	r.parent = e.UUID
	entries := []transcript.Entry{e}
	for _, a := range attachments {
		ae := r.entry(transcript.TypeAttachment, r.parent)
		ae.Attachment, ae.Extra = transcript.EncodeAttachment(a.Type, a.Data, a.Rendered)
		entries = append(entries, ae)
		r.parent = ae.UUID
	}
	r.mu.Unlock()
	if err := r.w.AppendDurable(ctx, entries...); err != nil || interrupt || r.opts.OnPrompt == nil {
		return uuidsOf(entries), err
	}
	return uuidsOf(entries), r.opts.OnPrompt(ctx, e.UUID)
}

func uuidsOf(entries []transcript.Entry) []string {
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.UUID
	}
	return ids
}

// promptLine is a prompt as the session list shows it: one line, at most
// 200 characters.
func promptLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = strings.TrimSpace(string(r[:200])) + "…"
	}
	return s
}

// userMessageJSON stores a prompt that is plain text as a string, as
// Claude Code stores typed prompts, and anything else as blocks.
func userMessageJSON(msg model.Message) json.RawMessage {
	var o jsonw.Object
	o.Str("role", model.RoleUser)
	if len(msg.Content) == 1 && msg.Content[0].Type == model.BlockText && len(msg.Content[0].Extra) == 0 {
		o.Raw("content", jsonw.String(msg.Content[0].Text))
	} else {
		content, _ := jsonw.Marshal(msg.Content) // blocks always encode
		o.Raw("content", content)
	}
	return o.Bytes()
}

// Response implements engine.Recorder: one line per content block.
func (r *Recorder) Response(ctx context.Context, resp *model.Response) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var entries []transcript.Entry
	r.toolLines = make(map[string]string)
	for _, b := range resp.Content {
		e := r.entry(transcript.TypeAssistant, r.parent)
		e.Message = assistantMessageJSON(resp, b)
		e.RequestID = resp.RequestID
		entries = append(entries, e)
		r.parent = e.UUID
		if b.Type == model.BlockToolUse {
			r.toolLines[b.ID] = e.UUID
		}
	}
	if len(entries) == 0 {
		// An empty reply still gets a line, so the chain records it.
		e := r.entry(transcript.TypeAssistant, r.parent)
		e.Message = assistantMessageJSON(resp, model.Block{})
		e.RequestID = resp.RequestID
		entries = append(entries, e)
		r.parent = e.UUID
	}
	return uuidsOf(entries), r.w.Append(entries...)
}

func assistantMessageJSON(resp *model.Response, b model.Block) json.RawMessage {
	content := []byte("[]")
	if b.Type != "" {
		content, _ = jsonw.Marshal([]model.Block{b}) // blocks always encode
	}
	usage, _ := jsonw.Marshal(resp.Usage)
	var o jsonw.Object
	o.Str("id", resp.ID)
	o.Str("type", "message")
	o.Str("role", model.RoleAssistant)
	o.Str("model", resp.Model)
	o.Raw("content", content)
	if resp.StopReason != "" {
		o.Str("stop_reason", resp.StopReason)
	} else {
		o.Null("stop_reason")
	}
	o.Null("stop_sequence")
	o.Raw("usage", usage)
	return o.Bytes()
}

// Results implements engine.Recorder. Each result's parent is the line of
// its own tool_use; the turn continues from the last result.
func (r *Recorder) Results(ctx context.Context, resp *model.Response, results []engine.Outcome) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var entries []transcript.Entry
	for _, o := range results {
		parent := r.toolLines[o.Call.ID]
		if parent == "" {
			parent = r.parent
		}
		e := r.entry(transcript.TypeUser, parent)
		e.PromptID = r.promptID
		e.SourceToolAssistantUUID = parent
		msg := model.Message{Role: model.RoleUser, Content: []model.Block{engine.ResultBlock(o.Call.ID, o.Result)}}
		e.Message = userMessageJSON(msg)
		if o.Result.Detail != nil {
			if d, err := jsonw.Marshal(o.Result.Detail); err == nil {
				e.ToolUseResult = d
			}
		} else if o.Result.IsError && len(o.Result.Content) > 0 {
			e.ToolUseResult = jsonw.String("Error: " + o.Result.Content[0].Text)
		}
		if o.Decision != nil {
			if d, err := jsonw.Marshal(o.Decision); err == nil {
				e.Extra = map[string]json.RawMessage{"permissionDecision": d}
			}
		}
		entries = append(entries, e)
	}
	// What a result sends after the results (a loaded skill's text) is a
	// meta user line of its own, chained after them, naming its call as
	// Claude Code's sourceToolUseID does.
	for _, o := range results {
		if len(o.Result.After) == 0 {
			continue
		}
		e := r.entry(transcript.TypeUser, entries[len(entries)-1].UUID)
		e.PromptID = r.promptID
		e.IsMeta = true
		e.Message = userMessageJSON(model.Message{Role: model.RoleUser, Content: o.Result.After})
		e.Extra = map[string]json.RawMessage{"sourceToolUseID": jsonw.String(o.Call.ID)}
		entries = append(entries, e)
	}
	if len(entries) > 0 {
		r.parent = entries[len(entries)-1].UUID
	}
	return uuidsOf(entries), r.w.Append(entries...)
}

// TurnDone implements engine.Recorder: it writes the last-prompt record
// and waits for every line of the turn to be written. A subagent's
// transcript gets no last-prompt record: it is not a session to resume,
// and its newest line is its leaf.
func (r *Recorder) TurnDone(ctx context.Context) error {
	if r.opts.IsSidechain {
		return r.w.Flush(ctx)
	}
	r.mu.Lock()
	lp := transcript.Entry{Type: transcript.TypeLastPrompt, LastPrompt: r.lastPrompt, LeafUUID: r.parent, SessionID: r.opts.SessionID}
	r.mu.Unlock()
	if err := r.w.Append(lp); err != nil {
		return err
	}
	return r.w.Flush(ctx)
}
