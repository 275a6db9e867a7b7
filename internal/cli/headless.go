package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/session"
)

// extFlags are the flags hosts drive headless runs with (Claude Code's
// names): how prompts arrive, more settings, the system prompt, a
// structured answer, MCP servers, a budget, a fallback model, and runs
// that leave no transcript.
type extFlags struct {
	inputFormat      string
	settings         string
	systemPrompt     string
	appendSystemFile string
	jsonSchema       string
	mcpConfig        []string
	strictMCP        bool
	maxBudgetUSD     float64
	fallbackModel    string
	noPersistence    bool
}

func addExtensionFlags(fl *pflag.FlagSet, f *extFlags) {
	fl.StringVar(&f.inputFormat, "input-format", "text", "with -p: text (the prompt) or stream-json (one user message a line on stdin, a turn each)")
	fl.StringVar(&f.settings, "settings", "", "a settings file, or settings as JSON, above the project's")
	fl.StringVar(&f.systemPrompt, "system-prompt", "", "the system prompt to use instead of cairn's own instructions")
	fl.StringVar(&f.appendSystemFile, "append-system-prompt-file", "", "a file whose text is added to the end of the system prompt")
	fl.StringVar(&f.jsonSchema, "json-schema", "", "with -p: a JSON schema the final answer must match (in the result's structured_output)")
	fl.StringArrayVar(&f.mcpConfig, "mcp-config", nil, "MCP servers from a JSON file or string ({\"mcpServers\": …}); repeatable")
	fl.BoolVar(&f.strictMCP, "strict-mcp-config", false, "use only the MCP servers of --mcp-config")
	fl.Float64Var(&f.maxBudgetUSD, "max-budget-usd", 0, "with -p: stop once the run has cost this many US dollars")
	fl.StringVar(&f.fallbackModel, "fallback-model", "", "with -p: the model to use when the main one is overloaded")
	fl.BoolVar(&f.noPersistence, "no-session-persistence", false, "with -p: keep no transcript (the session cannot be resumed)")
}

// check rejects combinations that cannot work, before anything starts.
func (f *extFlags) check(a *agentFlags) error {
	switch f.inputFormat {
	case "text":
	case "stream-json":
		if a.outputFormat != "stream-json" {
			return usagef("--input-format stream-json needs --output-format stream-json")
		}
	default:
		return usagef("--input-format must be text or stream-json, not %q", f.inputFormat)
	}
	if f.maxBudgetUSD < 0 {
		return usagef("--max-budget-usd must be a positive amount, not %v", f.maxBudgetUSD)
	}
	if f.fallbackModel != "" && f.fallbackModel == a.model {
		return usagef("--fallback-model is the same as --model; name another model")
	}
	if f.jsonSchema != "" {
		if _, err := tools.NewStructuredOutput(json.RawMessage(f.jsonSchema)); err != nil {
			return usagef("--json-schema: %v", err)
		}
	}
	return nil
}

func (f *extFlags) streamInput() bool { return f.inputFormat == "stream-json" }

// settingsFiles is --settings as a file: the file named, or the JSON
// given written to a private temporary file; remove deletes that one.
func (f *extFlags) settingsFiles() (files []string, remove func(), err error) {
	v := strings.TrimSpace(f.settings)
	if v == "" {
		return nil, func() {}, nil
	}
	if !strings.HasPrefix(v, "{") {
		if _, err := os.Stat(v); err != nil {
			return nil, nil, usagef("--settings %s: %v; give a settings file or settings as JSON", v, err)
		}
		abs, _ := filepath.Abs(v)
		return []string{abs}, func() {}, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &probe); err != nil {
		return nil, nil, usagef("--settings is not valid JSON: %v", err)
	}
	dir, err := os.MkdirTemp("", "cairn-settings-")
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return []string{path}, func() { os.RemoveAll(dir) }, nil
}

// appendText is the text --append-system-prompt and
// --append-system-prompt-file add.
func (f *extFlags) appendText(flag string) (string, error) {
	if f.appendSystemFile == "" {
		return flag, nil
	}
	b, err := os.ReadFile(f.appendSystemFile)
	if err != nil {
		return "", usagef("--append-system-prompt-file: %v", err)
	}
	return strings.TrimSpace(strings.TrimSpace(flag) + "\n\n" + string(b)), nil
}

// mcpConfigs are the servers of --mcp-config, each value a file or JSON.
func (f *extFlags) mcpConfigs(getenv func(string) string) ([]mcp.Config, []string, error) {
	var out []mcp.Config
	var warnings []string
	for _, v := range f.mcpConfig {
		v = strings.TrimSpace(v)
		name, data := "--mcp-config", []byte(v)
		if !strings.HasPrefix(v, "{") {
			b, err := os.ReadFile(v)
			if err != nil {
				return nil, nil, usagef("--mcp-config %s: %v; give a file or JSON such as {\"mcpServers\": {…}}", v, err)
			}
			name, data = v, b
		}
		cs, w := mcp.Parse(name, data, getenv)
		out, warnings = append(out, cs...), append(warnings, w...)
	}
	return out, warnings, nil
}

// withMCPConfig adds the --mcp-config servers to those of the files (a
// server of the same name replaced), or uses only them with
// --strict-mcp-config.
func (f *extFlags) withMCPConfig(configs []mcp.Config, getenv func(string) string) ([]mcp.Config, []string, error) {
	extra, warnings, err := f.mcpConfigs(getenv)
	if err != nil {
		return nil, nil, err
	}
	if f.strictMCP {
		return extra, warnings, nil
	}
	byName := map[string]int{}
	for i, c := range configs {
		byName[c.Name] = i
	}
	for _, c := range extra {
		if i, ok := byName[c.Name]; ok {
			configs[i] = c
			continue
		}
		byName[c.Name] = len(configs)
		configs = append(configs, c)
	}
	return configs, warnings, nil
}

// inputLine is a line of --input-format stream-json: a user message
// whose text is the turn's prompt. Any other line is an error naming it.
func inputLine(n int, line string) (string, error) {
	var m struct {
		Type    string `json:"type"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return "", fmt.Errorf("stdin line %d is not JSON (%v): %s", n, err, clipLine(line))
	}
	if m.Type != "user" || (m.Message.Role != "" && m.Message.Role != "user") {
		return "", fmt.Errorf(`stdin line %d is not a user message ({"type":"user","message":{"role":"user","content":…}}): %s`, n, clipLine(line))
	}
	blocks, err := model.DecodeContent(m.Message.Content)
	if err != nil {
		return "", fmt.Errorf("stdin line %d: the message content does not decode (%v): %s", n, err, clipLine(line))
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == model.BlockText {
			parts = append(parts, b.Text)
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n"))
	if text == "" {
		return "", fmt.Errorf("stdin line %d is a user message without text: %s", n, clipLine(line))
	}
	return text, nil
}

func clipLine(s string) string {
	const n = 120
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// isInterrupt reports whether a line is Claude Code's interrupt control
// request.
func isInterrupt(line string) bool {
	var m struct {
		Type    string `json:"type"`
		Request struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
	}
	return json.Unmarshal([]byte(line), &m) == nil && m.Type == "control_request" && m.Request.Subtype == "interrupt"
}

// maxInputLine is the longest line --input-format stream-json reads.
const maxInputLine = 64 << 20

// inputRecord is a line of stdin, numbered from 1, or the error of
// reading it (a line too long, a failed read).
type inputRecord struct {
	n    int
	text string
	err  error
	// fatal is set when reading stopped at this line.
	fatal bool
}

// readLines sends each line of r on out (without its line ending), then
// closes out. A line longer than max bytes is sent as an error naming it
// (its text dropped, the reading going on); a failed read is sent as a
// fatal error naming the line it stopped at. It returns early when ctx
// ends.
func readLines(ctx context.Context, r io.Reader, max int, out chan<- inputRecord) {
	defer close(out)
	send := func(rec inputRecord) bool {
		select {
		case out <- rec:
			return true
		case <-ctx.Done():
			return false
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		var line []byte
		long, eof := false, false
		for {
			frag, err := br.ReadSlice('\n')
			if !long && len(line)+len(frag) > max+1 { // +1: the newline
				long, line = true, nil
			} else if !long {
				line = append(line, frag...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				eof = true
				break
			}
			if err != nil {
				send(inputRecord{n: n, fatal: true, err: fmt.Errorf("stdin line %d could not be read (%v); no more input is read, the session ends after the turn under way", n, err)})
				return
			}
			break
		}
		switch {
		case long:
			if !send(inputRecord{n: n, err: fmt.Errorf("stdin line %d is longer than the %s a line may be; it is skipped (send large content as a file the model can read)", n, byteSize(max))}) {
				return
			}
		case len(line) > 0:
			text := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
			if !send(inputRecord{n: n, text: text}) {
				return
			}
		}
		if eof {
			return
		}
	}
}

func byteSize(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// runStream runs one turn of the session for each user message a line
// of stdin, printing a result after each; EOF ends the session. A line
// that is no user message (or too long to read) is an error event
// naming it, and the session goes on. An interrupt control line stops
// the turn under way.
func runStream(ctx context.Context, env Env, out *printer, ag *agent.Agent, turn func(ctx context.Context, prompt string) error) error {
	lines := make(chan inputRecord)
	go readLines(ctx, env.Stdin, maxInputLine, lines)
	var queue []inputRecord
	var last error
	for {
		var l inputRecord
		if len(queue) > 0 {
			l, queue = queue[0], queue[1:]
		} else {
			if lines == nil {
				return last
			}
			var ok bool
			select {
			case l, ok = <-lines:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if !ok {
				return last
			}
		}
		if l.err != nil {
			out.line(map[string]any{"type": "system", "subtype": "error", "error": l.err.Error(), "line": l.n, "session_id": ag.ID(), "uuid": uuid.NewString()})
			fmt.Fprintln(env.Stderr, "cairn:", l.err)
			if l.fatal {
				last = l.err
			}
			continue
		}
		if strings.TrimSpace(l.text) == "" || isInterrupt(l.text) {
			continue // nothing under way to interrupt
		}
		prompt, err := inputLine(l.n, l.text)
		if err != nil {
			out.line(map[string]any{"type": "system", "subtype": "error", "error": err.Error(), "line": l.n, "session_id": ag.ID(), "uuid": uuid.NewString()})
			fmt.Fprintln(env.Stderr, "cairn:", err)
			continue
		}
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		out.start = env.Now()
		go func() { done <- turn(tctx, prompt) }()
	wait:
		for {
			select {
			case err := <-done:
				last = err
				break wait
			case next, ok := <-lines:
				if !ok {
					lines = nil
					continue
				}
				if isInterrupt(next.text) {
					cancel()
					continue
				}
				queue = append(queue, next)
			}
		}
		cancel()
		if errors.Is(last, errReported) {
			last = errReported // the turn's failure is in its result; the session goes on
		}
		if ctx.Err() != nil {
			return last
		}
		if lines == nil && len(queue) == 0 {
			return last
		}
	}
}

// errBudget ends a run that spent its --max-budget-usd.
var errBudget = errors.New("the run reached its --max-budget-usd; raise the budget or continue the session with cairn -c -p")

func (p *printer) overBudget() bool { return p.budget > 0 && p.choice.cost() >= p.budget }

// structuredNudge is the prompt that asks once more for a structured
// answer the model did not give.
const structuredNudge = "Give your final answer now by calling the StructuredOutput tool with input that matches its schema; the run's answer is that call's input."

// insist asks once more when the turn ended without a valid structured
// answer and the model has tries left.
func (p *printer) insist(ctx context.Context, done *engine.Result) (*engine.Result, error) {
	if _, ok := p.structured.Value(); ok || done == nil || done.Stop == engine.StopMaxTurns {
		return done, nil
	}
	if n, _ := p.structured.Attempts(); n >= tools.MaxStructuredAttempts {
		return done, nil
	}
	return p.turn(ctx, structuredNudge)
}

func structuredFailure(attempts int, why string) string {
	if attempts == 0 {
		return "the model gave no structured output (it never called StructuredOutput)"
	}
	return fmt.Sprintf("the structured output did not match the --json-schema after %d attempts: %s", attempts, why)
}

// headlessOptions applies the hosts' flags to the session's options:
// the system prompt, the structured answer's tool, the fallback model,
// and a transcript kept nowhere.
func (s *setup) headlessOptions(f *agentFlags) error {
	x := &f.ext
	s.opts.SystemPrompt = x.systemPrompt
	text, err := x.appendText(s.opts.AppendSystemPrompt)
	if err != nil {
		return err
	}
	s.opts.AppendSystemPrompt = text
	if x.jsonSchema != "" {
		if s.structured, err = tools.NewStructuredOutput(json.RawMessage(x.jsonSchema)); err != nil {
			return usagef("--json-schema: %v", err)
		}
		s.opts.Tools = append(s.opts.Tools, s.structured)
	}
	if x.fallbackModel != "" {
		s.opts.Model = fallback{Model: s.opts.Model, name: x.fallbackModel, warn: s.opts.Warn}
	}
	if x.noPersistence {
		dir, err := os.MkdirTemp("", "cairn-unsaved-")
		if err != nil {
			return err
		}
		s.opts.Home = session.Home{Dir: dir}
		stop := s.stop
		s.stop = func() { stop(); os.RemoveAll(dir) }
	}
	return nil
}

// mcpConfigsWith are the servers of the files — the settings layers of
// --settings (layers) among them — and of --mcp-config (only the latter
// with --strict-mcp-config), and how to connect to them.
func mcpConfigsWith(env Env, home session.Home, x *extFlags, layers []string) ([]mcp.Config, mcp.Options, []string, error) {
	var configs []mcp.Config
	var warnings []string
	if !x.strictMCP {
		configs, warnings = mcp.Load(home.Dir, env.Cwd, env.Getenv, layers...)
	}
	if len(x.mcpConfig) > 0 || x.strictMCP {
		var w []string
		var err error
		if configs, w, err = x.withMCPConfig(configs, env.Getenv); err != nil {
			return nil, mcp.Options{}, nil, err
		}
		warnings = append(warnings, w...)
	}
	connect, call, tw := mcp.EnvTimeouts(env.Getenv)
	warnings = append(warnings, tw...)
	return configs, mcp.Options{Dir: env.Cwd, Timeout: connect, CallTimeout: call, Version: agent.Version}, warnings, nil
}

// fallback sends a request to another model when the main one is
// overloaded before it answered anything (--fallback-model).
type fallback struct {
	model.Model
	name string
	warn func(string)
}

func (f fallback) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		started := false
		for ch, err := range f.Model.Stream(ctx, req) {
			if err != nil && !started && errors.Is(err, model.ErrOverloaded) && req.Model != f.name {
				if f.warn != nil {
					f.warn(fmt.Sprintf("%s is overloaded (%v); this request goes to the fallback model %s", cmp.Or(req.Model, "the model"), err, f.name))
				}
				again := *req
				again.Model = f.name
				for ch, err := range f.Model.Stream(ctx, &again) {
					if !yield(ch, err) {
						return
					}
				}
				return
			}
			started = true
			if !yield(ch, err) {
				return
			}
		}
	}
}
