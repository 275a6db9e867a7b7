package transcript_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// Environment of the child processes the crash and lock tests start: the
// test binary run again with -test.run selecting the child's test.
const (
	crashDirEnv  = "CAIRN_TEST_CRASH_DIR"
	crashSeedEnv = "CAIRN_TEST_CRASH_SEED"
	crashSession = "5f0c8f8e-2b7a-4c61-9d3e-0a4b8f6e1c2d"
)

// TestCrash kills a process appending a session at many points and checks
// after every kill that the file still resumes: it loads without error,
// every user entry whose durable append returned is in it, the newest of
// them is in the rebuilt chain, and the messages rebuilt are valid for the
// API. All runs append to one file, so later runs resume files earlier
// kills (and a few hand-made torn writes) left behind.
func TestCrash(t *testing.T) {
	const kills = 32
	dir := t.TempDir()
	path := transcript.NewFileStore(dir).Path(crashSession)
	rng := rand.New(rand.NewPCG(20260112, 1))
	var acked []string
	killed, tears := 0, 0
	for run := 0; killed < kills; run++ {
		if run > 3*kills {
			t.Fatalf("only %d kills in %d runs: the child keeps finishing before the kill point", killed, run)
		}
		// Kill after this many lines of output: 0 kills during start-up
		// and resume, more lands somewhere in the turns.
		at := rng.IntN(48)
		if rng.IntN(8) == 0 {
			at = 0
		}
		child := startChild(t, "TestCrashChild", crashDirEnv+"="+dir, crashSeedEnv+"="+strconv.FormatUint(rng.Uint64(), 10))
		lines, wasKilled := child.killAfter(t, at)
		for _, l := range lines {
			if id, ok := strings.CutPrefix(l, "ack "); ok {
				acked = append(acked, id)
			}
		}
		if wasKilled {
			killed++
		}
		checkCrashedFile(t, path, acked, run)
		// Now and then, leave half a line at the end, as a write cut short
		// by a power loss would.
		if rng.IntN(5) == 0 {
			tearFile(t, path, rng)
			tears++
		}
	}
	t.Logf("%d kills, %d torn tails, %d acknowledged user entries", killed, tears, len(acked))
	if len(acked) < kills {
		t.Errorf("only %d user entries were acknowledged in %d runs: the kills came too early to test much", len(acked), kills)
	}
}

// checkCrashedFile checks the file a killed child left.
func checkCrashedFile(t *testing.T, path string, acked []string, run int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && len(acked) == 0 {
		return // killed before creating it
	}
	if err != nil {
		t.Fatal(err)
	}
	// Every acknowledged entry is a whole line of its own.
	want := make(map[string]bool, len(acked))
	for _, id := range acked {
		want[id] = true
	}
	found := make(map[string]bool, len(acked))
	for line := range bytes.Lines(data) {
		i := bytes.Index(line, []byte(`"uuid":"`))
		if i < 0 || len(line) < i+8+36 {
			continue
		}
		id := string(line[i+8 : i+8+36])
		if !want[id] {
			continue
		}
		e, err := transcript.DecodeEntry(line)
		if err != nil || e.UUID != id || !bytes.HasSuffix(line, []byte("\n")) {
			t.Fatalf("run %d: the line of acknowledged entry %s is damaged (%v): %.200q", run, id, err, line)
		}
		found[id] = true
	}
	for _, id := range acked {
		if !found[id] {
			t.Fatalf("run %d: acknowledged user entry %s is not in the file", run, id)
		}
	}

	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatalf("run %d: Load after the kill: %v", run, err)
	}
	if len(acked) > 0 {
		newest := acked[len(acked)-1]
		if !slices.ContainsFunc(conv.Entries, func(e *transcript.Entry) bool { return e.UUID == newest }) {
			t.Fatalf("run %d: the newest acknowledged entry %s is not in the rebuilt chain (leaf %s, %d entries, warnings %q)", run, newest, conv.Leaf, len(conv.Entries), conv.Warnings)
		}
	}
	if len(conv.Entries) > 0 {
		if err := checkAPIValid(conv.Messages()); err != nil {
			t.Fatalf("run %d: Messages after the kill is not valid for the API: %v", run, err)
		}
	}
}

// tearFile appends the first part of a valid line, without its newline.
func tearFile(t *testing.T, path string, rng *rand.Rand) {
	t.Helper()
	s := newChildSession("torn", rng, "")
	e := s.user(strings.Repeat("a prompt that was being written when the power went out ", 4))
	line, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(line[:1+rng.IntN(len(line)-1)]); err != nil {
		t.Fatal(err)
	}
}

// TestCrashChild is the process TestCrash kills; run alone it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrash")
	}
	seed, err := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := crashChild(context.Background(), dir, seed, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// crashChild resumes the session in dir and appends turns to it, printing
// "ack <uuid>" once each user entry's durable append has returned and
// "step" after every other append, until it has written 400 turns.
func crashChild(ctx context.Context, dir string, seed uint64, out io.Writer) error {
	store := transcript.NewFileStore(dir)
	app, err := store.OpenAppender(ctx, crashSession)
	if err != nil {
		return err
	}
	// Resume: rebuild the chain and write what the loader repaired.
	src, err := store.OpenSource(ctx, crashSession)
	if err != nil {
		return err
	}
	conv, err := transcript.Load(ctx, src, transcript.LoadOptions{})
	src.Close()
	if err != nil {
		return err
	}
	var known []string
	for _, e := range conv.FromFile() {
		known = append(known, e.UUID)
	}
	w := transcript.NewWriter(app, transcript.WriterOptions{Known: known})
	defer w.Close()
	if conv.Repaired > 0 {
		if err := w.AppendDurable(ctx, conv.Repairs()...); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	s := newChildSession(crashSession, rng, "")
	if n := len(conv.Entries); n > 0 {
		s.parent = conv.Entries[n-1].UUID
	}
	step := func(entries ...transcript.Entry) error {
		if err := w.Append(entries...); err != nil {
			return err
		}
		_, err := fmt.Fprintln(out, "step")
		return err
	}
	durable := func(entries ...transcript.Entry) error {
		if err := w.AppendDurable(ctx, entries...); err != nil {
			return err
		}
		for _, e := range entries {
			if e.Type == transcript.TypeUser {
				if _, err := fmt.Fprintln(out, "ack", e.UUID); err != nil {
					return err
				}
			}
		}
		return nil
	}

	var lastTurn []string // chain uuids of the last whole turn
	for turn := range 400 {
		var compaction []transcript.Entry
		if len(lastTurn) > 0 && rng.IntN(5) == 0 {
			// Compact before the prompt, preserving the last turn. The
			// boundary and summary go out with the prompt: a file ending
			// at the summary loses the preserved turn on load (see
			// TestResumeRightAfterCompaction).
			b, anchor := s.boundary(lastTurn)
			compaction = []transcript.Entry{b, s.summary(anchor)}
		}
		var chain []string
		add := func(e transcript.Entry) transcript.Entry {
			chain = append(chain, e.UUID)
			return e
		}
		prompt := fmt.Sprintf("turn %d: fix the failing tests in the store package", turn)
		if err := durable(append(compaction, add(s.user(prompt)))...); err != nil {
			return err
		}
		if rng.IntN(4) == 0 {
			if err := step(add(s.attachment())); err != nil {
				return err
			}
		}
		for range rng.IntN(4) {
			uses, results := s.response(1 + rng.IntN(3))
			// The lines of a response, then their results: one append per
			// line or all in one, as a streaming writer might.
			batch := rng.IntN(2) == 0
			for i, e := range append(uses, results...) {
				add(e)
				if !batch {
					if err := step(e); err != nil {
						return err
					}
				} else if i == len(uses)+len(results)-1 {
					if err := step(append(uses, results...)...); err != nil {
						return err
					}
				}
			}
		}
		end := add(s.assistant(s.msgID(), "end_turn", model.TextBlock("Done: the tests pass again.")))
		if err := step(end, s.lastPrompt(prompt)); err != nil {
			return err
		}
		lastTurn = chain
	}
	_, err = fmt.Fprintln(out, "done")
	return err
}

// childSession makes the entries of a session, chained one after another.
type childSession struct {
	id     string
	rng    *rand.Rand
	parent string
	now    time.Time
	prompt string // promptId of the current turn
}

func newChildSession(id string, rng *rand.Rand, parent string) *childSession {
	return &childSession{id: id, rng: rng, parent: parent, now: time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)}
}

func (s *childSession) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(s.rng.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (s *childSession) msgID() string { return "msg_" + strings.ReplaceAll(s.uuid(), "-", "") }

// entry returns a chain entry after the current tip, and makes it the tip.
func (s *childSession) entry(typ string) transcript.Entry {
	s.now = s.now.Add(time.Duration(1+s.rng.IntN(2000)) * time.Millisecond)
	e := transcript.Entry{
		Type: typ, UUID: s.uuid(), ParentUUID: s.parent, Timestamp: transcript.FormatTime(s.now),
		SessionID: s.id, UserType: "external", Entrypoint: "cli", CWD: "/home/user/acme-api",
		Version: "2.1.197", GitBranch: "main",
	}
	s.parent = e.UUID
	return e
}

func (s *childSession) user(text string) transcript.Entry {
	s.prompt = s.uuid()
	e := s.entry(transcript.TypeUser)
	e.PromptID = s.prompt
	var m jsonw.Object
	m.Str("role", model.RoleUser)
	m.Str("content", text)
	e.Message = m.Bytes()
	return e
}

func (s *childSession) attachment() transcript.Entry {
	e := s.entry(transcript.TypeAttachment)
	e.Attachment = []byte(`{"type":"task_reminder","content":[],"itemCount":0}`)
	return e
}

func (s *childSession) assistant(msgID, stop string, b model.Block) transcript.Entry {
	e := s.entry(transcript.TypeAssistant)
	content, err := jsonw.Marshal([]model.Block{b})
	if err != nil {
		panic(err)
	}
	var m jsonw.Object
	m.Str("id", msgID)
	m.Str("type", "message")
	m.Str("role", model.RoleAssistant)
	m.Str("model", "claude-opus-4-5-20251101")
	m.Raw("content", content)
	m.Str("stop_reason", stop)
	m.Raw("usage", []byte(`{"input_tokens":3,"cache_creation_input_tokens":120,"cache_read_input_tokens":18000,"output_tokens":60}`))
	e.Message = m.Bytes()
	e.RequestID = "req_" + msgID[4:]
	return e
}

// response makes a response calling n tools in parallel: its lines (an
// optional text, then one line per call, each the parent of the next) and
// the results, each hanging off its own call's line.
func (s *childSession) response(n int) (lines, results []transcript.Entry) {
	id := s.msgID()
	if s.rng.IntN(2) == 0 {
		lines = append(lines, s.assistant(id, "tool_use", model.TextBlock("Let me look at the store first.")))
	}
	var calls []model.Block
	for range n {
		c := model.Block{Type: model.BlockToolUse, ID: "toolu_" + strings.ReplaceAll(s.uuid(), "-", "")[:24], Name: "Bash",
			Input: []byte(`{"command":"go test ./store/...","description":"Run the store tests"}`)}
		calls = append(calls, c)
		lines = append(lines, s.assistant(id, "tool_use", c))
	}
	for i, c := range calls {
		size := 40 + s.rng.IntN(2000)
		if s.rng.IntN(40) == 0 {
			size = 16<<10 + s.rng.IntN(80<<10) // spans pages: a kill can cut the write
		}
		out := strings.Repeat("ok  \tgithub.com/acme/acme-api/store\t0.042s\n", size/40)
		e := transcript.Entry{
			Type: transcript.TypeUser, UUID: s.uuid(), ParentUUID: lines[len(lines)-n+i].UUID,
			PromptID: s.prompt, SessionID: s.id, UserType: "external", Entrypoint: "cli",
			CWD: "/home/user/acme-api", Version: "2.1.197", GitBranch: "main",
			SourceToolAssistantUUID: lines[len(lines)-n+i].UUID,
		}
		s.now = s.now.Add(time.Duration(1+s.rng.IntN(3000)) * time.Millisecond)
		e.Timestamp = transcript.FormatTime(s.now)
		msg, err := model.Message{Role: model.RoleUser, Content: []model.Block{model.ToolResultBlock(c.ID, out, false)}}.MarshalJSON()
		if err != nil {
			panic(err)
		}
		e.Message = msg
		var d jsonw.Object
		d.Str("stdout", out)
		d.Str("stderr", "")
		d.Bool("interrupted", false)
		e.ToolUseResult = d.Bytes()
		results = append(results, e)
	}
	s.parent = results[len(results)-1].UUID
	return lines, results
}

func (s *childSession) lastPrompt(prompt string) transcript.Entry {
	return transcript.Entry{Type: transcript.TypeLastPrompt, LastPrompt: prompt, LeafUUID: s.parent, SessionID: s.id}
}

// boundary makes a compact boundary preserving the entries of keep.
func (s *childSession) boundary(keep []string) (transcript.Entry, string) {
	leaf := s.parent
	s.parent = ""
	e := s.entry(transcript.TypeSystem)
	e.Subtype = transcript.SubtypeCompactBoundary
	e.LogicalParentUUID = leaf
	e.Content = jsonw.String("Conversation compacted")
	e.Level = "info"
	anchor := s.uuid()
	list, err := jsonw.Marshal(keep)
	if err != nil {
		panic(err)
	}
	e.CompactMetadata = fmt.Appendf(nil, `{"trigger":"auto","preTokens":150000,"preservedSegment":{"headUuid":%q,"anchorUuid":%q,"tailUuid":%q},"preservedMessages":{"anchorUuid":%q,"uuids":%s,"allUuids":%s}}`,
		keep[0], anchor, keep[len(keep)-1], anchor, list, list)
	return e, anchor
}

// summary makes the summary line that follows a boundary, with the uuid
// the boundary named as its anchor.
func (s *childSession) summary(anchor string) transcript.Entry {
	e := s.user("Summary of the earlier conversation: the store tests were failing and are being fixed.")
	e.UUID = anchor
	e.IsCompactSummary = true
	e.IsVisibleInTranscriptOnly = true
	s.parent = e.UUID
	return e
}

// child is a running child process of a test.
type child struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr bytes.Buffer
}

// startChild runs the test binary again, running only the test named, with
// extra environment variables.
func startChild(t *testing.T, test string, env ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.in = stdin
	c.out = bufio.NewScanner(stdout)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// killAfter reads n lines of output, kills the child with SIGKILL unless it
// finished first, and returns every line it printed (those still in the
// pipe included). It fails the test if the child failed on its own.
func (c *child) killAfter(t *testing.T, n int) (lines []string, killed bool) {
	t.Helper()
	for len(lines) < n && c.out.Scan() {
		lines = append(lines, c.out.Text())
	}
	if len(lines) == n {
		killed = c.cmd.Process.Signal(syscall.SIGKILL) == nil
	}
	for c.out.Scan() {
		lines = append(lines, c.out.Text())
	}
	err := c.cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		killed = false // it finished before the signal
	case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL && killed:
	default:
		t.Fatalf("child failed: %v\n%s\n%s", err, strings.Join(lines, "\n"), c.stderr.String())
	}
	return lines, killed
}

// checkAPIValid reports why msgs could not be sent to the Messages API: the
// first message is from the user, roles alternate, no message is empty,
// every tool_use is answered by a tool_result at the front of the next
// message, and no tool_result answers a call that was not just made.
func checkAPIValid(msgs []model.Message) error {
	if len(msgs) == 0 {
		return errors.New("no messages")
	}
	if msgs[0].Role != model.RoleUser {
		return fmt.Errorf("message 0 is from %q, not the user", msgs[0].Role)
	}
	for i, m := range msgs {
		if len(m.Content) == 0 {
			return fmt.Errorf("message %d (%s) is empty", i, m.Role)
		}
		if i > 0 && m.Role == msgs[i-1].Role {
			return fmt.Errorf("messages %d and %d are both from %q", i-1, i, m.Role)
		}
		var calls []string
		if i > 0 && msgs[i-1].Role == model.RoleAssistant {
			for _, b := range msgs[i-1].Content {
				if b.Type == model.BlockToolUse {
					calls = append(calls, b.ID)
				}
			}
		}
		answered := make(map[string]bool)
		leading := true // still in the leading run of tool_result blocks
		for j, b := range m.Content {
			if b.Type != model.BlockToolResult {
				leading = false
				if b.Type == model.BlockToolUse && (m.Role != model.RoleAssistant || b.ID == "") {
					return fmt.Errorf("message %d block %d: a tool_use without an id or in a user message", i, j)
				}
				continue
			}
			switch {
			case m.Role != model.RoleUser:
				return fmt.Errorf("message %d block %d: tool_result in an assistant message", i, j)
			case !leading:
				return fmt.Errorf("message %d block %d: tool_result %s after other content", i, j, b.ToolUseID)
			case answered[b.ToolUseID]:
				return fmt.Errorf("message %d: tool_use %s answered twice", i, b.ToolUseID)
			case !slices.Contains(calls, b.ToolUseID):
				return fmt.Errorf("message %d: tool_result for %s, which the message before did not call", i, b.ToolUseID)
			}
			answered[b.ToolUseID] = true
		}
		for _, id := range calls {
			if !answered[id] {
				return fmt.Errorf("message %d: tool_use %s of message %d is not answered", i, id, i-1)
			}
		}
	}
	if last := msgs[len(msgs)-1]; last.Role == model.RoleAssistant {
		if uses := last.ToolUses(); len(uses) > 0 {
			return fmt.Errorf("the last message calls %s, which is never answered", uses[0].ID)
		}
	}
	return nil
}

// TestResumeRightAfterCompaction resumes the Claude Code sample cut right
// after its compaction's summary, as a crash just after compacting leaves
// it: the message the boundary preserved is still in the file and belongs
// after the summary.
func TestResumeRightAfterCompaction(t *testing.T) {
	data, err := os.ReadFile("testdata/cc-2.1.197-manual-compact.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := bytes.Join(lines[:41], nil) // through line 41, the summary
	path := t.TempDir() + "/s.jsonl"
	if err := os.WriteFile(path, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := transcript.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	conv, err := transcript.Load(context.Background(), src, transcript.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range conv.FromFile() {
		got = append(got, e.UUID)
	}
	want := []string{
		"8ff6963c-0233-4e06-9463-db76a72f1cc5", // the boundary
		"ac993b23-c117-42ec-9dd1-46ea80970f61", // the summary, its anchor
		"e4b38694-5212-4ec2-9db5-11e8d6bc8250", // the preserved message
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rebuilt %v (+%d repaired), want %v", got, conv.Repaired, want)
	}
}

// TestCrashBetweenBoundaryAndSummary: a crash after the compact boundary
// is written and before (or while) the summary is leaves a file whose
// newest chain is the boundary alone. It still loads, with the torn line
// named, into messages the API accepts.
func TestCrashBetweenBoundaryAndSummary(t *testing.T) {
	data, err := os.ReadFile("testdata/cc-2.1.197-manual-compact.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for name, cut := range map[string][]byte{
		"boundary written":     bytes.Join(lines[:40], nil),
		"summary half written": append(bytes.Join(lines[:40], nil), lines[40][:len(lines[40])/2]...),
	} {
		t.Run(name, func(t *testing.T) {
			conv := loadBytes(t, cut)
			if err := checkAPIValid(conv.Messages()); err != nil {
				t.Errorf("%v (entries %d, warnings %q)", err, len(conv.Entries), conv.Warnings)
			}
			if strings.HasPrefix(name, "summary") && !slices.ContainsFunc(conv.Warnings, func(w string) bool { return strings.Contains(w, "line 41") }) {
				t.Errorf("the torn line is not named: %q", conv.Warnings)
			}
			// Nothing is lost: the conversation is the one before the
			// compaction began, whole.
			if got, want := uuids(conv), uuids(loadBytes(t, bytes.Join(lines[:37], nil))); !slices.Equal(got, want) {
				t.Errorf("rebuilt %d entries %v\nwant the %d before the compaction %v", len(got), got, len(want), want)
			}
		})
	}
}

func uuids(c *transcript.Conversation) []string {
	var out []string
	for _, e := range c.Entries {
		out = append(out, e.UUID)
	}
	return out
}

func loadBytes(t *testing.T, data []byte) *transcript.Conversation {
	t.Helper()
	path := t.TempDir() + "/s.jsonl"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return loadPath(t, path)
}
