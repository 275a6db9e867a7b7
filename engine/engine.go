// Package engine is the agent loop: it sends the conversation to the model,
// streams the reply, runs the tools the model calls and loops until the
// model stops (SPEC E1, E2). It holds no business logic of its own — what
// goes into a request, how a transcript is written, which calls are
// allowed, how context is compacted all come in through Config — and it
// reports everything it does as a stream of Events that the command line,
// the terminal UI and the tests consume alike.
package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Config is what a Session runs with.
type Config struct {
	Model     model.Model
	ModelName string
	MaxTokens int
	Tools     *tool.Registry
	Env       *tool.Env
	// System returns the system prompt for the next request.
	System func(ctx context.Context) ([]model.SystemBlock, error)
	// Recorder keeps the transcript. Required.
	Recorder Recorder
	// Prepare runs before every request: the compaction pipeline's hook
	// (SPEC §5). It may replace the history and choose what is sent. Nil
	// sends the history as it is.
	Prepare func(ctx context.Context, p *Prep) error
	// Gate decides whether a tool call may run (permissions, PreToolUse
	// hooks) and may change its input. Nil allows everything.
	Gate func(ctx context.Context, t tool.Tool, call model.Block) Verdict
	// ShapeResults may change the results of one response's calls
	// together, before they are recorded (large results moved to files,
	// SPEC C0). May be nil.
	ShapeResults func(ctx context.Context, outcomes []Outcome) []Outcome
	// AfterTool may change a call's result (PostToolUse hooks). May be nil.
	AfterTool func(ctx context.Context, t tool.Tool, call model.Block, res tool.Result) tool.Result
	// BeforePrompt may refuse the user's message (an error ends the turn
	// before anything is recorded) or attach context to it
	// (UserPromptSubmit hooks). May be nil.
	BeforePrompt func(ctx context.Context, in Input) (Input, error)
	// BeforeStop runs when the model ends its turn; a non-empty answer is
	// sent to the model as a user message and the turn goes on (Stop
	// hooks). again is set when the turn already went on that way once.
	BeforeStop func(ctx context.Context, res *Result, again bool) (continueWith string)
	// AfterResponse is told of every response once it is recorded: the
	// request exactly as it was sent, the response, and the uuids of the
	// response's transcript lines. Background work that must share the
	// conversation's prompt-cache prefix starts from it (session-memory
	// notes, SPEC SM2). It runs on the loop's goroutine, must return at
	// once, and must not change req or resp. May be nil.
	AfterResponse func(ctx context.Context, req *model.Request, resp *model.Response, ids []string)
	// MaxTurns stops the loop after this many model requests; 0 is no limit.
	MaxTurns int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Recorder writes what happens to the session's transcript.
type Recorder interface {
	// Prompt records the user's message and the context attached to it;
	// they are on stable storage when Prompt returns, before the model is
	// called. It returns the uuids of the lines written.
	Prompt(ctx context.Context, msg model.Message, attachments []Attachment) ([]string, error)
	// Response records a complete model response and returns the uuids
	// of its lines.
	Response(ctx context.Context, resp *model.Response) ([]string, error)
	// Results records the results answering a response's tool calls, in
	// call order, and returns the uuids of their lines.
	Results(ctx context.Context, resp *model.Response, results []Outcome) ([]string, error)
	// TurnDone marks the end of a turn and waits until everything
	// recorded is written.
	TurnDone(ctx context.Context) error
}

// Input is what the user sends: a message, and context the harness
// attaches to it (environment, instruction files, recalled memories).
type Input struct {
	Message     model.Message
	Attachments []Attachment
	// Model, when set, is the model this turn's requests name instead of
	// Config.ModelName (a custom command's model); the next turn goes
	// back to Config.ModelName.
	Model string
}

// Attachment is context added to a user turn. The model reads Rendered,
// appended to the turn's message; the transcript keeps Type and Data
// beside it, as Claude Code keeps its attachments.
type Attachment struct {
	Type     string
	Data     map[string]any
	Rendered []model.Block
}

// Outcome is one tool call and what it produced.
type Outcome struct {
	Call   model.Block // the tool_use block, as the model sent it
	Result tool.Result
	// Decision is the Gate's record of why the call ran or not, kept in
	// the transcript (permissionDecision); nil without a Gate.
	Decision any
}

// Prep is what Prepare sees of the next request and may change.
type Prep struct {
	// History is the conversation. Prepare may set a new one (after a
	// compaction) and must then set Replaced.
	History  []model.Message
	Replaced bool
	// Send, when set, is what the request carries instead of History (a
	// projection that leaves the history whole).
	Send []model.Message
	// Used is the context's size as the trigger counts it (SPEC K1).
	Used int64
	// Overflow is set when the model refused the last attempt of this
	// request as too long: Prepare must make it smaller.
	Overflow *model.APIError
	// System and Tools are the rest of the request, for a summary request
	// that shares its cache prefix.
	System []model.SystemBlock
	Tools  []model.ToolSpec
	// ContextManagement and Betas go on the request (server-side clearing).
	ContextManagement json.RawMessage
	Betas             []string
	// Notices are told to the user; Compaction reports a compaction.
	Notices    []string
	Compaction *Compaction
	// Status tells the user at once what Prepare is busy with: a word,
	// as Claude Code's status events name it ("compacting"), then
	// perhaps ": " and how far it has got ("compacting: part 2"); ""
	// when it is done.
	Status func(string)
}

// Compaction reports one compaction, for the user and the stream-json
// compact_boundary event.
type Compaction struct {
	Trigger    string // "auto", "manual", or "overflow"
	PreTokens  int64
	PostTokens int64
	Duration   time.Duration
	// ModelTime is the part of Duration spent waiting for the model (the
	// summary); the rest is cairn's own work.
	ModelTime    time.Duration
	BoundaryUUID string
	// Summary says, in a line, what was done.
	Summary string
}

// Verdict is a Gate's answer about one call.
type Verdict struct {
	Allow bool
	// Reason tells the model why the call was refused.
	Reason string
	// Input, when set, replaces the call's input (a hook rewrote it).
	Input json.RawMessage
	// Record is kept with the call's result in the transcript.
	Record any
	// EndTurn, with Allow false, ends the turn once this response's
	// results are recorded: no further request is made, and the calls of
	// the response not started yet do not run (a person refused the call
	// and takes the control back).
	EndTurn bool
}

// Session is one conversation with the model. One goroutine owns it: Run
// must not be called again before the previous Run's sequence has ended.
type Session struct {
	cfg     Config
	history []model.Message
	// usage is the last response's usage, reported for history[usageAt];
	// usageAt is -1 when no response since the history began (or was
	// compacted) reported any.
	usage   model.Usage
	usageAt int
}

// New returns a session continuing history (empty for a new session).
func New(cfg Config, history []model.Message) *Session {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Session{cfg: cfg, history: history, usageAt: -1}
}

// SetHistory replaces the conversation (after a compaction made outside a
// turn, such as /compact). It must not be called during Run.
func (s *Session) SetHistory(h []model.Message) { s.history, s.usageAt = h, -1 }

// SetModelName makes the next requests ask for the model called name
// (/model); the conversation stays as it is.
func (s *Session) SetModelName(name string) { s.cfg.ModelName = name }

// SetUsage tells a session continuing a transcript what its context held
// at the last response: usage reported for history[at] (SPEC K1).
func (s *Session) SetUsage(u model.Usage, at int) { s.usage, s.usageAt = u, at }

// Used is the context's size as the auto-compaction trigger counts it
// (SPEC K1): the last response's usage plus an estimate of the messages
// after it, or, before any response, an estimate of everything the
// request holds.
func (s *Session) Used(system []model.SystemBlock, tools []model.ToolSpec) int64 {
	if s.usageAt >= 0 && s.usageAt < len(s.history) {
		return tokens.Count(s.history, s.usageAt, s.usage)
	}
	return tokens.EstimateRequest(system, tools, s.history)
}

// History returns the conversation so far.
func (s *Session) History() []model.Message { return s.history }

// Texts of the messages recorded when the user interrupts, as Claude Code
// writes them.
const (
	InterruptedText        = "[Request interrupted by user]"
	InterruptedForToolText = "[Request interrupted by user for tool use]"
)

// Run sends the user's message and runs the loop until the model ends its
// turn, MaxTurns requests were made, or ctx is cancelled. It yields the
// events of the turn; the last is an EventDone with the turn's Result.
// A failure yields the error (after which the sequence ends); the
// transcript is left complete and resumable in every case.
//
// A consumer may stop early (break out of its range loop): that
// interrupts the turn as cancelling ctx does. The model's stream is
// cancelled, no tool call starts and running ones are cancelled, calls
// that got no result are answered as interrupted and the interruption is
// recorded; Run returns once all that is done, without yielding again.
// A reply that ended the turn completes it (no Stop hook runs).
func (s *Session) Run(ctx context.Context, in Input) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		t := &turn{s: s, yield: yield, cancel: cancel, start: s.cfg.Now(), model: cmp.Or(in.Model, s.cfg.ModelName)}
		res, err := t.run(ctx, in)
		if t.stopped {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		yield(Event{Type: EventDone, Done: res}, nil)
	}
}

// turn is the state of one Run.
type turn struct {
	s       *Session
	yield   func(Event, error) bool
	stopped bool // the consumer stopped listening
	// cancel cancels the turn's context, when the consumer stops.
	cancel context.CancelFunc
	start  time.Time
	res    Result
	// model is the model the turn's requests name.
	model string
	// continued is set once a BeforeStop answer kept the turn going.
	continued bool
	// refused is set once a Gate's verdict ended the turn: the calls
	// after it do not run.
	refused atomic.Bool
}

// say sends the model a message in the user's place (a Stop hook's reason).
func (t *turn) say(ctx context.Context, text string) error {
	msg := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(text)}}
	ids, err := t.s.cfg.Recorder.Prompt(ctx, msg, nil)
	if err != nil {
		return fmt.Errorf("record the message: %w", err)
	}
	msg.IDs = ids
	t.s.history = append(t.s.history, msg)
	t.emit(Event{Type: EventUser, Message: &msg})
	return nil
}

// emit yields e unless the consumer stopped; when the consumer says stop,
// the turn's context is cancelled, which stops the model and the tools.
func (t *turn) emit(e Event) {
	if !t.stopped && !t.yield(e, nil) {
		t.stopped = true
		t.cancel()
	}
}

func (t *turn) run(ctx context.Context, in Input) (*Result, error) {
	cfg := t.s.cfg
	if cfg.BeforePrompt != nil {
		var err error
		if in, err = cfg.BeforePrompt(ctx, in); err != nil {
			return nil, err
		}
	}
	ids, err := cfg.Recorder.Prompt(ctx, in.Message, in.Attachments)
	if err != nil {
		return nil, fmt.Errorf("record the prompt: %w", err)
	}
	prompt := model.Message{Role: model.RoleUser, Content: append([]model.Block(nil), in.Message.Content...), IDs: ids}
	for _, a := range in.Attachments {
		prompt.Content = append(prompt.Content, a.Rendered...)
	}
	t.s.history = append(t.s.history, prompt)
	t.emit(Event{Type: EventUser, Message: &prompt})

	// Recording must finish even when the turn is cancelled.
	saveCtx := context.WithoutCancel(ctx)
	for {
		if cfg.MaxTurns > 0 && t.res.Turns >= cfg.MaxTurns {
			t.res.Stop = StopMaxTurns
			break
		}
		if ctx.Err() != nil || t.stopped {
			return t.interrupted(saveCtx, ctx.Err())
		}
		req, resp, err := t.request(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return t.interrupted(saveCtx, ctx.Err())
			}
			cfg.Recorder.TurnDone(saveCtx)
			return nil, err
		}
		t.res.Turns++
		t.res.Usage = resp.Usage
		t.s.usage, t.s.usageAt = resp.Usage, len(t.s.history)
		t.res.addCost(resp.Usage)
		ids, err := cfg.Recorder.Response(saveCtx, resp)
		if err != nil {
			return nil, fmt.Errorf("record the response: %w", err)
		}
		msg := model.Message{Role: model.RoleAssistant, Content: resp.Content, IDs: ids}
		t.s.history = append(t.s.history, msg)
		t.emit(Event{Type: EventAssistant, Message: &msg, Response: resp})
		t.res.Text = msg.Text()
		if cfg.AfterResponse != nil {
			cfg.AfterResponse(ctx, req, resp, ids)
		}

		calls := msg.ToolUses()
		if len(calls) == 0 {
			t.res.Stop = StopEndTurn
			if cfg.BeforeStop != nil && ctx.Err() == nil {
				if more := cfg.BeforeStop(ctx, &t.res, t.continued); more != "" {
					t.continued = true
					if err := t.say(ctx, more); err != nil {
						return nil, err
					}
					continue
				}
			}
			break
		}
		outcomes := t.runTools(ctx, calls)
		if cfg.ShapeResults != nil {
			outcomes = cfg.ShapeResults(ctx, outcomes)
		}
		ids, err = cfg.Recorder.Results(saveCtx, resp, outcomes)
		if err != nil {
			return nil, fmt.Errorf("record tool results: %w", err)
		}
		results := resultMessage(outcomes)
		results.IDs = ids
		t.s.history = append(t.s.history, results)
		t.emit(Event{Type: EventUser, Message: &results})
		if ctx.Err() != nil {
			return t.interrupted(saveCtx, ctx.Err())
		}
		if text, ok := endsTurn(outcomes); ok {
			t.res.Stop, t.res.Text = StopTool, text
			break
		}
	}
	t.res.Duration = t.s.cfg.Now().Sub(t.start)
	if err := cfg.Recorder.TurnDone(saveCtx); err != nil {
		return nil, fmt.Errorf("record the end of the turn: %w", err)
	}
	return &t.res, nil
}

// interrupted ends a cancelled turn: the transcript gets Claude Code's
// interruption marker so a resume knows the turn did not finish.
func (t *turn) interrupted(ctx context.Context, cause error) (*Result, error) {
	cfg := t.s.cfg
	marker := model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(InterruptedText)}}
	ids, err := cfg.Recorder.Prompt(ctx, marker, nil)
	if err != nil {
		return nil, fmt.Errorf("record the interruption: %w", err)
	}
	marker.IDs = ids
	t.s.history = append(t.s.history, marker)
	if err := cfg.Recorder.TurnDone(ctx); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("interrupted: %w", cause)
}

// request builds and streams one model request. A request the model
// refuses as too long goes back through Prepare (which compacts) and is
// sent again, at most twice a turn. It returns the request the response
// answers.
func (t *turn) request(ctx context.Context) (*model.Request, *model.Response, error) {
	cfg := t.s.cfg
	var overflow *model.APIError
	for attempt := 0; ; attempt++ {
		req, err := t.build(ctx, overflow)
		if err != nil {
			return nil, nil, err
		}
		resp, err := t.stream(ctx, req)
		var apiErr *model.APIError
		if err != nil && cfg.Prepare != nil && attempt < 2 && errors.Is(err, model.ErrPromptTooLong) && errors.As(err, &apiErr) && ctx.Err() == nil {
			t.emit(Event{Type: EventNotice, Text: "the request did not fit the context window; compacting and sending it again"})
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			overflow = apiErr
			continue
		}
		return req, resp, err
	}
}

// build assembles the next request, letting Prepare compact the history
// first.
func (t *turn) build(ctx context.Context, overflow *model.APIError) (*model.Request, error) {
	cfg := t.s.cfg
	if err := CheckMapped(t.s.history); err != nil {
		return nil, err
	}
	var system []model.SystemBlock
	if cfg.System != nil {
		var err error
		if system, err = cfg.System(ctx); err != nil {
			return nil, fmt.Errorf("build the system prompt: %w", err)
		}
	}
	req := &model.Request{Model: t.model, MaxTokens: cfg.MaxTokens, System: system}
	if cfg.Tools != nil {
		req.Tools = cfg.Tools.Specs()
	}
	msgs := t.s.history
	if cfg.Prepare != nil {
		p := &Prep{History: t.s.history, Used: t.s.Used(system, req.Tools), Overflow: overflow, System: system, Tools: req.Tools,
			Status: func(s string) { t.emit(Event{Type: EventStatus, Text: s}) }}
		if err := cfg.Prepare(ctx, p); err != nil {
			return nil, fmt.Errorf("prepare the request: %w", err)
		}
		if p.Replaced {
			t.s.history, t.s.usageAt = p.History, -1
		}
		for _, n := range p.Notices {
			t.emit(Event{Type: EventNotice, Text: n})
		}
		if p.Compaction != nil {
			t.emit(Event{Type: EventCompact, Compaction: p.Compaction})
		}
		msgs = t.s.history
		if p.Send != nil {
			msgs = p.Send
		}
		req.ContextManagement = p.ContextManagement
		req.Betas = p.Betas
	}
	req.Messages = WithCacheBreakpoint(msgs)
	return req, nil
}

// stream sends one request and collects its response.
func (t *turn) stream(ctx context.Context, req *model.Request) (*model.Response, error) {
	t.emit(Event{Type: EventRequest, Request: req})
	if err := ctx.Err(); err != nil {
		return nil, err // the consumer stopped: nothing is sent
	}
	var resp *model.Response
	for c, err := range t.s.cfg.Model.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if t.stopped {
			return nil, ctx.Err() // ends the model's stream too
		}
		switch c.Kind {
		case model.ChunkTextDelta:
			t.emit(Event{Type: EventText, Text: c.Text})
		case model.ChunkThinkingDelta:
			t.emit(Event{Type: EventThinking, Text: c.Text})
		case model.ChunkDone:
			resp = c.Response
		}
	}
	if resp == nil {
		return nil, errors.New("the model's stream ended without a response")
	}
	return resp, nil
}

// CheckMapped fails when msgs hold tool results that are slices of a
// transcript's mapping (see filemap) whose file was cut shorter since,
// with an error naming the file. A history read back from a transcript
// may hold such results: its readers (a request, a compaction, the
// session notes) check it first, instead of faulting where they read.
func CheckMapped(msgs []model.Message) error {
	return filemap.Check(resultContents(msgs))
}

// resultContents yields the contents of msgs' tool results.
func resultContents(msgs []model.Message) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, m := range msgs {
			for _, b := range m.Content {
				if b.Type == model.BlockToolResult && !yield(b.Content) {
					return
				}
			}
		}
	}
}

// WithCacheBreakpoint returns msgs with a prompt-cache breakpoint on the
// last block of the last message — Claude Code's single message-level
// breakpoint — without changing msgs.
func WithCacheBreakpoint(msgs []model.Message) []model.Message {
	if len(msgs) == 0 {
		return msgs
	}
	out := make([]model.Message, len(msgs))
	copy(out, msgs)
	last := &out[len(out)-1]
	if len(last.Content) == 0 {
		return out
	}
	content := make([]model.Block, len(last.Content))
	copy(content, last.Content)
	b := content[len(content)-1]
	extra := make(map[string]json.RawMessage, len(b.Extra)+1)
	for k, v := range b.Extra {
		extra[k] = v
	}
	extra["cache_control"] = model.CacheControl
	b.Extra = extra
	content[len(content)-1] = b
	last.Content = content
	return out
}

// runTools runs a response's tool calls: consecutive calls that are safe
// to run concurrently run together, the others one at a time, and the
// outcomes come back in call order. What a call reports while it runs
// becomes events: a line of text (tool.ReportProgress) an
// EventToolProgress, a subagent's message (tool.Report) an
// EventToolMessage. A group's EventToolCalls all come before any of its
// calls starts, so a consumer that stops at one starts none. A cancelled
// context stops running calls; calls that never ran get an interruption
// result.
func (t *turn) runTools(ctx context.Context, calls []model.Block) []Outcome {
	out := make([]Outcome, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		if t.concurrent(calls[i]) {
			for j < len(calls) && t.concurrent(calls[j]) {
				j++
			}
		}
		var wg sync.WaitGroup
		// Progress reports come to this goroutine, which owns the events;
		// one made after its call ended is dropped.
		progress, done := make(chan Event), make(chan struct{})
		for k := i; k < j; k++ {
			t.emit(Event{Type: EventToolCall, Call: &calls[k]})
		}
		for k := i; k < j; k++ {
			report := func(p tool.Progress) {
				for _, e := range progressEvents(&calls[k], p) {
					select {
					case progress <- e:
					case <-done:
						return
					}
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[k] = t.runTool(tool.WithReports(ctx, report), calls[k])
			}()
		}
		go func() { wg.Wait(); close(done) }()
	wait:
		for {
			select {
			case e := <-progress:
				t.emit(e)
			case <-done:
				break wait
			}
		}
		for k := i; k < j; k++ {
			t.emit(Event{Type: EventToolResult, Call: &out[k].Call, Result: &out[k].Result})
		}
		i = j
	}
	return out
}

// progressEvents are the events of one report of a running call.
func progressEvents(call *model.Block, p tool.Progress) []Event {
	var out []Event
	if p.Message != nil {
		out = append(out, Event{Type: EventToolMessage, Call: call, Message: p.Message, Response: p.Response, Progress: &p})
	}
	if p.Text != "" {
		out = append(out, Event{Type: EventToolProgress, Call: call, Text: p.Text})
	}
	return out
}

func (t *turn) concurrent(call model.Block) bool {
	tl, ok := t.s.cfg.Tools.Lookup(call.Name)
	return ok && tl.ConcurrencySafe(call.Input)
}

func (t *turn) runTool(ctx context.Context, call model.Block) Outcome {
	o := Outcome{Call: call}
	if ctx.Err() != nil {
		o.Result = interruptedResult()
		return o
	}
	if t.refused.Load() {
		o.Result = tool.Errorf("This call did not run: the user refused an earlier call of the same response and takes the control back.")
		return o
	}
	cfg := t.s.cfg
	var tl tool.Tool
	ok := false
	if cfg.Tools != nil {
		tl, ok = cfg.Tools.Lookup(call.Name)
	}
	if !ok {
		o.Result = tool.Errorf("No such tool available: %s", call.Name)
		return o
	}
	input := call.Input
	if cfg.Gate != nil {
		v := cfg.Gate(ctx, tl, call)
		o.Decision = v.Record
		if !v.Allow {
			o.Result = tool.Errorf("%s", v.Reason)
			if v.EndTurn {
				o.Result.EndTurn = v.Reason
				t.refused.Store(true)
			}
			return o
		}
		if v.Input != nil {
			input = v.Input
		}
	}
	res, err := tl.Run(ctx, cfg.Env, input)
	switch {
	case ctx.Err() != nil && err != nil:
		res = interruptedResult()
	case err != nil:
		res = tool.Errorf("Error: %v", err)
	}
	if cfg.AfterTool != nil && ctx.Err() == nil {
		res = cfg.AfterTool(ctx, tl, call, res)
	}
	o.Result = res
	return o
}

func interruptedResult() tool.Result {
	r := tool.Text(InterruptedForToolText)
	r.IsError = true
	return r
}

// endsTurn returns the final text of the first outcome that ends the turn.
func endsTurn(outcomes []Outcome) (string, bool) {
	for _, o := range outcomes {
		if o.Result.EndTurn != "" {
			return o.Result.EndTurn, true
		}
	}
	return "", false
}

// resultMessage is the user message answering a response's calls.
func resultMessage(outcomes []Outcome) model.Message {
	m := model.Message{Role: model.RoleUser}
	for _, o := range outcomes {
		m.Content = append(m.Content, ResultBlock(o.Call.ID, o.Result))
	}
	for _, o := range outcomes {
		m.Content = append(m.Content, o.Result.After...)
	}
	return m
}

// ResultBlock is the tool_result block carrying r.
func ResultBlock(toolUseID string, r tool.Result) model.Block {
	var content json.RawMessage
	if len(r.Content) == 1 && r.Content[0].Type == model.BlockText {
		content = jsonw.String(r.Content[0].Text)
	} else {
		content, _ = jsonw.Marshal(r.Content) // blocks always encode
	}
	b := model.Block{Type: model.BlockToolResult, ToolUseID: toolUseID, Content: content}
	if r.IsError {
		isErr := true
		b.IsError = &isErr
	}
	return b
}
