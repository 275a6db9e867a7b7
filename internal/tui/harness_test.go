package tui_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/history"
	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/middleware"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/internal/tools"
	"github.com/cairn-dev/cairn/internal/tui"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/anthropic"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/tool"
)

// updating reports -update, which rewrites the golden frames (the flag
// is declared by the golden package the test driver uses).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// The screen size of every golden frame.
const width, height = 100, 30

// epoch is the fixed clock of the tests: spinners, elapsed times and
// dates never move.
var epoch = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func clock() time.Time { return epoch }

// rig is a project, a cairn home and the fake Anthropic server, with the
// real agent in between.
type rig struct {
	t    *testing.T
	dir  string
	home session.Home
	srv  *modeltest.Server
	// window, gate and asker shape the sessions opened.
	window tokens.Window
	gate   func(context.Context, tool.Tool, model.Block) engine.Verdict
	asker  *tui.Asker
	hist   *history.Writer
	seq    atomic.Int64
}

func newRig(t *testing.T, cfg modeltest.Config) *rig {
	t.Helper()
	r := &rig{t: t, dir: fixedDir(t), home: session.Home{Dir: t.TempDir()}, srv: modeltest.Start(t, cfg)}
	if err := os.WriteFile(filepath.Join(r.dir, "hello.py"), []byte("print('hello')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.window = tokens.Window{Size: 200_000, MaxOutput: 32_000}
	return r
}

// fixedDir is a new project folder whose path always has the same
// length: the system prompt names it, and the meter's figures must not
// move with it.
func fixedDir(t *testing.T) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("cairn-tui-%016x", rand.Uint64()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (r *rig) uuid() string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", r.seq.Add(1)) }

// open opens a session: ref "" is a new one.
func (r *rig) open(ctx context.Context, ref string) (tui.Session, error) {
	m, err := anthropic.New(anthropic.Config{BaseURL: r.srv.URL, APIKey: "test-key"})
	if err != nil {
		return nil, err
	}
	var gate middleware.Gate
	if r.gate != nil {
		gate = middleware.GateFunc(r.gate)
	}
	return agent.Open(ctx, agent.Options{
		Home: r.home, Cwd: r.dir, Model: m, ModelName: "claude-sonnet-4-5", MaxTokens: 4000, Window: r.window,
		Tools: tools.Core(), Middleware: agent.Middleware{Gate: gate}, Resume: ref, Entrypoint: "cli", Now: clock, NewUUID: r.uuid,
	})
}

// options are the UI's options for a session of the rig.
func (r *rig) options(s tui.Session) tui.Options {
	if r.hist == nil {
		r.hist = history.NewWriter(r.home.Dir, clock)
		// Written out before the home is removed (cleanups run last first).
		r.t.Cleanup(func() { r.hist.Close() })
	}
	return tui.Options{
		Session: s, Open: r.open, Home: r.home, Cwd: r.dir,
		History: r.hist, Asker: r.asker, Now: clock,
		Cost: func(string, model.Usage) float64 { return 0.0042 },
	}
}

// probe asks the running program for its frame.
type probe struct{ reply chan string }

// driver drives the UI as a person would, through bubbletea's test
// driver, and reads the screen.
type driver struct {
	t  *testing.T
	tm *teatest.TestModel
	m  *tui.Model
}

func start(t *testing.T, opts tui.Options) *driver {
	t.Helper()
	m := tui.New(opts)
	filter := func(model tea.Model, msg tea.Msg) tea.Msg {
		if p, ok := msg.(probe); ok {
			p.reply <- model.(*tui.Model).View().Content
			return nil
		}
		return msg
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(width, height), teatest.WithProgramOptions(tea.WithFilter(filter)))
	d := &driver{t: t, tm: tm, m: m}
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		m.Shutdown()
		if err := m.Session().Close(); err != nil {
			t.Errorf("close the session: %v", err)
		}
	})
	return d
}

// frame is the screen now, without colours, trailing spaces trimmed.
func (d *driver) frame() string {
	p := probe{reply: make(chan string, 1)}
	d.tm.Send(p)
	select {
	case s := <-p.reply:
		return plain(s)
	case <-time.After(10 * time.Second):
		d.t.Fatal("the program did not answer")
		return ""
	}
}

func plain(s string) string {
	lines := strings.Split(ansi.Strip(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// waitFor waits until the screen shows want, and returns it.
func (d *driver) waitFor(want string) string {
	d.t.Helper()
	return d.waitUntil(want, func(f string) bool { return strings.Contains(f, want) })
}

func (d *driver) waitUntil(what string, ok func(string) bool) string {
	d.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var f string
	for time.Now().Before(deadline) {
		if f = d.frame(); ok(f) {
			return f
		}
		time.Sleep(20 * time.Millisecond) // the UI works in other goroutines
	}
	d.t.Fatalf("the screen never showed %s; it shows:\n%s", what, f)
	return ""
}

// typeText types text and presses keys by name ("enter", "esc", "up").
func (d *driver) typeText(s string) { d.tm.Type(s) }

func (d *driver) press(keys ...string) {
	for _, k := range keys {
		d.tm.Send(keyMsg(k))
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "shift+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModShift}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "ctrl+o":
		return tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// golden compares a frame with testdata/name.golden (-update rewrites
// it).
func golden(t *testing.T, name, frame string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(frame), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), frame); diff != "" {
		t.Errorf("frame %s differs from the golden (-want +got):\n%s", name, diff)
	}
}
