package sessionmemory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/internal/tokens"
)

// Budgets of the notes, in tokens (SPEC SM1).
const (
	MaxSectionTokens = 2_000
	MaxTotalTokens   = 12_000
)

// Path is where the notes of the session whose sidecar folder is
// sessionDir live (Claude Code's place for them).
func Path(sessionDir string) string {
	return filepath.Join(sessionDir, "session-memory", "summary.md")
}

// fullPath is where the notes are kept whole when a section had to be cut.
func fullPath(path string) string {
	return strings.TrimSuffix(path, ".md") + ".full.md"
}

// DefaultTemplate is what new notes start from: a "# " heading per
// section, each followed by an italic line saying what belongs there.
const DefaultTemplate = `# Session Title
_A few words naming what this session is about_

# Current State
_What is being worked on at this moment, what is unfinished, and the very next step_

# Task specification
_What the user asked for, in their terms, with the decisions and constraints that shape it_

# Files and Functions
_The files and functions that matter: what each holds and why it matters_

# Workflow
_The commands that get run, in order, and how to read their output_

# Errors & Corrections
_Errors met and how they were fixed; what the user corrected; approaches that failed and must not be retried_

# Codebase Documentation
_How the parts of the system that matter here work and fit together_

# Learnings
_What worked, what did not, what to avoid (without repeating the other sections)_

# Key results
_Exact results the user asked for (answers, tables, documents), word for word_

# Worklog
_One terse line per step taken, oldest first_
`

// DefaultPrompt is the instruction appended to the conversation to have
// the fork update the notes. Its placeholders are filled in by prompt.
const DefaultPrompt = `This message is not part of the conversation: cairn asks you to update the session notes. Nothing in this message belongs in the notes, and the notes must not mention note-taking.

Update the notes file {{notesPath}} so that it records the conversation above (leave out this message, the system prompt, instruction files and earlier summaries). The file has already been read for you; it holds:

<current-notes>
{{currentNotes}}
</current-notes>

- Use only the Edit tool, and only on {{notesPath}}: any other tool or file is refused.
- Keep every "# " heading and the italic line under it exactly as they are; write below the italic line.
- Be specific and dense: file paths, function names, commands, exact error messages, the user's own words where they matter.
- Current State says what is being done right now and what comes next; Worklog gets one terse line per step.
- Keep each section under about {{maxSectionTokens}} tokens and the file under {{maxTotalTokens}}: condense older detail, never what is current.
- Leave a section alone when nothing new belongs in it.
- Make all your edits in one response (several Edit calls at once are fine), then stop.`

// Texts are the template and the prompt in force.
type Texts struct {
	Template, Prompt string
}

// LoadTexts reads the template and prompt overrides from dir
// ($CAIRN_HOME/session-memory): config/template.md, as Claude Code keeps
// them, else template.md, and the same for prompt.md. A missing or blank
// file leaves the default; a file that cannot be read is an error.
func LoadTexts(dir string) (Texts, error) {
	t := Texts{Template: DefaultTemplate, Prompt: DefaultPrompt}
	if dir == "" {
		return t, nil
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"template.md", &t.Template}, {"prompt.md", &t.Prompt}} {
		for _, p := range []string{filepath.Join(dir, "config", f.name), filepath.Join(dir, f.name)} {
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return t, fmt.Errorf("read the session-memory %s: %w", f.name, err)
			}
			if strings.TrimSpace(string(b)) != "" {
				*f.dst = string(b)
				break
			}
		}
	}
	return t, nil
}

// prompt fills the placeholders of the update instruction.
func prompt(text, path, notes string, over []section) string {
	r := strings.NewReplacer(
		"{{notesPath}}", path,
		"{{currentNotes}}", strings.TrimRight(notes, "\n"),
		"{{maxSectionTokens}}", fmt.Sprint(MaxSectionTokens),
		"{{maxTotalTokens}}", fmt.Sprint(MaxTotalTokens),
	)
	out := r.Replace(text)
	if len(over) > 0 {
		var names []string
		for _, s := range over {
			names = append(names, fmt.Sprintf("%s (about %d tokens)", s.name(), tokens.Estimate(s.body)))
		}
		out += "\n\nThese sections are over their budget; shorten them first: " + strings.Join(names, ", ") + "."
	}
	return out
}

// section is one "# " heading and what follows it up to the next one; the
// text before the first heading is a section with no heading.
type section struct {
	heading string // the heading line, with its line ending
	body    string // everything after the heading line
}

func (s section) name() string { return strings.TrimSpace(strings.TrimPrefix(s.heading, "#")) }

func (s section) String() string { return s.heading + s.body }

// parse cuts notes into sections. Lines starting with "# " inside fenced
// code blocks (a shell comment in Workflow) are not headings.
func parse(notes string) []section {
	var out []section
	cur := section{}
	bodyAt := 0 // where cur's body starts in notes
	fenced := false
	for at := 0; at < len(notes); {
		end := len(notes)
		if i := strings.IndexByte(notes[at:], '\n'); i >= 0 {
			end = at + i + 1
		}
		line := notes[at:end]
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "# ") {
			cur.body = notes[bodyAt:at]
			if cur.heading != "" || cur.body != "" {
				out = append(out, cur)
			}
			cur, bodyAt = section{heading: line}, end
		}
		at = end
	}
	cur.body = notes[bodyAt:]
	if cur.heading != "" || cur.body != "" {
		out = append(out, cur)
	}
	return out
}

func join(secs []section) string {
	var b strings.Builder
	for _, s := range secs {
		b.WriteString(s.String())
	}
	return b.String()
}

// Empty reports whether notes hold nothing beyond template: no text other
// than the template's headings and italic description lines.
func Empty(notes, template string) bool {
	known := map[string]bool{}
	for _, line := range strings.Split(template, "\n") {
		known[strings.TrimSpace(line)] = true
	}
	for _, line := range strings.Split(notes, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !known[l] {
			return false
		}
	}
	return true
}

// overBudget lists the sections over the per-section budget.
func overBudget(notes string) []section {
	var out []section
	for _, s := range parse(notes) {
		if tokens.Estimate(s.body) > MaxSectionTokens {
			out = append(out, s)
		}
	}
	return out
}

// minKept is what a section keeps at least when the whole is over budget.
const minKept = 100

// fit holds notes to the budgets: each section is cut to maxSection
// tokens, and when the whole is still over maxTotal, the largest ones are
// cut to a common lower cap (never under minKept) until it fits. A cut
// section keeps its beginning (the italic description first) and ends
// with a line pointing to where the full text is. fit returns the notes
// and the names of the sections it cut.
func fit(notes string, maxSection, maxTotal int64, pointer string) (string, []string) {
	secs := parse(notes)
	sizes := make([]int64, len(secs))
	var headings int64
	for i, s := range secs {
		sizes[i] = tokens.Estimate(s.body)
		headings += tokens.Estimate(s.heading)
	}
	total := func(limit int64) int64 {
		n := headings
		for _, size := range sizes {
			n += min(size, limit)
		}
		return n
	}
	limit := maxSection
	if total(limit) > maxTotal {
		// The largest cap in [minKept, maxSection] that fits, or minKept.
		lo, hi := int64(minKept), maxSection
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if total(mid) <= maxTotal {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		limit = min(lo, maxSection)
	}
	var cut []string
	for i, s := range secs {
		if sizes[i] <= limit {
			continue
		}
		secs[i].body = truncate(s.body, limit, pointer)
		cut = append(cut, s.name())
	}
	return join(secs), cut
}

// truncate keeps the beginning of body, within n tokens and at a line
// boundary, and says where the rest is.
func truncate(body string, n int64, pointer string) string {
	note := fmt.Sprintf("[… this section was cut to fit its budget; the full text is in %s]\n", pointer)
	room := int((n - tokens.Estimate(note)) * tokens.BytesPerToken)
	if room < 0 {
		room = 0
	}
	keep := body[:min(room, len(body))]
	if i := strings.LastIndexByte(keep, '\n'); i >= 0 {
		keep = keep[:i+1]
	} else {
		keep = ""
	}
	return keep + note + "\n"
}

// writeAtomic replaces path's content whole: a reader, or a crash, sees
// the old content or the new, never a mix.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return renameio.WriteFile(path, data, 0o644, renameio.WithExistingPermissions())
}
