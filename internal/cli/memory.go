package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/instructions"
	"github.com/cairn-dev/cairn/internal/memory"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/session"
)

func newMemoryCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Inspect the instruction files and long-term memory of this project",
	}
	var asJSON bool
	explain := &cobra.Command{
		Use:   "explain",
		Short: "Show the instruction files, rules and memories that load for this directory, in order, and why",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := buildExplain(cmd.Context(), env)
			if err != nil {
				return err
			}
			for _, w := range rep.Warnings {
				fmt.Fprintln(env.Stderr, "warning:", w)
			}
			if asJSON {
				return writeJSON(env.Stdout, rep)
			}
			printExplain(env.Stdout, rep)
			return nil
		},
	}
	explain.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	cmd.AddCommand(explain)
	return cmd
}

// explainReport is what `cairn memory explain` prints.
type explainReport struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
	// Instructions load with the first prompt, in this order (lowest
	// priority first).
	Instructions []explainFile `json:"instructions"`
	// Rules load when the agent reads or changes a file their globs match.
	Rules  []explainFile `json:"rules"`
	Memory explainMemory `json:"memory"`
	// Extensions are the custom commands, skills and output styles.
	Extensions explainExtensions `json:"extensions"`
	// Skipped files exist but do not load.
	Skipped  []instructions.Skip `json:"skipped"`
	Warnings []string            `json:"warnings"`
	// StartTokens is what loads with every session: InstructionTokens
	// (the instruction files as the first prompt's context reminder
	// carries them) and MemoryTokens (the system prompt's memory section,
	// with the index) — the numbers /context shows.
	StartTokens       int64 `json:"startTokens"`
	InstructionTokens int64 `json:"instructionTokens"`
	MemoryTokens      int64 `json:"memoryTokens"`
}

type explainFile struct {
	Order      int      `json:"order,omitempty"`
	Path       string   `json:"path"`
	Kind       string   `json:"kind"`
	Why        string   `json:"why"`
	IncludedBy string   `json:"includedBy,omitempty"`
	Globs      []string `json:"globs,omitempty"`
	GlobBase   string   `json:"globBase,omitempty"`
	Bytes      int64    `json:"bytes"`
	Tokens     int64    `json:"tokens"`
	Truncated  bool     `json:"truncated,omitempty"`
}

type explainMemory struct {
	Enabled bool   `json:"enabled"`
	Dir     string `json:"dir"`
	Index   *struct {
		Path   string `json:"path"`
		Lines  int    `json:"lines"`
		Bytes  int    `json:"bytes"`
		Tokens int64  `json:"tokens"`
		Why    string `json:"why"`
	} `json:"index"`
	// Files are the memories recall chooses from (the newest 200), newest
	// first.
	Files []explainMemoryFile `json:"files"`
	Why   string              `json:"why"`
}

type explainMemoryFile struct {
	File        string    `json:"file"`
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Description string    `json:"description"`
	Modified    time.Time `json:"modified"`
}

func buildExplain(ctx context.Context, env Env) (*explainReport, error) {
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	st, err := settings.Load(home.Dir, env.Cwd)
	if err != nil {
		return nil, err
	}
	o := instructionOptions(env, home, userHomeOf(env))
	set := instructions.Load(o)
	rep := &explainReport{Cwd: env.Cwd, Root: instructions.RepoRoot(env.Cwd), Skipped: set.Skipped, Warnings: set.Warnings}
	rep.InstructionTokens = instructionTokens(set.Files)
	rep.MemoryTokens = memoryTokens(env, home, st, env.Cwd)
	rep.StartTokens = rep.InstructionTokens + rep.MemoryTokens
	for i, f := range set.Files {
		n := tokens.Estimate(instructions.Section(f)) // the file as the model reads it
		rep.Instructions = append(rep.Instructions, explainFile{Order: i + 1, Path: f.Path, Kind: string(f.Kind), Why: f.Reason, IncludedBy: f.IncludedBy,
			Bytes: f.Size, Tokens: n, Truncated: f.Truncated})
	}
	for _, f := range set.Conditional {
		rep.Rules = append(rep.Rules, explainFile{Path: f.Path, Kind: string(f.Kind), Why: f.Reason + "; loads when the agent reads or changes a file matching its paths:",
			Globs: f.Globs, GlobBase: f.Base, Bytes: f.Size, Tokens: tokens.Estimate(f.Content), Truncated: f.Truncated})
	}
	rep.Extensions = buildExtensionsExplain(env, home, st)
	m := &rep.Memory
	m.Enabled = memoryEnabled(env, st)
	m.Dir = memory.Dir(home, env.Cwd)
	if !m.Enabled {
		m.Why = "long-term memory is off (CAIRN_DISABLE_AUTO_MEMORY, or autoMemoryEnabled: false in settings)"
		return rep, nil
	}
	m.Why = fmt.Sprintf("memory files are not loaded whole: for each prompt a small model picks at most %d of the newest %d by their first %d lines, and those go with the request", memory.MaxRecall, memory.MaxScan, memory.HeaderLines)
	if text, warning := memory.ReadIndex(m.Dir); text != "" {
		if warning != "" {
			rep.Warnings = append(rep.Warnings, warning)
		}
		m.Index = &struct {
			Path   string `json:"path"`
			Lines  int    `json:"lines"`
			Bytes  int    `json:"bytes"`
			Tokens int64  `json:"tokens"`
			Why    string `json:"why"`
		}{Path: filepath.Join(m.Dir, memory.IndexName), Lines: strings.Count(text, "\n") + 1, Bytes: len(text), Tokens: tokens.Estimate(text),
			Why: "the memory index, in the system prompt of every session of this project"}
	}
	headers, warnings, err := memory.Scan(ctx, m.Dir, memory.MaxScan)
	if err != nil {
		return nil, err
	}
	rep.Warnings = append(rep.Warnings, warnings...)
	for _, h := range headers {
		m.Files = append(m.Files, explainMemoryFile{File: h.File, Name: h.Name, Type: string(h.Type), Description: h.Description, Modified: h.Mod})
	}
	return rep, nil
}

func printExplain(w io.Writer, r *explainReport) {
	fmt.Fprintf(w, "Instruction files for %s (walking up to %s), in load order — later ones take precedence:\n", r.Cwd, r.Root)
	if len(r.Instructions) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, f := range r.Instructions {
		fmt.Fprintf(w, "  %2d. %s  [%s, %s tokens%s]\n      %s\n", f.Order, f.Path, f.Kind, tokens.Thousands(f.Tokens), truncNote(f.Truncated), f.Why)
	}
	if len(r.Rules) > 0 {
		fmt.Fprintln(w, "\nRules that load when the agent works on matching files:")
		for _, f := range r.Rules {
			fmt.Fprintf(w, "  - %s  [%s, %s tokens]\n      paths: %s (relative to %s)\n", f.Path, f.Kind, tokens.Thousands(f.Tokens), strings.Join(f.Globs, ", "), f.GlobBase)
		}
	}
	fmt.Fprintln(w, "\nInstruction files in folders below this one load when the agent first reads a file there.")
	printExtensionsExplain(w, r.Extensions)
	m := r.Memory
	fmt.Fprintf(w, "\nLong-term memory: %s\n", m.Dir)
	if !m.Enabled {
		fmt.Fprintf(w, "  %s\n", m.Why)
	} else {
		if m.Index != nil {
			fmt.Fprintf(w, "  %s: %d lines, %s tokens — %s\n", m.Index.Path, m.Index.Lines, tokens.Thousands(m.Index.Tokens), m.Index.Why)
		} else {
			fmt.Fprintln(w, "  no MEMORY.md yet")
		}
		fmt.Fprintf(w, "  %d memory files; %s\n", len(m.Files), m.Why)
		for _, f := range m.Files {
			fmt.Fprintf(w, "    - %s (%s, saved %s): %s\n", f.File, f.Type, f.Modified.Format("2006-01-02"), f.Description)
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "\nSkipped %s: %s", s.Path, s.Reason)
	}
	fmt.Fprintf(w, "\nEvery session starts with %s tokens: %s of instructions (as the first prompt carries them) and %s of memory (the system prompt's section, with the index), as /context counts them.\n",
		tokens.Thousands(r.StartTokens), tokens.Thousands(r.InstructionTokens), tokens.Thousands(r.MemoryTokens))
}

func truncNote(cut bool) string {
	if cut {
		return ", cut to the size limit"
	}
	return ""
}

// instructionOptions says where a session in env looks for instruction
// files.
func instructionOptions(env Env, home session.Home, userHome string) instructions.Options {
	return instructions.Options{Cwd: env.Cwd, Home: userHome, CairnHome: home.Dir}
}

// memoryEnabled reports whether long-term memory is on: it is unless
// CAIRN_DISABLE_AUTO_MEMORY (or Claude Code's
// CLAUDE_CODE_DISABLE_AUTO_MEMORY) is set or a settings file says
// "autoMemoryEnabled": false.
func memoryEnabled(env Env, st *settings.Settings) bool {
	if env.Getenv != nil && (truthy(env.Getenv("CAIRN_DISABLE_AUTO_MEMORY")) || truthy(env.Getenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY"))) {
		return false
	}
	var on bool
	if raw, ok := st.Raw["autoMemoryEnabled"]; ok && json.Unmarshal(raw, &on) == nil && !on {
		return false
	}
	return true
}

// sessionContextOptions builds a session's instruction files and memory
// from the environment and the settings, and the permission rules that
// let the agent keep its memory folder. Background extraction is opt-in
// for headless runs (CAIRN_MEMORY_EXTRACTION=1 or "memoryExtraction":
// true): a run that exits after its turn would otherwise wait for it.
func sessionContextOptions(env Env, home session.Home, userHome string, st *settings.Settings, choice *modelChoice) (*instructions.Tracker, *agent.MemoryOptions, []string, []string) {
	tracker := instructions.NewTracker(instructionOptions(env, home, userHome))
	warnings := tracker.Set().Warnings
	if !memoryEnabled(env, st) {
		return tracker, nil, nil, warnings
	}
	small := env.Getenv("CAIRN_SMALL_MODEL")
	if small == "" {
		if s, err := st.String("smallModel"); err != nil {
			warnings = append(warnings, err.Error())
		} else {
			small = s
		}
	}
	if small == "" {
		small = choice.Name
	}
	extract := truthy(env.Getenv("CAIRN_MEMORY_EXTRACTION"))
	var on bool
	if raw, ok := st.Raw["memoryExtraction"]; ok && json.Unmarshal(raw, &on) == nil && on {
		extract = true
	}
	dir := memory.Dir(home, env.Cwd)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		warnings = append(warnings, fmt.Sprintf("memory folder: %v", err))
	}
	mem := &agent.MemoryOptions{Dir: dir, Recall: choice.Model, RecallModel: small, Extract: extract}
	return tracker, mem, memory.AllowRules(dir), warnings
}
