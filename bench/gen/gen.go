// Package gen writes synthetic Claude Code session transcripts of a chosen
// size, for benchmarks and for tests of the transcript loader.
//
// The output imitates what Claude Code 2.1.197 writes, line for line and key
// for key: turns made of a queued prompt, model responses stored one line
// per content block, Read, Bash, Edit and Grep calls (sometimes two or three
// in parallel) answered by tool results with their toolUseResult details,
// a last-prompt record after each turn, progress lines while a command runs,
// occasional attachments and images, and, when Options.Compact asks for it,
// a manual or automatic compaction about every 1.5 MB, whose boundary
// preserves the last few messages before it. By default there is no
// compaction: the whole file is the conversation a resume sends, the hard
// case of resuming. The same Options always give the same bytes.
//
// Generate reports, beside the sizes, what a loader must rebuild from the
// file to resume the session, so a test can check one against the other.
package gen

import (
	"bufio"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultCompactEvery is how much transcript is written between two
// compactions unless Options says otherwise.
const DefaultCompactEvery = 1536 << 10

// Envelope values written on every chain line.
const (
	Version    = "2.1.197"
	Model      = "claude-opus-4-5-20251101"
	CWD        = "/home/user/acme-api"
	GitBranch  = "main"
	Entrypoint = "sdk-cli"
)

// Options choose the transcript to generate.
type Options struct {
	// Size is the size to reach, in bytes. Generation stops at the end of
	// the first turn that reaches it, so the output is slightly larger
	// (by at most one turn, typically tens of kilobytes).
	Size int64
	// Seed chooses the session; equal Options give equal output.
	Seed uint64
	// Compact turns compaction on. Without it (the default) the session is
	// one unbroken chain and resuming it needs the whole file.
	Compact bool
	// CompactEvery is roughly how many bytes are written between two
	// compactions (each gap varies by ±20%); 0 means DefaultCompactEvery.
	// Setting it turns compaction on.
	CompactEvery int64
	// Start is the time of the first line; the zero value means a fixed
	// date, so the output does not depend on the clock.
	Start time.Time
	// Chinese is the share (0 to 1) of the prose (the prompts, the
	// model's sentences, the code's comments) written in Chinese, as by
	// a user who works in Chinese; the fake git log's subjects and the
	// code's comments come from the same words. The tool results (code,
	// command output) stay mostly ASCII, so at 0.5 about 5% of a
	// transcript's bytes are multi-byte UTF-8, at 1 about 11%. 0 writes
	// English only, the same bytes as before the option.
	Chinese float64
	// Terse makes every tool result a few lines (a slice of 3 to 14
	// lines read, the first 3 lines of a command's output or a search's
	// hits), as in a session of many small steps: the same bytes hold
	// several times the lines, and a reader's cost per line shows. The
	// random choices are the same, so the session takes the same turns
	// with shorter results.
	Terse bool
	// Window caps the usage each response records: a server takes no
	// request over its window, so in a real session the recorded context
	// (input, cache writes and reads) and the reply never come to more.
	// Without compaction the context soon outgrows any window, and the
	// usage then stays at the cap while the transcript grows: a resume
	// knows from the usage only that the context is near the window, and
	// weighs the rest itself. The random choices are the same as
	// without it: the same session, to the turn at which Size is reached
	// (capped counts have fewer digits, so it may take a turn more). A
	// reply's own tokens are not capped: the window should be far larger
	// than a reply (Claude's 200,000). 0 (the default) lets the usage
	// follow the context, past any window, the same bytes as before the
	// option.
	Window int64
}

// Stats describes a generated transcript.
type Stats struct {
	SessionID   string
	Lines       int
	Bytes       int64
	Turns       int
	ToolCalls   int
	Compactions int
	// Leaf is the uuid of the session's last message, which the final
	// last-prompt record names.
	Leaf string
	// Resume lists, in order, the uuids of the chain entries a loader must
	// rebuild to resume the session: from the last compact boundary (or
	// the first line) to Leaf, the boundary's preserved messages spliced
	// in after its summary, parallel tool results in file order.
	Resume []string
}

// Generate writes a transcript of about opts.Size bytes to w.
func Generate(w io.Writer, opts Options) (Stats, error) {
	if opts.Size <= 0 {
		return Stats{}, errors.New("gen: the size must be positive")
	}
	if opts.CompactEvery > 0 {
		opts.Compact = true
	} else {
		opts.CompactEvery = DefaultCompactEvery
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 12, 9, 30, 0, 0, time.UTC)
	}
	g := &generator{
		opts: opts,
		rng:  rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		out:  bufio.NewWriterSize(w, 1<<20),
		now:  opts.Start.UTC(),
	}
	g.sessionID = g.uuid()
	g.st.SessionID = g.sessionID
	g.newProject()
	g.planCompaction()
	for g.err == nil && (g.st.Turns == 0 || g.st.Bytes < opts.Size) {
		if opts.Compact && g.turnsSinceCompact > 0 && g.sinceCompact >= g.nextCompact {
			g.compact()
		}
		g.turn()
	}
	if g.err == nil {
		g.err = g.out.Flush()
	}
	g.st.Leaf = g.parent
	g.st.Resume = g.view
	return g.st, g.err
}

type generator struct {
	opts Options
	rng  *rand.Rand
	out  *bufio.Writer
	err  error
	st   Stats
	e    enc
	now  time.Time

	sessionID string
	slug      string // set at the first compaction, as Claude Code does
	parent    string // the chain's tip: the parent of the next chain line
	promptID  string

	ctxTokens  int64 // the context the next request would send
	dropped    int64 // tokens dropped by compactions so far
	cacheWrite int64 // tokens added since the last response

	sinceCompact      int64
	nextCompact       int64
	turnsSinceCompact int

	view      []string // the resume view since the last boundary
	responses []int    // where each response since the last boundary starts in view

	files  []*file
	recent []*file // files read or edited, most recent last
	edits  []edit  // recent edits, for git diff
}

// emit ends the line being built and writes it.
func (g *generator) emit() {
	if g.err != nil {
		g.e.b = g.e.b[:0]
		return
	}
	g.e.b = append(g.e.b, '\n')
	n, err := g.out.Write(g.e.b)
	g.err = err
	g.st.Lines++
	g.st.Bytes += int64(n)
	g.sinceCompact += int64(n)
	g.e.b = g.e.b[:0]
}

// chain records a chain line written to the main path.
func (g *generator) chain(uuid string) {
	g.view = append(g.view, uuid)
	g.parent = uuid
}

// tick advances the clock by up to upTo and returns the timestamp.
func (g *generator) tick(upTo time.Duration) string {
	g.now = g.now.Add(time.Millisecond + time.Duration(g.rng.Int64N(int64(upTo))))
	return g.now.Format("2006-01-02T15:04:05.000Z")
}

func (g *generator) planCompaction() {
	every := g.opts.CompactEvery
	g.nextCompact = every*4/5 + g.rng.Int64N(every*2/5+1)
	g.sinceCompact = 0
	g.turnsSinceCompact = 0
}

// uuid returns a random version 4 UUID.
func (g *generator) uuid() string {
	var b [16]byte
	hi, lo := g.rng.Uint64(), g.rng.Uint64()
	for i := range 8 {
		b[i] = byte(hi >> (56 - 8*i))
		b[8+i] = byte(lo >> (56 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&15])
	}
	return string(out)
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// token returns prefix followed by n random base62 characters, the shape
// of message, request and tool_use ids.
func (g *generator) token(prefix string, n int) string {
	b := make([]byte, len(prefix), len(prefix)+n)
	copy(b, prefix)
	for range n {
		b = append(b, base62[g.rng.IntN(len(base62))])
	}
	return string(b)
}

func (g *generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// Line writers. Key order follows Claude Code's lines exactly.

// begin starts a chain line; an empty parent is written as null.
func (g *generator) begin(parent string) {
	e := &g.e
	e.b = append(e.b[:0], '{')
	if parent == "" {
		e.Null("parentUuid")
	} else {
		e.Str("parentUuid", parent)
	}
	e.Bool("isSidechain", false)
}

// end writes the envelope and ends a chain line.
func (g *generator) end() {
	e := &g.e
	e.Str("userType", "external")
	e.Str("entrypoint", Entrypoint)
	e.Str("cwd", CWD)
	e.Str("sessionId", g.sessionID)
	e.Str("version", Version)
	e.Str("gitBranch", GitBranch)
	if g.slug != "" {
		e.Str("slug", g.slug)
	}
	e.End()
	g.emit()
}

// queueOp writes the records of a prompt queued and taken up at once.
func (g *generator) queueOp(content string) {
	for _, op := range []string{"enqueue", "dequeue"} {
		e := &g.e
		e.b = append(e.b[:0], '{')
		e.Str("type", "queue-operation")
		e.Str("operation", op)
		e.Str("timestamp", g.tick(2*time.Millisecond))
		e.Str("sessionId", g.sessionID)
		if op == "enqueue" {
			e.Str("content", content)
		}
		e.End()
		g.emit()
	}
}

// lastPrompt names the chain's tip as the session's leaf; after a
// compaction Claude Code writes it without the prompt.
func (g *generator) lastPrompt(prompt string) {
	e := &g.e
	e.b = append(e.b[:0], '{')
	e.Str("type", "last-prompt")
	if prompt != "" {
		e.Str("lastPrompt", prompt)
	}
	e.Str("leafUuid", g.parent)
	e.Str("sessionId", g.sessionID)
	e.End()
	g.emit()
}

// modeRecord writes a mode record, a side record the loader passes over.
func (g *generator) modeRecord() {
	e := &g.e
	e.b = append(e.b[:0], '{')
	e.Str("type", "mode")
	e.Str("mode", "normal")
	e.Str("sessionId", g.sessionID)
	e.End()
	g.emit()
}

// userText writes a user line with string content: a typed prompt, or a
// line Claude Code adds itself (local command lines, some marked meta).
func (g *generator) userText(text string, prompt, meta bool) {
	id := g.uuid()
	g.begin(g.parent)
	e := &g.e
	e.Str("promptId", g.promptID)
	e.Str("type", "user")
	e.Obj("message")
	e.Str("role", "user")
	e.Str("content", text)
	e.End()
	if meta {
		e.Bool("isMeta", true)
	}
	e.Str("uuid", id)
	e.Str("timestamp", g.tick(80*time.Millisecond))
	if prompt {
		e.Str("permissionMode", "bypassPermissions")
		e.Str("promptSource", "sdk")
	}
	g.end()
	g.chain(id)
	g.ctxTokens += int64(len(text) / 4)
}

// attachment writes an attachment line whose object body is written by fill.
func (g *generator) attachment(fill func(e *enc)) {
	id := g.uuid()
	g.begin(g.parent)
	e := &g.e
	e.Obj("attachment")
	fill(e)
	e.End()
	e.Str("type", "attachment")
	e.Str("uuid", id)
	e.Str("timestamp", g.tick(3*time.Millisecond))
	g.end()
	g.chain(id)
}

// listings writes the agent and skill listings attached to the first
// prompt; after a compaction only the agents are listed again.
func (g *generator) listings() {
	g.attachment(func(e *enc) {
		e.Str("type", "agent_listing_delta")
		e.Arr("addedTypes")
		for _, a := range agents {
			e.Elem(a.name)
		}
		e.EndArr()
		e.Arr("addedLines")
		for _, a := range agents {
			e.Elem("- " + a.name + ": " + a.desc)
		}
		e.EndArr()
		e.Arr("removedTypes")
		e.EndArr()
		e.Bool("isInitial", true)
		e.Bool("showConcurrencyNote", true)
	})
	if g.st.Compactions > 0 {
		return
	}
	g.attachment(func(e *enc) {
		e.Str("type", "skill_listing")
		var b strings.Builder
		for i, s := range skills {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("- " + s.name + ": " + s.desc)
		}
		e.Str("content", b.String())
		e.Int("skillCount", int64(len(skills)))
		e.Bool("isInitial", true)
		e.Arr("names")
		for _, s := range skills {
			e.Elem(s.name)
		}
		e.EndArr()
	})
}

// taskReminder writes an attachment that renders to nothing.
func (g *generator) taskReminder() {
	g.attachment(func(e *enc) {
		e.Str("type", "task_reminder")
		e.Arr("content")
		e.EndArr()
		e.Int("itemCount", 0)
	})
}

// fileAttachment re-reads f after a compaction. A file too large to
// include is only named, for the model to Read again if it needs it.
func (g *generator) fileAttachment(f *file) {
	g.attachment(func(e *enc) {
		text := f.text()
		if len(text) > 24<<10 {
			e.Str("type", "compact_file_reference")
			e.Str("filename", f.path)
			e.Str("displayPath", f.rel)
			return
		}
		e.Str("type", "file")
		e.Str("filename", f.path)
		e.Obj("content")
		e.Str("type", "text")
		e.Obj("file")
		e.Str("filePath", f.path)
		e.Str("content", text)
		e.Int("numLines", int64(len(f.lines)+1))
		e.Int("startLine", 1)
		e.Int("totalLines", int64(len(f.lines)+1))
		e.End()
		e.End()
		e.Str("displayPath", f.rel)
		g.ctxTokens += int64(len(text) / 4)
	})
}

// turn writes one prompt and the work that answers it.
func (g *generator) turn() {
	g.st.Turns++
	g.turnsSinceCompact++
	prompt := g.prompt()
	g.now = g.now.Add(time.Duration(5+g.rng.IntN(300)) * time.Second)
	g.queueOp(prompt)
	g.promptID = g.uuid()
	g.userText(prompt, true, false)
	switch {
	case g.st.Turns == 1:
		g.listings()
	case g.chance(0.2):
		g.taskReminder()
	}
	var steps int
	switch r := g.rng.Float64(); {
	case r < 0.6:
		steps = 1 + g.rng.IntN(4)
	case r < 0.9:
		steps = 5 + g.rng.IntN(6)
	default:
		steps = 11 + g.rng.IntN(10)
	}
	for range steps {
		g.response(true)
	}
	g.response(false)
	g.lastPrompt(prompt)
	if g.chance(0.05) {
		g.modeRecord()
	}
}

// call is one tool call with its result.
type call struct {
	id      string
	name    string
	input   []byte // the tool_use input object
	content string // the tool_result content
	blocks  []byte // the tool_result content as a block list, instead of content
	isError *bool  // is_error, when the tool writes it
	detail  []byte // toolUseResult
}

// response writes one model response, one line per content block, and with
// tools the results of its calls.
func (g *generator) response(tools bool) {
	msgID := g.token("msg_01", 22)
	reqID := g.token("req_011C", 20)
	var blocks [][]byte
	var calls []call
	out := 0
	if g.chance(0.15) {
		var e enc
		e.Open()
		e.Str("type", "thinking")
		t := g.sentences(2 + g.rng.IntN(6))
		e.Str("thinking", t)
		e.Str("signature", g.token("Eu", 300+g.rng.IntN(500)))
		e.End()
		blocks = append(blocks, e.b)
		out += len(t) / 4
	}
	if !tools || g.chance(0.45) {
		n := 1 + g.rng.IntN(2)
		if !tools {
			n = 2 + g.rng.IntN(6)
		}
		t := g.sentences(n)
		if !tools && g.chance(0.4) {
			t += "\n\n" + g.bullets()
		}
		var e enc
		e.Open()
		e.Str("type", "text")
		e.Str("text", t)
		e.End()
		blocks = append(blocks, e.b)
		out += len(t) / 4
	}
	if tools {
		n := 1
		switch r := g.rng.Float64(); {
		case r < 0.12:
			n = 2
		case r < 0.18:
			n = 3
		}
		for range n {
			c := g.makeCall()
			var e enc
			e.Open()
			e.Str("type", "tool_use")
			e.Str("id", c.id)
			e.Str("name", c.name)
			e.Raw("input", c.input)
			e.End()
			blocks = append(blocks, e.b)
			calls = append(calls, c)
			out += 20 + len(c.input)/4
		}
	}
	stop := "end_turn"
	if tools {
		stop = "tool_use"
	}
	usage := g.usage(int64(out))

	g.responses = append(g.responses, len(g.view))
	var useLines []string
	for i, blk := range blocks {
		id := g.uuid()
		g.begin(g.parent)
		e := &g.e
		e.Obj("message")
		e.Str("id", msgID)
		e.Str("type", "message")
		e.Str("role", "assistant")
		e.Str("model", Model)
		e.Arr("content")
		e.RawElem(blk)
		e.EndArr()
		e.Str("stop_reason", stop)
		e.Null("stop_sequence")
		e.Raw("usage", usage)
		e.Null("stop_details")
		e.End()
		e.Str("requestId", reqID)
		e.Str("type", "assistant")
		e.Str("uuid", id)
		e.Str("timestamp", g.tick(40*time.Millisecond))
		g.end()
		g.chain(id)
		if i >= len(blocks)-len(calls) { // the tool_use blocks come last
			useLines = append(useLines, id)
		}
	}
	for i, c := range calls {
		if c.name == "Bash" && g.chance(0.3) {
			g.progress(c, useLines[i])
		}
		g.toolResult(c, useLines[i])
		g.st.ToolCalls++
	}
	g.ctxTokens += int64(out)
}

// toolResult writes the result of c, answering the tool_use line use.
func (g *generator) toolResult(c call, use string) {
	id := g.uuid()
	g.begin(use)
	e := &g.e
	e.Str("promptId", g.promptID)
	e.Str("type", "user")
	e.Obj("message")
	e.Str("role", "user")
	e.Arr("content")
	e.Open()
	e.Str("tool_use_id", c.id)
	e.Str("type", "tool_result")
	if c.blocks != nil {
		e.Raw("content", c.blocks)
	} else {
		e.Str("content", c.content)
	}
	if c.isError != nil {
		e.Bool("is_error", *c.isError)
	}
	e.End()
	e.EndArr()
	e.End()
	e.Str("uuid", id)
	e.Str("timestamp", g.tick(900*time.Millisecond))
	e.Raw("toolUseResult", c.detail)
	e.Str("sourceToolAssistantUUID", use)
	g.end()
	g.chain(id)
	n := int64(len(c.content) / 4)
	if c.blocks != nil {
		n = 1600 // an image costs about this much whatever its size
	}
	g.ctxTokens += n
	g.cacheWrite += n
}

// progress writes the lines Claude Code records while a command runs: each
// hangs off the tool_use line and nothing continues from it.
func (g *generator) progress(c call, use string) {
	n := 1 + g.rng.IntN(3)
	var seen strings.Builder
	for i := range n {
		line := g.sentences(1)
		seen.WriteString(line + "\n")
		id := g.uuid()
		g.begin(use)
		e := &g.e
		e.Str("userType", "external")
		e.Str("entrypoint", Entrypoint)
		e.Str("cwd", CWD)
		e.Str("sessionId", g.sessionID)
		e.Str("version", Version)
		e.Str("gitBranch", GitBranch)
		if g.slug != "" {
			e.Str("slug", g.slug)
		}
		e.Str("type", "progress")
		e.Obj("data")
		e.Str("type", "bash_progress")
		e.Str("output", line)
		e.Str("fullOutput", seen.String())
		e.Int("elapsedTimeSeconds", int64(3*(i+1)))
		e.Int("totalLines", int64(i+1))
		e.End()
		e.Str("toolUseID", "bash-progress-"+strconv.Itoa(i))
		e.Str("parentToolUseID", c.id)
		e.Str("uuid", id)
		e.Str("timestamp", g.tick(3*time.Second))
		e.End()
		g.emit()
	}
}

func (g *generator) usage(out int64) []byte {
	var e enc
	e.Open()
	fresh := int64(3)
	created := g.cacheWrite + 50 + g.rng.Int64N(200)
	read := max(g.ctxTokens-created, 0)
	if g.st.Turns == 1 && len(g.view) < 6 {
		fresh, created, read = 1200+g.rng.Int64N(800), 16000+g.rng.Int64N(4000), 0
	}
	g.cacheWrite = 0
	if w := g.opts.Window; w > 0 {
		created = min(created, max(w-out-fresh, 0))
		read = min(read, max(w-out-fresh-created, 0))
	}
	e.Int("input_tokens", fresh)
	e.Int("cache_creation_input_tokens", created)
	e.Int("cache_read_input_tokens", read)
	e.Int("output_tokens", out)
	e.Obj("server_tool_use")
	e.Int("web_search_requests", 0)
	e.Int("web_fetch_requests", 0)
	e.End()
	e.Str("service_tier", "standard")
	e.Obj("cache_creation")
	e.Int("ephemeral_1h_input_tokens", created)
	e.Int("ephemeral_5m_input_tokens", 0)
	e.End()
	e.Str("inference_geo", "")
	e.Arr("iterations")
	e.EndArr()
	e.Str("speed", "standard")
	e.End()
	return e.b
}

// compact writes a compaction: the boundary, the summary, and the lines
// Claude Code adds after them. The last one or two responses before it are
// preserved: they stay where they are and the boundary names them.
func (g *generator) compact() {
	manual := g.chance(0.35)
	trigger := "auto"
	if manual {
		trigger = "manual"
		g.queueOp("/compact")
	}
	if g.slug == "" {
		g.slug = g.pick(slugWords) + "-" + g.pick(slugWords) + "-" + g.pick(slugNames)
	}
	k := min(1+g.rng.IntN(2), len(g.responses))
	preserved := slices.Clone(g.view[g.responses[len(g.responses)-k]:])
	leaf := g.parent
	boundary, summary := g.uuid(), g.uuid()
	pre := g.ctxTokens + 20000
	summaryText := g.summary()
	post := int64(len(summaryText)/4) + 900 + g.rng.Int64N(3000)
	g.dropped += pre - post

	e := &g.e
	e.b = append(e.b[:0], '{')
	e.Null("parentUuid")
	e.Str("logicalParentUuid", leaf)
	e.Bool("isSidechain", false)
	e.Str("type", "system")
	e.Str("subtype", "compact_boundary")
	e.Str("content", "Conversation compacted")
	e.Bool("isMeta", false)
	e.Str("timestamp", g.tick(30*time.Second))
	e.Str("uuid", boundary)
	e.Str("level", "info")
	e.Obj("compactMetadata")
	e.Str("trigger", trigger)
	e.Int("preTokens", pre)
	e.Int("durationMs", 20000+g.rng.Int64N(60000))
	e.Obj("preservedSegment")
	e.Str("headUuid", preserved[0])
	e.Str("anchorUuid", summary)
	e.Str("tailUuid", preserved[len(preserved)-1])
	e.End()
	e.Obj("preservedMessages")
	e.Str("anchorUuid", summary)
	for _, key := range []string{"uuids", "allUuids"} {
		e.Arr(key)
		for _, id := range preserved {
			e.Elem(id)
		}
		e.EndArr()
	}
	e.End()
	e.Int("postTokens", post)
	e.Int("cumulativeDroppedTokens", g.dropped)
	e.End()
	g.end()
	g.st.Compactions++

	g.view = append(g.view[:0:0], boundary)
	g.responses = nil
	g.parent = boundary
	g.promptID = g.uuid()
	g.ctxTokens = 0
	g.userTextWithID(summary, summaryText)
	g.view = append(g.view, preserved...)
	g.ctxTokens = post
	if manual {
		g.userText("<local-command-caveat>Caveat: the messages below came from local commands the user ran. Do not answer them unless the user asks about them.</local-command-caveat>", false, true)
		g.userText("<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args></command-args>", false, false)
		g.userText("<local-command-stdout>Compacted </local-command-stdout>", false, false)
	}
	seen := make(map[*file]bool)
	for i := len(g.recent) - 1; i >= 0 && len(seen) < 3; i-- {
		if f := g.recent[i]; !seen[f] {
			seen[f] = true
			g.fileAttachment(f)
		}
	}
	g.listings()
	if manual {
		g.lastPrompt("")
	}
	g.planCompaction()
}

// userTextWithID writes the compact summary line with a uuid chosen before.
func (g *generator) userTextWithID(id, text string) {
	g.begin(g.parent)
	e := &g.e
	e.Str("promptId", g.promptID)
	e.Str("type", "user")
	e.Obj("message")
	e.Str("role", "user")
	e.Str("content", text)
	e.End()
	e.Bool("isVisibleInTranscriptOnly", true)
	e.Bool("isCompactSummary", true)
	e.Str("uuid", id)
	e.Str("timestamp", g.tick(5*time.Millisecond))
	g.end()
	g.chain(id)
}
