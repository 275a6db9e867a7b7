package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/model"
)

// Recaller picks the memories that bear on a request (SPEC M5): the
// headers of the newest MaxScan memory files go with the request to a
// small model, which names at most MaxRecall of them. Safe for concurrent
// use; it remembers what it surfaced, so a memory is shown once a
// session.
type Recaller struct {
	// Dir is the memory folder.
	Dir string
	// Model answers the side request; ModelName names it
	// (CAIRN_SMALL_MODEL, the smallModel setting, else the main model).
	Model     model.Model
	ModelName string
	// Timeout bounds one recall (0: 30 seconds).
	Timeout time.Duration
	// Now is the clock, for ages.
	Now func() time.Time
	// Warn hears about malformed memory files. May be nil.
	Warn func(string)

	mu       sync.Mutex
	surfaced map[string]bool
}

// Recalled is one memory chosen for a request.
type Recalled struct {
	Path    string
	Mod     time.Time
	Content string
}

// selectorPrompt is the side request's system prompt.
const selectorPrompt = `You choose which saved memories will help an AI coding agent with the request it just received. You are given the request and, for each memory file, its name, when it was saved and its first lines. Reply with JSON only, in the form {"selected": ["file.md", ...]}: at most 5 file names, the most useful first, and only memories that clearly bear on the request. Reply {"selected": []} when none does.`

// Recall returns the memories that bear on query, at most MaxRecall,
// leaving out those surfaced before. No memory files, or none chosen, is
// a nil result; a failed side request is an error. Cancelling ctx stops
// the scan and the request.
func (r *Recaller) Recall(ctx context.Context, query string) ([]Recalled, error) {
	if r.Timeout == 0 {
		r.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	headers, warnings, err := Scan(ctx, r.Dir, MaxScan)
	for _, w := range warnings {
		if r.Warn != nil {
			r.Warn(w)
		}
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	fresh := headers[:0:0]
	for _, h := range headers {
		if !r.surfaced[h.Path] {
			fresh = append(fresh, h)
		}
	}
	r.mu.Unlock()
	if len(fresh) == 0 || strings.TrimSpace(query) == "" {
		return nil, nil
	}
	names, err := r.choose(ctx, query, fresh)
	if err != nil {
		return nil, err
	}
	byName := map[string]Header{}
	for _, h := range fresh {
		byName[h.File] = h
	}
	var out []Recalled
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.surfaced == nil {
		r.surfaced = map[string]bool{}
	}
	for _, n := range names {
		h, ok := byName[n]
		if !ok || r.surfaced[h.Path] || len(out) == MaxRecall {
			continue
		}
		text, cut, err := readCapped(h.Path, maxRecalledBytes)
		if err != nil {
			continue
		}
		if cut {
			text += fmt.Sprintf("\n[cut at %d bytes: read %s for the rest]", maxRecalledBytes, h.Path)
		}
		r.surfaced[h.Path] = true
		out = append(out, Recalled{Path: h.Path, Mod: h.Mod, Content: strings.TrimSpace(text)})
	}
	return out, nil
}

// maxRecalledBytes is how much of one memory a recall shows.
const maxRecalledBytes = 8 << 10

// choose sends the side request and reads the names it answers.
func (r *Recaller) choose(ctx context.Context, query string, headers []Header) ([]string, error) {
	now := r.now()
	var b strings.Builder
	fmt.Fprintf(&b, "Request:\n%s\n\nMemory files, newest first:\n", query)
	for _, h := range headers {
		fmt.Fprintf(&b, "\n## %s (saved %s)\n%s", h.File, Age(now, h.Mod), h.Head)
	}
	req := &model.Request{
		Model: r.ModelName, MaxTokens: 512,
		System:   []model.SystemBlock{{Text: selectorPrompt}},
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{model.TextBlock(b.String())}}},
	}
	var resp *model.Response
	for c, err := range r.Model.Stream(ctx, req) {
		if err != nil {
			return nil, fmt.Errorf("memory recall: %w", err)
		}
		if c.Kind == model.ChunkDone {
			resp = c.Response
		}
	}
	if resp == nil {
		return nil, fmt.Errorf("memory recall: the stream ended without a response")
	}
	var text strings.Builder
	for _, blk := range resp.Content {
		if blk.Type == model.BlockText {
			text.WriteString(blk.Text)
		}
	}
	return selected(text.String(), headers), nil
}

// selected reads the selector's answer: the JSON object it was asked for,
// or failing that the file names it mentions, in order.
func selected(answer string, headers []Header) []string {
	if i, j := strings.IndexByte(answer, '{'), strings.LastIndexByte(answer, '}'); i >= 0 && j > i {
		var v struct {
			Selected []string `json:"selected"`
		}
		if json.Unmarshal([]byte(answer[i:j+1]), &v) == nil {
			return v.Selected
		}
	}
	type hit struct {
		at   int
		name string
	}
	var hits []hit
	for _, h := range headers {
		if at := strings.Index(answer, h.File); at >= 0 {
			hits = append(hits, hit{at, h.File})
		}
	}
	var out []string
	for len(hits) > 0 {
		k := 0
		for i := range hits {
			if hits[i].at < hits[k].at {
				k = i
			}
		}
		out = append(out, hits[k].name)
		hits = append(hits[:k], hits[k+1:]...)
	}
	return out
}

func (r *Recaller) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Age says how long ago t was, in words: "today", "yesterday", "12 days
// ago".
func Age(now, t time.Time) string {
	days := Days(now, t)
	switch days {
	case 0:
		return "today"
	case 1:
		return "yesterday"
	}
	return fmt.Sprintf("%d days ago", days)
}

// Days is the number of whole days from t to now.
func Days(now, t time.Time) int {
	d := now.Sub(t).Hours() / 24
	if d < 0 {
		return 0
	}
	return int(math.Floor(d))
}

// Render is the system reminder text that carries recalled memories:
// each with its path and age, and, past a day, a note that it may be out
// of date.
func Render(rs []Recalled, now time.Time) string {
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Memories saved in earlier sessions that may bear on this request:")
	for _, m := range rs {
		fmt.Fprintf(&b, "\n\n## %s (saved %s)\n", m.Path, Age(now, m.Mod))
		if d := Days(now, m.Mod); d >= 1 {
			fmt.Fprintf(&b, "This memory is %d day%s old. It records what was true when it was saved, not what is true now: check what it says about code or files against their current state before relying on it.\n\n", d, plural(d))
		}
		b.WriteString(m.Content)
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
