// Package prompt builds the system prompt from keyed sections (SPEC P1,
// P2): static sections first, then dynamic ones. Every section is computed
// once per session and kept, so the prompt's bytes do not change from turn
// to turn — or across a resume on the same machine — and the prompt cache
// keeps hitting. A section that must change says so (Volatile), and the
// change is reported so cache breaks are never silent (P4).
package prompt

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/model"
)

// Section is one keyed part of the system prompt.
type Section struct {
	Key string
	// Static sections are the same for every session and go first.
	Static bool
	// Volatile sections are recomputed on every build; the others once.
	Volatile bool
	// Text computes the section; "" leaves it out.
	Text func(ctx context.Context) (string, error)
}

// Builder assembles the system prompt. Safe for concurrent use.
type Builder struct {
	sections []Section

	mu     sync.Mutex
	memo   map[string]string
	last   []model.SystemBlock
	breaks int
}

// NewBuilder returns a builder over sections, which keep their order
// within the static and dynamic groups.
func NewBuilder(sections ...Section) *Builder {
	return &Builder{sections: sections, memo: make(map[string]string)}
}

// Set fixes the text of the section key from the next Build on (the MCP
// servers' instructions once servers that were still starting are
// ready). It is a deliberate change of the prompt: the next Build counts
// it as a cache break when the text differs.
func (b *Builder) Set(key, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.memo[key] = text
}

// MCPKey is the key of the MCP servers' instructions section.
const MCPKey = "mcp_instructions"

// Build returns the system prompt as two blocks, each a cache breakpoint:
// the static part, shared by every session, and the dynamic part.
func (b *Builder) Build(ctx context.Context) ([]model.SystemBlock, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var static, dynamic []string
	for _, s := range b.sections {
		text, ok := b.memo[s.Key]
		if !ok || s.Volatile {
			var err error
			if text, err = s.Text(ctx); err != nil {
				return nil, fmt.Errorf("system prompt section %q: %w", s.Key, err)
			}
			b.memo[s.Key] = text
		}
		if text == "" {
			continue
		}
		if s.Static {
			static = append(static, text)
		} else {
			dynamic = append(dynamic, text)
		}
	}
	var out []model.SystemBlock
	for _, part := range [][]string{static, dynamic} {
		if len(part) > 0 {
			out = append(out, model.SystemBlock{Text: strings.Join(part, "\n\n"), Cache: true})
		}
	}
	if b.last != nil && !sameBlocks(b.last, out) {
		b.breaks++
	}
	b.last = out
	return out, nil
}

// Forget drops what was computed for the sections named, so the next
// Build computes them again: after a compaction, which changes the
// request's prefix anyway, a section that follows files on disk (the
// memory index) catches up at no extra cost to the cache.
func (b *Builder) Forget(keys ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		delete(b.memo, k)
	}
}

// Breaks counts the builds whose prompt differed from the one before: each
// is a prompt-cache miss for everything after the system prompt.
func (b *Builder) Breaks() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.breaks
}

func sameBlocks(a, b []model.SystemBlock) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Fixed returns a section whose text never changes.
func Fixed(key string, static bool, text string) Section {
	return Section{Key: key, Static: static, Text: func(context.Context) (string, error) { return text, nil }}
}
