package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/permission"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// ExtractConfig configures background extraction (SPEC M4).
type ExtractConfig struct {
	// Dir is the memory folder.
	Dir string
	// Model, ModelName and MaxTokens are the main conversation's, and
	// Tools its tools: the fork's request then starts with the same bytes
	// as the conversation's and reads them from the prompt cache. The
	// permission layer, not the tool list, keeps the fork in Dir.
	Model     model.Model
	ModelName string
	MaxTokens int
	Tools     *tool.Registry
	// MaxTurns bounds the fork's requests (0: 5).
	MaxTurns int
	// Every runs extraction after every Every-th eligible turn (0: 1).
	Every int
	// Timeout bounds one extraction (0: 5 minutes).
	Timeout time.Duration
	Now     func() time.Time
	// Warn hears about failed extractions. May be nil.
	Warn func(string)
	// Done, when set, hears about each finished extraction (tests).
	Done func(Extraction)
}

// Extraction reports one finished extraction.
type Extraction struct {
	Requests int
	Usage    model.Usage
	Wrote    []string // files written or edited in Dir
	Err      error
}

// Extractor runs extraction in the background after turns, one at a
// time: a turn that ends while one runs is taken up when it finishes (the
// newest such turn only). Safe for concurrent use.
type Extractor struct {
	cfg ExtractConfig

	mu       sync.Mutex
	running  bool
	trailing *snapshot
	eligible int
	wg       sync.WaitGroup
}

// snapshot is the conversation a fork starts from.
type snapshot struct {
	system  []model.SystemBlock
	history []model.Message
}

// NewExtractor returns an extractor.
func NewExtractor(cfg ExtractConfig) *Extractor {
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = 5
	}
	if cfg.Every == 0 {
		cfg.Every = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Extractor{cfg: cfg}
}

// AfterTurn is told that a turn of the main conversation ended: history
// is the whole conversation and turn the index of the turn's first
// message. It returns at once. Extraction is skipped when the turn itself
// wrote to the memory folder (the main agent kept its memory already) and
// throttled to every Every-th turn; it starts in the background, or after
// the running one.
func (x *Extractor) AfterTurn(system []model.SystemBlock, history []model.Message, turn int) (started bool) {
	if turn < 0 || turn > len(history) || len(history) == 0 {
		return false
	}
	if x.wroteMemory(history[turn:]) {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.eligible++
	if x.eligible < x.cfg.Every {
		return false
	}
	x.eligible = 0
	snap := &snapshot{system: slices.Clone(system), history: slices.Clone(history)}
	if x.running {
		x.trailing = snap
		return false
	}
	x.running = true
	x.wg.Add(1)
	go x.loop(snap)
	return true
}

// Wait waits until no extraction runs, or ctx ends.
func (x *Extractor) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { x.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (x *Extractor) loop(snap *snapshot) {
	defer x.wg.Done()
	for snap != nil {
		rep := x.run(snap)
		if rep.Err != nil && x.cfg.Warn != nil {
			x.cfg.Warn(fmt.Sprintf("memory extraction: %v", rep.Err))
		}
		if x.cfg.Done != nil {
			x.cfg.Done(rep)
		}
		x.mu.Lock()
		snap, x.trailing = x.trailing, nil
		if snap == nil {
			x.running = false
		}
		x.mu.Unlock()
	}
}

func (x *Extractor) wroteMemory(msgs []model.Message) bool {
	for _, m := range msgs {
		for _, b := range m.ToolUses() {
			if Wrote(x.cfg.Dir, b.Name, b.Input) {
				return true
			}
		}
	}
	return false
}

// extractPrompt is the instruction the fork is given after the
// conversation.
func extractPrompt(dir, index string) string {
	if index == "" {
		index = "(empty)"
	}
	return fmt.Sprintf(`Stop the task for a moment: you are now keeping long-term memory, not answering the user. Look over the conversation above, chiefly its latest messages, for anything a future conversation in this project would need and could not find in the code, its history or the instruction files — facts about the user, feedback on how to work, facts about the project, pointers to outside information — following the memory rules of your instructions.

Save each in its own file in %s (front matter with name, description and type; the memory, then **Why:** and **How to apply:**) and add a line for it to %s. Update an existing memory rather than adding a near copy. You may only read and write files in that folder; other tools and other paths are refused. You have at most a few steps: write what is worth keeping, then stop. If nothing is worth keeping, reply "Nothing to save." and stop.

The index as it stands:
%s`, dir, IndexName, index)
}

// run forks the conversation and lets the model write memories.
func (x *Extractor) run(snap *snapshot) Extraction {
	ctx, cancel := context.WithTimeout(context.Background(), x.cfg.Timeout)
	defer cancel()
	index, _ := ReadIndex(x.cfg.Dir)
	gate, err := Confine(x.cfg.Dir)
	if err != nil {
		return Extraction{Err: err}
	}
	var rep Extraction
	var mu sync.Mutex
	env := tool.NewEnv(x.cfg.Dir)
	env.Now = x.cfg.Now
	sess := engine.New(engine.Config{
		Model: x.cfg.Model, ModelName: x.cfg.ModelName, MaxTokens: x.cfg.MaxTokens,
		Tools: x.cfg.Tools, Env: env, Recorder: discard{},
		System: func(context.Context) ([]model.SystemBlock, error) { return snap.system, nil },
		Gate: func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
			v := gate(ctx, t, call)
			if v.Allow && Wrote(x.cfg.Dir, call.Name, call.Input) {
				mu.Lock()
				rep.Wrote = append(rep.Wrote, pathOf(call.Input))
				mu.Unlock()
			}
			return v
		},
		MaxTurns: x.cfg.MaxTurns, Now: x.cfg.Now,
	}, snap.history)
	in := engine.Input{Message: model.Message{Role: model.RoleUser, Content: []model.Block{model.TextBlock(extractPrompt(x.cfg.Dir, index))}}}
	for ev, err := range sess.Run(ctx, in) {
		if err != nil {
			rep.Err = err
			break
		}
		if ev.Type == engine.EventDone {
			rep.Requests, rep.Usage = ev.Done.Turns, ev.Done.Total
		}
	}
	return rep
}

func pathOf(input json.RawMessage) string {
	var in struct {
		Path string `json:"file_path"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Path
}

// forkTools are the tools a memory fork may call; the permission layer
// decides which paths.
var forkTools = []string{"Read", "Write", "Edit", "Glob", "Grep"}

// Confine returns a Gate that lets a call through only when it is one of
// the file tools and the permission layer allows it with the memory
// folder as the whole project, in dontAsk mode, with one allow rule for
// writing there: reads and writes outside the folder, and every other
// tool, are refused whatever the model is told. Writes that would break
// the index's limits are refused too.
func Confine(dir string) (func(context.Context, tool.Tool, model.Block) engine.Verdict, error) {
	c, err := permission.FromSettings(&settings.Permissions{}, permission.Options{
		ProjectDir: dir, Cwd: dir, Mode: permission.ModeDontAsk, Headless: true,
		AllowedTools: AllowRules(dir)[1:],
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, t tool.Tool, call model.Block) engine.Verdict {
		if !slices.Contains(forkTools, call.Name) {
			return engine.Verdict{Reason: fmt.Sprintf("%s is not available while keeping memory: only %s on files in %s.", call.Name, strings.Join(forkTools, ", "), dir)}
		}
		if err := CheckWrite(dir, call.Name, call.Input); err != nil {
			return engine.Verdict{Reason: err.Error()}
		}
		d := c.Check(ctx, t, call.Input)
		return engine.Verdict{Allow: d.Behavior == permission.Allow, Reason: d.Reason, Record: d.Record(c.Mode())}
	}, nil
}

// discard is a Recorder that keeps nothing: a fork is not part of the
// session's transcript.
type discard struct{}

func (discard) Prompt(context.Context, model.Message, []engine.Attachment) ([]string, error) {
	return nil, nil
}
func (discard) Response(context.Context, *model.Response) ([]string, error) { return nil, nil }
func (discard) Results(context.Context, *model.Response, []engine.Outcome) ([]string, error) {
	return nil, nil
}
func (discard) TurnDone(context.Context) error { return nil }
