// Package workload runs a long scripted session through the whole agent —
// engine, compaction, transcript — against the fake Anthropic server with
// an enforced context window, and reports what it cost: requests, tokens
// by kind, the billed equivalent, peak context, compactions, how much of
// compaction was cairn's own work, and whether facts planted early reach
// the end. It is the measurement behind issue 5's targets.
package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/compact"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// Options shape the workload.
type Options struct {
	// Turns user prompts, each answered after StepsPerTurn tool steps.
	Turns, StepsPerTurn int
	// Window is the enforced context window, in tokens.
	Window int64
	// MinOutput and MaxOutput bound a tool result's size, in bytes.
	MinOutput, MaxOutput int
	Seed                 uint64
	// Home and Cwd are where the session lives (temporary folders).
	Home, Cwd string
	// Collapse turns context collapse on (SPEC C3).
	Collapse bool
	// ReplyMax is the most the model may write in a reply; 0 is 32,000.
	ReplyMax int64
}

// Report is what the workload measured.
type Report struct {
	Requests, SummaryRequests, TooLong int
	// FoldRequests are context collapse's; Commits its commits.
	FoldRequests, Commits           int
	Input, CacheRead, CacheCreation int64
	PeakContext                     int64
	Compactions                     int
	// OwnWork is compaction time not spent waiting for the model: the
	// largest and the mean.
	OwnWorkMax, OwnWorkMean time.Duration
	// Facts planted in the first prompt, and how many reach the last request.
	Facts, FactsAtEnd int
	Steps             int
	// Answered: the last turn ended with the model's closing answer.
	Answered bool
	// NewestKept: the last request holds the last tool call's result.
	NewestKept bool
	// Notices are what the session told the user on the way.
	Notices []string
}

// TotalInput is every input token, however billed.
func (r Report) TotalInput() int64 { return r.Input + r.CacheRead + r.CacheCreation }

// Billed is the input cost in input-token equivalents:
// input + 1.25 × cache creation + 0.1 × cache read.
func (r Report) Billed() float64 {
	return float64(r.Input) + 1.25*float64(r.CacheCreation) + 0.1*float64(r.CacheRead)
}

// CacheShare is the share of input read from the cache.
func (r Report) CacheShare() float64 {
	if r.TotalInput() == 0 {
		return 0
	}
	return float64(r.CacheRead) / float64(r.TotalInput())
}

var factRE = regexp.MustCompile(`FACT-\d+: [^.\\"]+`)

// foldPart finds the parts a fold request lists.
var foldPart = regexp.MustCompile(`(\d+)\. from (?:the message|your response)`)

// model plays the agent: tool calls of random sizes, then an answer; a
// summary request gets a summary that keeps every planted fact it can see,
// as a careful model would.
type player struct {
	mu    sync.Mutex
	rng   *rand.Rand
	opts  Options
	steps int // in the current turn
	total int
	calls int
}

func (p *player) respond(r *modeltest.Request) modeltest.Reply {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bytes.Contains(r.Body, []byte("update the session notes")) {
		return modeltest.Text("The notes are up to date.")
	}
	if bytes.Contains(r.Body, []byte("<summary></summary>")) {
		facts := factRE.FindAll(r.Body, -1)
		slices.SortFunc(facts, bytes.Compare)
		facts = slices.CompactFunc(facts, bytes.Equal)
		var b strings.Builder
		b.WriteString("<summary>The user asked for a long investigation of the service; it is under way.\n")
		for _, f := range facts {
			b.WriteString(string(f) + ".\n")
		}
		b.WriteString("</summary>")
		return modeltest.Text(b.String())
	}
	if bytes.Contains(r.Body, []byte("Write each summary as <fold n=")) {
		var b strings.Builder
		for _, m := range foldPart.FindAllSubmatch(r.Body, -1) {
			fmt.Fprintf(&b, "<fold n=%q>Fetched service logs; requests served in 0-400 ms.</fold>\n", m[1])
		}
		return modeltest.Text(b.String())
	}
	if p.steps >= p.opts.StepsPerTurn {
		p.steps = 0
		return modeltest.Text("This part of the investigation is done.")
	}
	p.steps++
	p.total++
	n := 1
	if p.rng.IntN(5) == 0 {
		n = 2 // sometimes two calls at once
	}
	var calls []model.Block
	for range n {
		p.calls++
		size := p.opts.MinOutput + p.rng.IntN(p.opts.MaxOutput-p.opts.MinOutput+1)
		calls = append(calls, modeltest.ToolUse(fmt.Sprintf("toolu_%05d", p.calls), "Fetch", fmt.Sprintf(`{"bytes":%d,"seed":%d}`, size, p.calls)))
	}
	return modeltest.Reply{Content: append([]model.Block{model.TextBlock(fmt.Sprintf("Step %d: fetching more.", p.total))}, calls...)}
}

// fetch returns as many bytes of plausible log text as asked.
type fetch struct{}

func (fetch) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "Fetch", Description: "Fetches service logs.", InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"},"seed":{"type":"integer"}}}`)}
}
func (fetch) ReadOnly(json.RawMessage) bool        { return true }
func (fetch) Destructive(json.RawMessage) bool     { return false }
func (fetch) ConcurrencySafe(json.RawMessage) bool { return true }
func (fetch) Run(_ context.Context, _ *tool.Env, in json.RawMessage) (tool.Result, error) {
	var a struct{ Bytes, Seed int }
	if err := json.Unmarshal(in, &a); err != nil {
		return tool.Errorf("bad input: %v", err), nil
	}
	var b strings.Builder
	for i := 0; b.Len() < a.Bytes; i++ {
		fmt.Fprintf(&b, "2026-11-30T10:%02d:%02d.%03dZ INFO request %d-%d served in %d ms (cache %s)\n", i/60%60, i%60, i%1000, a.Seed, i, (a.Seed*31+i*7)%400, []string{"hit", "miss"}[i%2])
	}
	return tool.Text(b.String()[:a.Bytes]), nil
}

// Run runs the workload.
func Run(ctx context.Context, o Options) (*Report, error) {
	p := &player{rng: rand.New(rand.NewPCG(o.Seed, 7)), opts: o}
	srv := modeltest.New(modeltest.Config{ContextWindow: o.Window, Respond: p.respond})
	defer srv.Close()
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "bench"})
	if err != nil {
		return nil, err
	}
	var collapse *compact.CollapseConfig
	if o.Collapse {
		collapse = &compact.CollapseConfig{}
	}
	reply := o.ReplyMax
	if reply == 0 {
		reply = 32_000
	}
	a, err := agent.Open(ctx, agent.Options{
		Home: session.Home{Dir: o.Home}, Cwd: o.Cwd, Model: m, ModelName: "claude-sonnet-4-5",
		MaxTokens: int(reply), Window: tokens.Window{Size: o.Window, MaxOutput: reply},
		Tools: []tool.Tool{fetch{}}, Entrypoint: "sdk-cli", Collapse: collapse,
	})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	rep := &Report{Facts: 3}
	prompts := []string{"Investigate why the service is slow. Keep these in mind, they matter at the end: " +
		"FACT-1: the deploy key is K-7731. FACT-2: the on-call engineer is Ada. FACT-3: the budget is 40 hours."}
	for i := 1; i < o.Turns; i++ {
		prompts = append(prompts, fmt.Sprintf("Continue the investigation, part %d.", i+1))
	}
	var own []time.Duration
	for _, prompt := range prompts {
		for ev, err := range a.Run(ctx, prompt) {
			if err != nil {
				return nil, fmt.Errorf("turn %q: %w", prompt, err)
			}
			if ev.Type == engine.EventNotice {
				rep.Notices = append(rep.Notices, ev.Text)
			}
			if ev.Type == engine.EventCompact {
				rep.Compactions++
				own = append(own, ev.Compaction.Duration-ev.Compaction.ModelTime)
			}
		}
	}
	for _, r := range srv.Requests() {
		rep.Requests++
		switch {
		case bytes.Contains(r.Body, []byte("<summary></summary>")):
			rep.SummaryRequests++
		case bytes.Contains(r.Body, []byte("Write each summary as <fold n=")):
			rep.FoldRequests++
		}
		if r.Status == 400 {
			rep.TooLong++
		}
		rep.Input += r.Usage.InputTokens
		rep.CacheRead += r.Usage.CacheReadInputTokens
		rep.CacheCreation += r.Usage.CacheCreationInputTokens
		rep.PeakContext = max(rep.PeakContext, r.Usage.InputTokens+r.Usage.CacheReadInputTokens+r.Usage.CacheCreationInputTokens)
	}
	for _, d := range own {
		rep.OwnWorkMax = max(rep.OwnWorkMax, d)
		rep.OwnWorkMean += d / time.Duration(len(own))
	}
	last := srv.Last().Body
	for i := 1; i <= rep.Facts; i++ {
		if bytes.Contains(last, []byte(fmt.Sprintf("FACT-%d:", i))) {
			rep.FactsAtEnd++
		}
	}
	rep.Steps = p.total
	rep.Answered = p.steps == 0 && p.total > 0
	if p.calls > 0 {
		rep.NewestKept = bytes.Contains(last, []byte(fmt.Sprintf(`"tool_use_id":"toolu_%05d"`, p.calls)))
	}
	src, err := a.Store().OpenSource(ctx, a.ID())
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.NewSectionReader(src, 0, src.Size()))
	src.Close()
	if err != nil {
		return nil, err
	}
	rep.Commits = bytes.Count(data, []byte(`"subtype":"context_collapse_commit"`))
	return rep, nil
}

// String renders the report as a table.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "model steps          %d (%d requests, %d of them summaries)\n", r.Steps, r.Requests, r.SummaryRequests)
	fmt.Fprintf(&b, "prompt too long      %d\n", r.TooLong)
	if r.FoldRequests > 0 || r.Commits > 0 {
		fmt.Fprintf(&b, "context collapse     %d commits, %d fold requests\n", r.Commits, r.FoldRequests)
	}
	fmt.Fprintf(&b, "input tokens         %d: %d fresh, %d cache reads, %d cache writes\n", r.TotalInput(), r.Input, r.CacheRead, r.CacheCreation)
	fmt.Fprintf(&b, "cache-read share     %.1f%%\n", 100*r.CacheShare())
	fmt.Fprintf(&b, "billed equivalent    %.0f input tokens (input + 1.25 x writes + 0.1 x reads)\n", r.Billed())
	fmt.Fprintf(&b, "peak context         %d tokens\n", r.PeakContext)
	fmt.Fprintf(&b, "compactions          %d; cairn's own work per compaction: max %v, mean %v\n", r.Compactions, r.OwnWorkMax.Round(time.Microsecond), r.OwnWorkMean.Round(time.Microsecond))
	fmt.Fprintf(&b, "planted facts        %d of %d reach the last request\n", r.FactsAtEnd, r.Facts)
	return b.String()
}
