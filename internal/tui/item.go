package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/filemap"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// kind is what a transcript item shows.
type kind int

const (
	kindUser kind = iota
	kindAssistant
	kindThinking
	kindTool
	kindNotice
	kindError
	kindInfo // a command's output, preformatted
	kindCompact
)

// item is one entry of the transcript on screen. Its rendering is cached
// by width and version; anything that changes it bumps version.
type item struct {
	kind kind
	text string
	// msgID is the transcript uuid of a prompt (for /rewind).
	msgID string
	// A tool call and, once it ended, its result.
	call   model.Block
	result *toolResult
	// progress is what the running call last said of itself (a
	// subagent's latest step).
	progress string
	// compaction, for kindCompact.
	compaction *engine.Compaction
	streaming  bool

	version int
	cache   renderCache
	// blocks caches the rendered complete blocks of streaming Markdown.
	blocks []blockCache
}

type toolResult struct {
	text string
	// raw is the content of a result read back from the transcript, whose
	// text is made only when the result is first shown: most of a long
	// session's results never are, and making them all took about 0.2 s of
	// the resume of a 100 MB session.
	raw     json.RawMessage
	isError bool
	// detail is the tool's own record (toolUseResult), as JSON.
	detail json.RawMessage
}

// Text is the result's text. A resumed result may be a slice of the
// transcript's mapping (see filemap): read from a file cut shorter since,
// its text is the error saying so, not a crash.
func (r *toolResult) Text() string {
	if r.raw != nil {
		err := filemap.Guard(func() error {
			r.text = model.Block{Content: r.raw}.ResultText()
			return nil
		})
		if err != nil {
			r.text, r.isError = err.Error(), true
		}
		r.raw = nil
	}
	return r.text
}

// failed reports whether the call failed; a resumed result's text is read
// first (Text), since it may turn out an error.
func (r *toolResult) failed() bool {
	r.Text()
	return r.isError
}

type renderCache struct {
	width, version int
	expanded, ok   bool
	lines          []string
}

type blockCache struct {
	src   string
	width int
	lines []string
}

func (it *item) touch() { it.version++ }

// lines renders the item, from the cache when nothing changed.
func (it *item) lines(r *renderer, width int) []string {
	c := &it.cache
	if c.ok && c.width == width && c.version == it.version && c.expanded == r.expanded {
		return c.lines
	}
	lines := r.item(it, width)
	*c = renderCache{width: width, version: it.version, expanded: r.expanded, ok: true, lines: lines}
	return lines
}

// renderer turns items into lines.
type renderer struct {
	st       styles
	md       *markdown
	cwd      string
	expanded bool
	// tools are the session's tools, which say how their calls read and
	// whether they write files; nil shows every call by its input.
	tools func() *tool.Registry
}

// lookup returns the session's tool named name.
func (r *renderer) lookup(name string) (tool.Tool, bool) {
	if r.tools == nil {
		return nil, false
	}
	reg := r.tools()
	if reg == nil {
		return nil, false
	}
	return reg.Lookup(name)
}

const collapsedLines = 3 // result lines shown when collapsed

func (r *renderer) item(it *item, width int) []string {
	var out []string
	switch it.kind {
	case kindUser:
		text := it.text
		lines := strings.Split(text, "\n")
		if !r.expanded && len(lines) > 12 {
			text = strings.Join(lines[:12], "\n") + fmt.Sprintf("\n… +%d lines", len(lines)-12)
		}
		for _, l := range indent(text, width, "> ", "  ") {
			out = append(out, r.st.user.Render(l))
		}
	case kindAssistant:
		out = r.assistant(it, width)
	case kindThinking:
		if !r.expanded {
			out = []string{r.st.dim.Render("✻ Thinking… (ctrl+o to show)")}
			break
		}
		for _, l := range indent(it.text, width, "✻ ", "  ") {
			out = append(out, r.st.dim.Render(l))
		}
	case kindTool:
		out = r.tool(it, width)
	case kindNotice:
		for _, l := range indent(it.text, width, "※ ", "  ") {
			out = append(out, r.st.notice.Render(l))
		}
	case kindError:
		for _, l := range indent(it.text, width, "✗ ", "  ") {
			out = append(out, r.st.errText.Render(l))
		}
	case kindInfo:
		for _, l := range strings.Split(strings.TrimRight(it.text, "\n"), "\n") {
			out = append(out, wrap(l, width)...)
		}
	case kindCompact:
		out = r.compaction(it, width)
	}
	return append(out, "")
}

// assistant renders a reply as Markdown. While it streams, the blocks
// that can no longer change keep their rendering and only the growing
// last block is rendered again.
func (r *renderer) assistant(it *item, width int) []string {
	complete, tail := splitBlocks(it.text)
	var body []string
	for i, b := range complete {
		if i < len(it.blocks) && it.blocks[i].src == b && it.blocks[i].width == width {
			body = appendBlock(body, it.blocks[i].lines)
			continue
		}
		lines := r.md.render(b, width-2)
		if i < len(it.blocks) {
			it.blocks[i] = blockCache{b, width, lines}
		} else {
			it.blocks = append(it.blocks, blockCache{b, width, lines})
		}
		body = appendBlock(body, lines)
	}
	it.blocks = it.blocks[:len(complete)]
	if strings.TrimSpace(tail) != "" {
		body = appendBlock(body, r.md.render(tail, width-2))
	}
	if len(body) == 0 {
		body = []string{""}
	}
	out := make([]string, len(body))
	for i, l := range body {
		p := "  "
		if i == 0 {
			p = "● "
		}
		out[i] = p + l
	}
	return out
}

func appendBlock(body, lines []string) []string {
	if len(body) > 0 {
		body = append(body, "")
	}
	return append(body, lines...)
}

func (r *renderer) compaction(it *item, width int) []string {
	c := it.compaction
	head := fmt.Sprintf("✻ Conversation compacted (%s): %s → %s tokens", c.Trigger, tokens.Thousands(c.PreTokens), tokens.Thousands(c.PostTokens))
	if c.Duration > 0 {
		head += fmt.Sprintf(" in %.1fs", c.Duration.Round(100*time.Millisecond).Seconds())
	}
	out := []string{r.st.accent.Render(truncate(head, width))}
	if c.Summary != "" {
		for _, l := range indent(c.Summary, width, "  ⎿  ", "     ") {
			out = append(out, r.st.dim.Render(l))
		}
	}
	if it.text != "" {
		for _, l := range indent(it.text, width, "     ", "     ") {
			out = append(out, r.st.dim.Render(l))
		}
	}
	return out
}
