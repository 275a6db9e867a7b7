package longrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// Kinds of request, as the player classifies them.
const (
	ReqMain    = "main"
	ReqSummary = "summary"
	ReqNotes   = "notes"
	ReqOther   = "other"
)

// factRE finds fact lines in a prompt.
var factRE = regexp.MustCompile(`FACT-[A-Z0-9]+=[a-z]+-[0-9]{4}`)

// player is the fake model: main requests get the script's next item (a
// tool call, or the turn's closing answer); summaries and notes updates
// get the extractive oracle.
type player struct {
	w   *Workload
	cwd string

	mu    sync.Mutex
	items []item
	pos   int
	kinds map[string]string // request id → kind
}

// item is one main reply of the script: a step, or the end of a turn.
type item struct {
	turn int
	step *Step
	n    int // the step's number, from 1, over the whole session
}

func newPlayer(w *Workload, cwd string) *player {
	p := &player{w: w, cwd: cwd, kinds: map[string]string{}}
	n := 0
	for ti := range w.Turns {
		for si := range w.Turns[ti].Steps {
			n++
			p.items = append(p.items, item{turn: ti, step: &w.Turns[ti].Steps[si], n: n})
		}
		p.items = append(p.items, item{turn: ti})
	}
	return p
}

// classify tells what a request is from what it asks.
func classify(r *modeltest.Request) string {
	last := lastUserText(r.Params)
	switch {
	case strings.Contains(last, "Your task is to create a detailed summary"),
		strings.Contains(last, "<summary></summary>"):
		return ReqSummary
	case bytes.Contains(r.Body, []byte("update the session notes")):
		return ReqNotes
	}
	for _, name := range r.Params.ToolNames() {
		if name == "Bash" {
			return ReqMain
		}
	}
	return ReqOther
}

// lastUserText is the text of the last user message.
func lastUserText(p *modeltest.Params) string {
	if p == nil || len(p.Messages) == 0 {
		return ""
	}
	m := p.Messages[len(p.Messages)-1]
	var b strings.Builder
	for _, blk := range m.Content {
		if blk.Type == model.BlockText {
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

// seenFacts are the fact lines the model is shown in r (system and
// messages after the server's edits), in order, each once.
func seenFacts(r *modeltest.Request) []string {
	var sys []byte
	if r.Params != nil {
		sys, _ = json.Marshal(r.Params.System)
	}
	var out []string
	seen := map[string]bool{}
	for _, src := range [][]byte{sys, r.SeenJSON()} {
		for _, f := range factRE.FindAll(src, -1) {
			if !seen[string(f)] {
				seen[string(f)] = true
				out = append(out, string(f))
			}
		}
	}
	return out
}

func (p *player) respond(r *modeltest.Request) modeltest.Reply {
	kind := classify(r)
	p.mu.Lock()
	p.kinds[r.ID] = kind
	p.mu.Unlock()
	switch kind {
	case ReqSummary:
		return p.summary(r)
	case ReqNotes:
		return p.notes(r)
	case ReqOther:
		return modeltest.Text("OK")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pos >= len(p.items) {
		return modeltest.Text("The work is done.")
	}
	it := p.items[p.pos]
	p.pos++
	if it.step == nil {
		if it.turn == len(p.w.Turns)-1 {
			return modeltest.Text("Final report: " + strings.Join(seenFacts(r), ", "))
		}
		return modeltest.Text("This batch is done.")
	}
	id := fmt.Sprintf("toolu_step%04d", it.n)
	text := model.TextBlock(fmt.Sprintf("Step %d.", it.n))
	var call model.Block
	switch s := it.step; s.Kind {
	case KindSeq:
		call = modeltest.ToolUse(id, "Bash", fmt.Sprintf(`{"command":"seq 1 %d","description":"Print a sequence"}`, s.N))
	case KindCat:
		call = modeltest.ToolUse(id, "Bash", fmt.Sprintf(`{"command":"cat %s","description":"Show a log"}`, s.Path))
	default:
		in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(p.cwd, s.Path)})
		call = modeltest.ToolUse(id, "Read", string(in))
	}
	return modeltest.Reply{Content: []model.Block{text, call}}
}

// done reports whether the script ran to its end.
func (p *player) done() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pos >= len(p.items)
}

func (p *player) kind(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kinds[id]
}

// summary is the extractive summariser: a short account of the work and
// every fact line the request shows.
func (p *player) summary(r *modeltest.Request) modeltest.Reply {
	var b strings.Builder
	b.WriteString("<analysis>The user had the logs, tables and sequences gone through and wants the facts kept.</analysis>\n<summary>\n")
	b.WriteString("1. Primary request: go through the project's logs, tables and sequences and keep every FACT line found; report them all at the end.\n")
	b.WriteString("2. Facts found so far:\n")
	for _, f := range seenFacts(r) {
		b.WriteString("- " + f + "\n")
	}
	b.WriteString("3. Current work: going on with the next output.\n</summary>")
	return modeltest.Text(b.String())
}

var notesPathRE = regexp.MustCompile(`Update the notes file (\S+) so`)

// worklogAnchor is the line under the Worklog heading of cairn's notes
// template.
const worklogAnchor = "_One terse line per step taken, oldest first_"

var stepRE = regexp.MustCompile(`Step ([0-9]+)\.`)

// lastStep is the number of the last step the request shows, "0" before
// the first.
func lastStep(r *modeltest.Request) string {
	all := stepRE.FindAllSubmatch(r.SeenJSON(), -1)
	if len(all) == 0 {
		return "0"
	}
	return string(all[len(all)-1][1])
}

// notes is the extractive note-taker: one Edit that appends every fact
// line it was shown and the notes do not hold yet — or, when there is
// none, a Worklog line naming the last step it saw, as a note-taker
// always moves the log on — then (after the Edit's result) a short
// closing answer.
func (p *player) notes(r *modeltest.Request) modeltest.Reply {
	last := r.Params.Messages[len(r.Params.Messages)-1]
	for _, b := range last.Content {
		if b.Type == model.BlockToolResult && strings.HasPrefix(b.ToolUseID, "toolu_notes_") {
			return modeltest.Text("The notes are up to date.")
		}
	}
	m := notesPathRE.FindSubmatch(r.Body)
	if m == nil {
		return modeltest.Text("The notes are up to date.")
	}
	path := string(m[1])
	text := lastUserText(r.Params)
	current := text
	if _, after, ok := strings.Cut(text, "<current-notes>"); ok {
		current, _, _ = strings.Cut(after, "</current-notes>")
	}
	var add []string
	for _, f := range seenFacts(r) {
		if !strings.Contains(current, f) {
			add = append(add, f)
		}
	}
	anchor, text := "# Key results", strings.Join(add, "\n")
	if len(add) == 0 {
		anchor, text = worklogAnchor, "- went through the outputs up to step "+lastStep(r)
	}
	if !strings.Contains(current, anchor) {
		return modeltest.Text("The notes are up to date.")
	}
	in, _ := json.Marshal(map[string]string{
		"file_path": path, "old_string": anchor, "new_string": anchor + "\n" + text,
	})
	return modeltest.Reply{Content: []model.Block{modeltest.ToolUse(fmt.Sprintf("toolu_notes_%s", r.ID), "Edit", string(in))}}
}
