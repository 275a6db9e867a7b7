// Package memory is cairn's long-term memory (SPEC M1–M5), kept as Claude
// Code keeps its auto memory: a folder per project,
// <home>/projects/<dir>/memory/, holding an index, MEMORY.md, that goes
// into the system prompt, and one Markdown file per memory with name,
// description and type front matter.
//
// The model keeps the folder itself with the ordinary Write and Edit
// tools; this package gives it the instructions to (Prompt), guards the
// index's limits (CheckWrite), recalls the memories that bear on a new
// request with a small side request (Recaller), and extracts memories in
// the background after a turn (Extractor).
package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/cairn-dev/cairn/internal/frontmatter"
	"github.com/cairn-dev/cairn/session"
)

// Limits of the index (SPEC M1) and of recall (M5).
const (
	IndexName     = "MEMORY.md"
	MaxIndexLines = 200
	MaxIndexBytes = 25_000
	// MaxScan is how many memory files recall looks at, newest first;
	// HeaderLines how much of each it shows the selector.
	MaxScan     = 200
	HeaderLines = 30
	// MaxRecall is how many memories one recall injects.
	MaxRecall = 5
)

// Type is what a memory is about.
type Type string

const (
	// TypeUser: who the user is — role, goals, knowledge, preferences.
	TypeUser Type = "user"
	// TypeFeedback: guidance the user gave about how to work.
	TypeFeedback Type = "feedback"
	// TypeProject: facts about ongoing work the code does not show.
	TypeProject Type = "project"
	// TypeReference: pointers to information kept elsewhere.
	TypeReference Type = "reference"
)

// Types lists the memory types.
var Types = []Type{TypeUser, TypeFeedback, TypeProject, TypeReference}

// Dir is the memory folder of the project whose working directory is cwd.
func Dir(home session.Home, cwd string) string {
	return filepath.Join(home.ProjectDir(cwd), "memory")
}

// Memory is one memory file.
type Memory struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Type        Type   `yaml:"type"`
	// Body is the text after the front matter: the memory, then **Why:**
	// and **How to apply:**.
	Body string `yaml:"-"`
}

// ErrMalformed is wrapped by the errors of memory files that cannot be
// read as memories.
var ErrMalformed = errors.New("malformed memory file")

// Parse reads a memory file.
func Parse(data []byte) (Memory, error) {
	var m Memory
	_, _, ok, err := frontmatter.Split(data)
	if err == nil && !ok {
		err = errors.New("no front matter (a --- block with name, description and type)")
	}
	if err != nil {
		return Memory{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	body, err := frontmatter.Parse(data, &m)
	if err != nil {
		return Memory{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	m.Body = strings.TrimSpace(string(body))
	if err := m.Validate(); err != nil {
		return Memory{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, nil
}

// Validate checks that a memory has what every memory must have.
func (m Memory) Validate() error {
	switch {
	case strings.TrimSpace(m.Name) == "":
		return errors.New("name is missing")
	case strings.TrimSpace(m.Description) == "":
		return errors.New("description is missing")
	case !slices.Contains(Types, m.Type):
		return fmt.Errorf("type %q is not one of user, feedback, project, reference", m.Type)
	}
	return nil
}

// Encode writes a memory as a file.
func (m Memory) Encode() []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	fmt.Fprintf(&b, "name: %s\n", yamlString(m.Name))
	fmt.Fprintf(&b, "description: %s\n", yamlString(m.Description))
	fmt.Fprintf(&b, "type: %s\n", m.Type)
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimSpace(m.Body))
	b.WriteString("\n")
	return b.Bytes()
}

// yamlString quotes s when plain YAML would read it differently.
func yamlString(s string) string {
	if s == "" || strings.ContainsAny(s, ":#'\"{}[],&*!|>%@`\n") || strings.TrimSpace(s) != s {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Save writes a memory to file (a name inside dir) atomically: a reader
// sees the old file or the new one, never a mix.
func Save(dir, file string, m Memory) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("memory %q: %w", file, err)
	}
	if file != filepath.Base(file) || file == IndexName || !strings.HasSuffix(file, ".md") {
		return fmt.Errorf("memory file %q must be a .md name inside the memory folder, not the index", file)
	}
	return writeAtomic(filepath.Join(dir, file), m.Encode())
}

// WriteIndex replaces MEMORY.md atomically, refusing an index over the
// limits.
func WriteIndex(dir, text string) error {
	if err := CheckIndex(text); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, IndexName), []byte(text))
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return renameio.WriteFile(path, data, 0o644)
}

// IndexError is an index over its limits.
type IndexError struct {
	Lines, Bytes int
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("MEMORY.md would have %d lines and %d bytes; the index holds at most %d lines and %d bytes. Keep one short line per memory (- [name](file.md) — what it holds), move detail into the memory files, and remove lines of memories that no longer matter",
		e.Lines, e.Bytes, MaxIndexLines, MaxIndexBytes)
}

// CheckIndex checks an index text against the limits.
func CheckIndex(text string) error {
	lines := lineCount(text)
	if lines > MaxIndexLines || len(text) > MaxIndexBytes {
		return &IndexError{Lines: lines, Bytes: len(text)}
	}
	return nil
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// ReadIndex reads MEMORY.md as the system prompt carries it: at most 200
// lines and 25 KB, with a note when the file holds more (someone wrote it
// by hand). "" when there is none.
func ReadIndex(dir string) (text string, warning string) {
	f, err := os.Open(filepath.Join(dir, IndexName))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			warning = fmt.Sprintf("memory index: %v", err)
		}
		return "", warning
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxIndexBytes+1))
	if err != nil {
		return "", fmt.Sprintf("memory index: %v", err)
	}
	text = string(data)
	over := len(data) > MaxIndexBytes
	if over {
		text = text[:MaxIndexBytes]
		if i := strings.LastIndexByte(text, '\n'); i > 0 {
			text = text[:i+1]
		}
	}
	if lines := strings.SplitAfter(text, "\n"); len(lines) > MaxIndexLines {
		text = strings.Join(lines[:MaxIndexLines], "")
		over = true
	}
	text = strings.TrimRight(text, "\n")
	if over {
		warning = fmt.Sprintf("%s is over its limits (%d lines, %d bytes); only its start is loaded", filepath.Join(dir, IndexName), MaxIndexLines, MaxIndexBytes)
		text += fmt.Sprintf("\n[MEMORY.md is longer than %d lines or %d bytes and was cut here: shorten it.]", MaxIndexLines, MaxIndexBytes)
	}
	return text, warning
}
