package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/fsfault"
	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
	"github.com/cairn-dev/cairn/transcript"
)

// Reference limits of large tool results (SPEC C0), in characters.
const (
	// ResultLimit is the largest result kept inline.
	ResultLimit = 50_000
	// BashResultLimit is Bash's: its output is capped near it anyway.
	BashResultLimit = 30_000
	// MessageBudget bounds the results of one response together.
	MessageBudget = 200_000
	// PreviewBytes is how much of a spilled result stays inline.
	PreviewBytes = 2_000
)

// NeverSpill, as a tool's limit, keeps its results inline whatever their
// size: Read bounds its own output and is how a spilled result is read
// back, so spilling it would only send the model in circles.
const NeverSpill = -1

// OffloadConfig configures Offload.
type OffloadConfig struct {
	// Dir is the session's folder on disk, where the model reads a result
	// back (Dir/tool-results/<tool_use_id>.txt names it in the preview).
	// Without it nothing is spilled.
	Dir string
	// Store keeps the files beside the session SessionID: a result is
	// written to it as "tool-results/<tool_use_id>.txt". nil is the file
	// store Dir belongs to (Dir is then <project>/<sessionId>).
	Store     transcript.Sidecars
	SessionID string
	// Limit is the largest result kept inline; 0 is ResultLimit.
	Limit int
	// Tools are the session's tools: a tool's own limit
	// (tool.ResultLimiter: Bash's BashResultLimit, Read's NeverSpill)
	// overrides Limit for its results. May be nil.
	Tools *tool.Registry
	// Limits overrides both by tool name. May be nil.
	Limits map[string]int
	// Budget bounds one response's results together; 0 is MessageBudget.
	Budget int
	// Preview is how many bytes of a spilled result stay inline; 0 is
	// PreviewBytes.
	Preview int
	// Warn hears about a result that could not be written (it then stays
	// inline). May be nil.
	Warn func(string)
}

// Offload returns the engine's ShapeResults hook for large tool results
// (SPEC C0): a text result over its tool's limit is written to a file in
// the session's folder and replaced by a preview that names the file, in
// Claude Code's <persisted-output> format, and its toolUseResult gains
// persistedOutputPath and persistedOutputSize. When one response's results
// together still exceed the budget, the largest are spilled first until
// they fit. Results holding anything but text (images) are left alone.
//
// The hook runs on the engine's goroutine, once per response.
func Offload(cfg OffloadConfig) func(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome {
	if cfg.Limit == 0 {
		cfg.Limit = ResultLimit
	}
	if cfg.Limits == nil {
		cfg.Limits = map[string]int{}
	}
	if cfg.Budget == 0 {
		cfg.Budget = MessageBudget
	}
	if cfg.Preview == 0 {
		cfg.Preview = PreviewBytes
	}
	return func(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome {
		if cfg.Dir == "" {
			return outcomes
		}
		// The results are in hand: a cancelled turn still records them
		// as they are shaped.
		return cfg.shape(context.WithoutCancel(ctx), outcomes)
	}
}

// candidate is one result that may be spilled.
type candidate struct {
	i     int
	text  string
	chars int
}

func (cfg OffloadConfig) shape(ctx context.Context, outcomes []engine.Outcome) []engine.Outcome {
	out := slices.Clone(outcomes)
	var cands []candidate
	total := 0
	for i, o := range out {
		n := resultChars(o.Result)
		total += n
		text, ok := textOf(o.Result)
		if !ok || cfg.limitOf(o.Call.Name) < 0 { // NeverSpill
			continue
		}
		cands = append(cands, candidate{i: i, text: text, chars: n})
	}
	spill := func(c candidate) {
		r, err := cfg.spill(ctx, out[c.i].Call.ID, c.text, out[c.i].Result)
		if err != nil {
			if cfg.Warn != nil {
				cause, _ := fsfault.Describe(err)
				cfg.Warn(fmt.Sprintf("a large result of %s could not be saved to a file (%s: %v) and stays inline", out[c.i].Call.Name, cause, err))
			}
			return
		}
		out[c.i].Result = r
		total += resultChars(r) - c.chars
	}
	var rest []candidate
	for _, c := range cands {
		if c.chars > cfg.limitOf(out[c.i].Call.Name) {
			spill(c)
		} else {
			rest = append(rest, c)
		}
	}
	// Largest first, until the response's results fit together.
	slices.SortStableFunc(rest, func(a, b candidate) int { return b.chars - a.chars })
	for _, c := range rest {
		if total <= cfg.Budget {
			break
		}
		if c.chars <= cfg.Preview {
			break // spilling would not make it smaller
		}
		spill(c)
	}
	return out
}

func (cfg OffloadConfig) limitOf(toolName string) int {
	if n, ok := cfg.Limits[toolName]; ok {
		return n
	}
	if cfg.Tools != nil {
		if t, ok := cfg.Tools.Lookup(toolName); ok {
			if n, ok := tool.ResultLimit(t); ok {
				return n
			}
		}
	}
	return cfg.Limit
}

// spill writes text to the session's tool-results folder and returns the
// result that replaces r.
func (cfg OffloadConfig) spill(ctx context.Context, toolUseID, text string, r tool.Result) (tool.Result, error) {
	if !safeName(toolUseID) {
		return r, fmt.Errorf("tool_use id %q cannot name a file", toolUseID)
	}
	store, id := cfg.Store, cfg.SessionID
	if store == nil {
		store, id = transcript.NewFileStore(filepath.Dir(cfg.Dir)), filepath.Base(cfg.Dir)
	}
	name := "tool-results/" + toolUseID + ".txt"
	if err := store.WriteSidecar(ctx, id, name, []byte(text)); err != nil {
		return r, err
	}
	path := filepath.Join(cfg.Dir, filepath.FromSlash(name))
	out := tool.Result{
		Content: []model.Block{model.TextBlock(PersistedPreview(path, text, cfg.Preview))},
		IsError: r.IsError,
		Detail:  withPersisted(r.Detail, path, len(text)),
		EndTurn: r.EndTurn,
	}
	return out, nil
}

// PersistedPreview is what the model reads in place of a result saved to
// path: its size, the file, and its first preview bytes, cut at a line
// break when one falls in the second half of them.
func PersistedPreview(path, text string, preview int) string {
	head, more := previewOf(text, preview)
	var b strings.Builder
	b.WriteString("<persisted-output>\n")
	b.WriteString("Output too large (" + formatSize(len(text)) + "). Full output saved to: " + path + "\n\n")
	b.WriteString("Preview (first " + formatSize(preview) + "):\n")
	b.WriteString(head)
	if more {
		b.WriteString("\n...\n")
	} else {
		b.WriteString("\n")
	}
	b.WriteString("</persisted-output>")
	return b.String()
}

func previewOf(text string, n int) (string, bool) {
	if len(text) <= n {
		return text, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(text[:cut], '\n'); nl > n/2 {
		cut = nl
	}
	return text[:cut], true
}

// formatSize writes a byte count as Claude Code does: bytes, then KB and
// MB with one decimal (a trailing ".0" dropped).
func formatSize(n int) string {
	one := func(v float64, unit string) string {
		s := strconv.FormatFloat(v, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + unit
	}
	switch kb := float64(n) / 1024; {
	case kb < 1:
		return strconv.Itoa(n) + " bytes"
	case kb < 1024:
		return one(kb, "KB")
	default:
		return one(kb/1024, "MB")
	}
}

// resultChars is the size of a result's text, in characters, as the
// limits and the budget count it (images are not counted).
func resultChars(r tool.Result) int {
	n := 0
	for _, b := range r.Content {
		if b.Type == model.BlockText {
			n += utf8.RuneCountInString(b.Text)
		}
	}
	return n
}

// textOf returns a result's text when it holds nothing but text.
func textOf(r tool.Result) (string, bool) {
	if len(r.Content) == 0 {
		return "", false
	}
	var parts []string
	for _, b := range r.Content {
		if b.Type != model.BlockText {
			return "", false
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n"), true
}

// safeName reports whether id can be a file name as it is.
func safeName(id string) bool {
	if id == "" || id == "." || id == ".." {
		return false
	}
	return !strings.ContainsAny(id, `/\`+"\x00")
}

// persistedDetail is a tool's toolUseResult with the two fields that name
// the file its output was saved to.
type persistedDetail struct {
	inner any
	path  string
	size  int
}

func withPersisted(d any, path string, size int) any {
	return persistedDetail{inner: d, path: path, size: size}
}

// MarshalJSON adds persistedOutputPath and persistedOutputSize after the
// tool's own fields; a detail that is not an object is kept as it is.
func (p persistedDetail) MarshalJSON() ([]byte, error) {
	var o jsonw.Object
	o.Str("persistedOutputPath", p.path)
	o.Raw("persistedOutputSize", strconv.AppendInt(nil, int64(p.size), 10))
	tail := o.Bytes()
	if p.inner == nil {
		return tail, nil
	}
	inner, err := jsonw.Marshal(p.inner)
	if err != nil {
		return nil, err
	}
	inner = bytes.TrimSpace(inner)
	var fields map[string]json.RawMessage
	if bytes.Equal(inner, []byte("null")) || json.Unmarshal(inner, &fields) == nil && len(fields) == 0 {
		return tail, nil
	}
	if fields == nil {
		return inner, nil // not an object: there is nothing to add the fields to
	}
	_, hasPath := fields["persistedOutputPath"]
	_, hasSize := fields["persistedOutputSize"]
	if hasPath || hasSize {
		delete(fields, "persistedOutputPath")
		delete(fields, "persistedOutputSize")
		if len(fields) == 0 {
			return tail, nil
		}
		var w jsonw.Object
		w.Sorted(fields, nil)
		inner = w.Bytes()
	}
	out := append(slices.Clip(inner[:len(inner)-1]), ',')
	return append(out, tail[1:]...), nil
}
