package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairn-dev/cairn/session"
)

// firstReqCmd measures how long the cairn binary takes from its start to
// its first model request, against a fake server on loopback: for a fresh
// `cairn -p hi`, or for `cairn -p --resume ID hi` of a given transcript
// (copied into a temporary home for each run). With -claude it runs Claude
// Code the same way in turns with cairn (its scratch HOME holding the copy
// under ~/.claude/projects/), so both are measured under the same load. It
// reports the median of -n runs and the median peak RSS of each program.
//
// A request has arrived when its whole body has been read: the time runs
// from the process's start to then, and the body's size is reported.
func firstReqCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("firstreq")
	pf := newBenchFlags(fs)
	tsv := fs.Bool("tsv", false, "print one tab-separated line per program: name, median seconds, median peak RSS bytes, body bytes (and with -second, median seconds of the second turn)")
	minBodyFlag := fs.Int64("min-body", 200<<10, "with -resume, the smallest request body, in bytes, that counts as the first request: Claude Code may send small requests of its own first; lower it for a transcript whose conversation since its last compaction is smaller")
	second := fs.Bool("second", false, "give the prompt and a second one on stdin (--input-format stream-json), and also measure the second turn: from the last answer of the first to the second's request")
	var extra []string
	fs.Func("env", "K=V added to cairn's environment (repeatable), such as GOGC=200", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("-env %q: want K=V", s)
		}
		extra = append(extra, s)
		return nil
	})
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	resume, n := pf.resume, pf.n
	if *pf.bin == "" {
		return usageError{"firstreq: -cairn BIN is required"}
	}
	progs, err := pf.programs(extra)
	if err != nil {
		return err
	}
	var minBody int64
	var id string
	if *resume != "" {
		if id, err = sessionIDOf(*resume); err != nil {
			return err
		}
		// Claude Code may send small requests of its own first; the one
		// that counts carries the conversation.
		minBody = *minBodyFlag
	}
	front := newTimingFront(minBody)
	defer front.Close()

	for round := range *n {
		for _, i := range turnOrder(round, len(progs)) {
			r, err := runOnce(ctx, &progs[i], front, *resume, id, *second)
			if err != nil {
				return err
			}
			progs[i].runs = append(progs[i].runs, r)
		}
	}
	what := "fresh -p"
	if *resume != "" {
		what = "-p --resume " + filepath.Base(*resume)
	}
	for _, p := range progs {
		wall, rss, body := p.medians()
		turn2 := p.secondMedian()
		if *tsv {
			fmt.Fprintf(stdout, "%s\t%.4f\t%d\t%d", p.name, wall.Seconds(), rss, body)
			if *second {
				fmt.Fprintf(stdout, "\t%.4f", turn2.Seconds())
			}
			fmt.Fprintln(stdout)
			continue
		}
		fmt.Fprintf(stdout, "%-6s %-28s start → first request: median %v (min %v, max %v), peak RSS median %s, body %s\n",
			p.name, what, wall.Round(time.Millisecond), p.min().Round(time.Millisecond), p.max().Round(time.Millisecond), mb(rss), mb(body))
		if *second {
			fmt.Fprintf(stdout, "%-6s %-28s second turn → its request: median %v\n", p.name, "", turn2.Round(100*time.Microsecond))
		}
	}
	printPaired(stdout, progs, *tsv)
	return nil
}

// printPaired prints cairn's time and peak RSS over base's (-against),
// each the median of the rounds' ratios; nothing without -against.
func printPaired(w io.Writer, progs []program, tsv bool) {
	if len(progs) < 2 || progs[1].name != "base" {
		return
	}
	wall, rss := pairedRatios(progs[0].runs, progs[1].runs)
	if tsv {
		// Not a program's line: the ratios of time and of peak RSS.
		fmt.Fprintf(w, "cairn/base\t%.4f\t%.4f\n", wall, rss)
		return
	}
	fmt.Fprintf(w, "cairn / base, median of the rounds' ratios (%d rounds): time %.3f×, peak RSS %.3f×\n", min(len(progs[0].runs), len(progs[1].runs)), wall, rss)
}

// pairedRatios returns the median over rounds of a's time over b's, and
// of a's peak RSS over b's (the runs of round i are a[i] and b[i]).
func pairedRatios(a, b []runResult) (wall, rss float64) {
	n := min(len(a), len(b))
	if n == 0 {
		return 0, 0
	}
	ws, rs := make([]float64, 0, n), make([]float64, 0, n)
	for i := range n {
		// A round a figure is missing from (0) says nothing of it.
		if a[i].wall > 0 && b[i].wall > 0 {
			ws = append(ws, float64(a[i].wall)/float64(b[i].wall))
		}
		if a[i].rss > 0 && b[i].rss > 0 {
			rs = append(rs, float64(a[i].rss)/float64(b[i].rss))
		}
	}
	slices.Sort(ws)
	slices.Sort(rs)
	return median(ws), median(rs)
}

// median is the middle of sorted values, or the mean of the two middle
// ones; 0 for none.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// benchFlags are the flags of the benches that run cairn and Claude Code
// in turns (firstreq, tuiresume).
type benchFlags struct {
	bin, claude, against, resume *string
	n                            *int
	pages                        *string
}

func newBenchFlags(fs *flag.FlagSet) benchFlags {
	return benchFlags{
		bin:     fs.String("cairn", "", "the cairn binary"),
		claude:  fs.String("claude", "", "also run this Claude Code binary, alternating with cairn"),
		against: fs.String("against", "", "also run this other cairn binary (\"base\", as cairn is run), alternating, and report cairn's time and peak RSS over base's, the median of each round's ratio: drift on a shared machine moves both runs of a round alike. Give -pages dropped too, so that both binaries' pages start alike (peak RSS counts them)"),
		resume:  fs.String("resume", "", "a transcript to resume (copied into a temporary home)"),
		n:       fs.Int("n", 5, "runs of each program"),
		pages:   fs.String("pages", "as-is", pagesUsage),
	}
}

// pagesUsage is the -pages flag's text.
const pagesUsage = `the binaries' pages in the page cache before the runs: "as-is", as whatever last wrote or read them left them (a binary just built: as the build wrote it); "dropped", dropped, so the first run reads its binary from disk as the first run after a restart does, and the runs after it find the pages that run faulted in; "read", dropped and read back whole, the worst case (a read of the whole file caches it in large folios, which a fault maps whole). Peak RSS counts the binary's mapped pages, so it moves by up to 20 MB with this state`

// programs is cairn (run with env added to its environment) and, with
// -claude, Claude Code, by absolute paths: the programs a bench runs in
// turns, their pages in the page cache as -pages asks.
func (f benchFlags) programs(env []string) ([]program, error) {
	if err := checkPages(*f.pages); err != nil {
		return nil, err
	}
	progs := []program{{name: "cairn", bin: *f.bin, env: env}}
	if *f.against != "" {
		progs = append(progs, program{name: "base", bin: *f.against, env: env})
	}
	if *f.claude != "" {
		progs = append(progs, program{name: "claude", bin: *f.claude})
	}
	for i := range progs {
		abs, err := filepath.Abs(progs[i].bin)
		if err != nil {
			return nil, err
		}
		progs[i].bin = abs
		if err := setPages(abs, *f.pages); err != nil {
			return nil, fmt.Errorf("-pages %s: %w", *f.pages, err)
		}
	}
	return progs, nil
}

// turnOrder is the order the programs run in, in the given round: as
// given, then the other way round, so that none always runs first: what
// changes between the two runs of a round (the machine's pace drifts by
// the minute here, the run before leaves caches warm or cold) then does
// not always count for one program against the other.
func turnOrder(round, programs int) []int {
	order := make([]int, programs)
	for i := range order {
		order[i] = i
		if round%2 == 1 {
			order[i] = programs - 1 - i
		}
	}
	return order
}

// checkPages reports a -pages state that is not one of the three.
func checkPages(state string) error {
	switch state {
	case "as-is", "dropped", "read":
		return nil
	}
	return usageError{fmt.Sprintf("-pages %q: want as-is, dropped or read", state)}
}

// setPages leaves the file at path (a symbolic link is followed) in the
// page cache as -pages names it: "as-is" does nothing; "dropped" drops it
// (flushed first: the cache keeps pages not yet written back, as a binary
// just built has); "read" drops it and reads it back whole, so its pages
// are cached as a read, not a write, left them.
func setPages(path, state string) error {
	if state == "as-is" {
		return nil
	}
	if err := checkPages(state); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return err
	}
	if state == "read" {
		_, err = io.Copy(io.Discard, f)
	}
	return err
}

type program struct {
	name, bin string
	env       []string // added to the run's environment
	runs      []runResult
}

type runResult struct {
	wall time.Duration
	rss  int64
	body int64
	// second is how long the second turn took to its request (-second).
	second time.Duration
}

func (p *program) sorted() []runResult {
	rs := slices.Clone(p.runs)
	slices.SortFunc(rs, func(a, b runResult) int { return int(a.wall - b.wall) })
	return rs
}

func (p *program) min() time.Duration { return p.sorted()[0].wall }
func (p *program) max() time.Duration { return p.sorted()[len(p.runs)-1].wall }

// medians returns the median time, the median peak RSS and the body size.
func (p *program) medians() (time.Duration, int64, int64) {
	rs := p.sorted()
	rss := make([]int64, len(rs))
	for i, r := range rs {
		rss[i] = r.rss
	}
	slices.Sort(rss)
	return rs[len(rs)/2].wall, rss[len(rss)/2], rs[len(rs)/2].body
}

// secondMedian is the median time of the second turns (0 without
// -second).
func (p *program) secondMedian() time.Duration {
	ds := make([]time.Duration, len(p.runs))
	for i, r := range p.runs {
		ds[i] = r.second
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// sessionIDOf returns the sessionId of the transcript's first line that
// names one: the id both programs resume it by.
func sessionIDOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 1<<20)
	n, _ := io.ReadFull(f, head)
	const key = `"sessionId":"`
	i := bytes.Index(head[:n], []byte(key))
	if i < 0 {
		return "", fmt.Errorf("%s: no sessionId in its first megabyte", path)
	}
	rest := head[i+len(key) : n]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", fmt.Errorf("%s: the first sessionId does not end", path)
	}
	return string(rest[:j]), nil
}

// scratch is a run's temporary home and project folder, the environment
// that points the program at them and at the fake server, with the
// transcript to resume copied where the program looks for it.
type scratch struct {
	home, project string
	env           []string
}

func newScratch(p *program, url, resume, id string) (*scratch, error) {
	home, err := os.MkdirTemp("", "cairn-bench-home")
	if err != nil {
		return nil, err
	}
	s := &scratch{home: home}
	if s.project, err = os.MkdirTemp("", "cairn-bench-project"); err != nil {
		s.remove()
		return nil, err
	}
	s.env = []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=bench", "PATH=" + os.Getenv("PATH")}
	sessions := session.Home{Dir: home}
	if p.name == "claude" {
		s.env = append(s.env, "IS_SANDBOX=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1")
		sessions.Dir = filepath.Join(home, ".claude")
	} else {
		s.env = append(s.env, "CAIRN_HOME="+home)
	}
	if resume != "" {
		dir := sessions.ProjectDir(s.project)
		// A copy, not a link: the resumed session appends to its file.
		if err := os.MkdirAll(dir, 0o700); err == nil {
			err = copyFile(resume, filepath.Join(dir, id+".jsonl"))
		}
		if err != nil {
			s.remove()
			return nil, err
		}
	}
	return s, nil
}

func (s *scratch) remove() {
	os.RemoveAll(s.home)
	if s.project != "" {
		os.RemoveAll(s.project)
	}
}

// secondPrompt is the second turn's prompt with -second, by which the
// timing front tells that turn's request.
const secondPrompt = "and now a second turn, please"

func runOnce(ctx context.Context, p *program, front *timingFront, resume, id string, second bool) (runResult, error) {
	s, err := newScratch(p, front.URL, resume, id)
	if err != nil {
		return runResult{}, err
	}
	defer s.remove()
	argv := []string{"-p"}
	if p.name == "claude" {
		argv = append(argv, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")
	} else if second {
		argv = append(argv, "--output-format", "stream-json")
	}
	if resume != "" {
		argv = append(argv, "--resume", id)
	}
	var stdin io.Reader
	if second {
		argv = append(argv, "--input-format", "stream-json")
		var b strings.Builder
		for _, prompt := range []string{"hi", secondPrompt} {
			line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
			b.Write(append(line, '\n'))
		}
		stdin = strings.NewReader(b.String())
	} else {
		argv = append(argv, "hi")
	}
	cmd := exec.CommandContext(ctx, p.bin, argv...)
	cmd.Dir = s.project
	cmd.Env = append(s.env, p.env...)
	cmd.Stdin = stdin
	front.reset()
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return runResult{}, fmt.Errorf("%s failed: %v\n%s", p.name, err, out)
	}
	at, size := front.first()
	if at.IsZero() {
		return runResult{}, fmt.Errorf("%s sent no model request of at least %d bytes", p.name, front.minBody)
	}
	r := runResult{wall: at.Sub(start), body: size}
	if second {
		if r.second, err = front.secondTurn(); err != nil {
			return runResult{}, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = ru.Maxrss * 1024
	}
	return r, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	// A session's file was written long before it is resumed: the copy is
	// put on disk before the clock starts, or the first durable append of
	// the program measured would wait for the kernel to write back the
	// whole copy (0.2 s at 100 MB), which is the bench's work, not its.
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// timingFront is a fake model server that answers every request "ok" and
// notes when each POST /v1/messages was read whole and answered: the
// first of at least minBody bytes is the one the bench times, and with
// -second, the first that carries secondPrompt starts the second turn.
// It decodes nothing, so its own work is not timed.
type timingFront struct {
	*httptest.Server
	minBody int64

	mu       sync.Mutex
	requests []frontRequest
	run      int // counts the resets, so a late answer is not noted in another run
}

// frontRequest is what the front notes of a model request.
type frontRequest struct {
	arrived, answered time.Time
	size              int64
	second            bool // it carries secondPrompt
}

func newTimingFront(minBody int64) *timingFront {
	f := &timingFront{minBody: minBody}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *timingFront) reset() {
	f.mu.Lock()
	f.requests = nil
	f.run++
	f.mu.Unlock()
}

// first returns when the first request of at least minBody bytes arrived
// and its size; a zero time when none did.
func (f *timingFront) first() (time.Time, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if r.size >= f.minBody {
			return r.arrived, r.size
		}
	}
	return time.Time{}, 0
}

// secondTurn returns how long the second turn took to its first request:
// from the last answer given before that request arrived (the one that
// ended the first turn, or a side request's answered after it), to its
// arrival. The second turn's request is the first to carry secondPrompt
// that is not a side request to a Haiku model (Claude Code's titles and
// topics).
func (f *timingFront) secondTurn() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.requests, func(r frontRequest) bool { return r.second })
	if i < 0 {
		return 0, errors.New("no request carried the second prompt")
	}
	at := f.requests[i].arrived
	var last time.Time
	for _, r := range f.requests[:i] {
		if !r.answered.IsZero() && r.answered.Before(at) && r.answered.After(last) {
			last = r.answered
		}
	}
	if last.IsZero() {
		return 0, errors.New("the second prompt's request came before any answer")
	}
	return at.Sub(last), nil
}

func (f *timingFront) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	if d := os.Getenv("CAIRN_BENCH_DUMP"); d != "" {
		_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("%d-%s.json", now.UnixNano(), strings.ReplaceAll(r.URL.Path, "/", "_"))), body, 0o600)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusOK)
		return
	}
	second := bytes.Contains(body, []byte(secondPrompt)) && !bytes.Contains(body, []byte(`"model":"claude-haiku`)) && !bytes.Contains(body, []byte(`"model":"claude-3-5-haiku`))
	f.mu.Lock()
	i, run := len(f.requests), f.run
	f.requests = append(f.requests, frontRequest{arrived: now, size: int64(len(body)), second: second})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("request-id", "req_bench")
	_, _ = io.WriteString(w, okStream)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	f.mu.Lock()
	if f.run == run {
		f.requests[i].answered = time.Now()
	}
	f.mu.Unlock()
}

// okStream is a streamed reply saying "ok", in the API's event format.
const okStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-opus-4-5-20251101","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}

event: message_stop
data: {"type":"message_stop"}

`
