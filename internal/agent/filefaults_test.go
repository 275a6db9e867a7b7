package agent_test

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

// TestTranscriptGoneWhileRunning deletes or replaces the transcript under a
// running session: the next prompt is refused, plainly and before any
// request, nothing is written into the file now at the path, and a resume
// opens what is there. On the file store only: it removes and replaces
// the file under the session, which a store without files cannot have
// done to it.
func TestTranscriptGoneWhileRunning(t *testing.T) {
	for _, replace := range []bool{false, true} {
		name := map[bool]string{false: "deleted", true: "replaced"}[replace]
		t.Run(name, func(t *testing.T) {
			home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
			srv := modeltest.Start(t, modeltest.Config{})
			srv.Enqueue(modeltest.Text("the first answer"))
			opts := agent.Options{Home: home, Cwd: cwd, ModelName: "claude-test", MaxTokens: 4000, Entrypoint: "sdk-cli", DisableAutoCompact: true}
			a := openOn(t, srv, opts, nil)
			if _, _, err := run(t, a, "one"); err != nil {
				t.Fatal(err)
			}
			path := a.Path()
			saved, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if replace { // a copy put back in its place
				if err := os.WriteFile(path, saved, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sent := len(srv.Requests())
			_, _, err = run(t, a, "two")
			var se *transcript.SaveError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "the session could not be saved: the transcript was deleted or replaced while the session ran") {
				t.Fatalf("the prompt after the transcript went: %v; want the plain refusal", err)
			}
			if n := len(srv.Requests()) - sent; n != 0 {
				t.Errorf("%d requests for a prompt that could not be saved", n)
			}
			a.Close()
			now, err := os.ReadFile(path)
			switch {
			case !replace && !errors.Is(err, os.ErrNotExist):
				t.Errorf("a deleted transcript came back: %v %q", err, now)
			case replace && string(now) != string(saved):
				t.Errorf("the file put in its place was written to:\n%q\nwant\n%q", now, saved)
			}
			if !replace {
				return
			}
			srv.Enqueue(modeltest.Text("the third answer"))
			b := openOn(t, srv, opts, func(o *agent.Options) { o.Resume = a.ID() })
			if _, _, err := run(t, b, "three"); err != nil {
				t.Fatalf("resume the copy: %v", err)
			}
			if body := string(srv.Last().Body); !strings.Contains(body, "the first answer") || strings.Contains(body, `"two`) {
				t.Errorf("the resume's request is not the copy's conversation and the new prompt: %.500s", body)
			}
		})
	}
}

// TestClockJumpsBack runs turns with the clock going backwards between
// them: the transcript keeps them in the order they happened, and a resume
// (with the clock back again) continues from the last.
func TestClockJumpsBack(t *testing.T) {
	onStores(t, testClockJumpsBack)
}

func testClockJumpsBack(t *testing.T, k storeKind) {
	home, cwd := session.Home{Dir: t.TempDir()}, t.TempDir()
	srv := modeltest.Start(t, modeltest.Config{})
	var mu sync.Mutex
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	jump := func(d time.Duration) {
		mu.Lock()
		clock = clock.Add(d)
		mu.Unlock()
	}
	opts := agent.Options{Home: home, Cwd: cwd, Store: k.store(), ModelName: "claude-test", MaxTokens: 4000, Entrypoint: "sdk-cli", DisableAutoCompact: true, Now: now}
	a := openOn(t, srv, opts, nil)
	for i, step := range []time.Duration{0, -time.Hour, -24 * time.Hour} {
		jump(step)
		srv.Enqueue(modeltest.Text("answer " + string(rune('A'+i))))
		if _, _, err := run(t, a, "prompt "+string(rune('A'+i))); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	jump(-365 * 24 * time.Hour)
	srv.Enqueue(modeltest.Text("answer D"))
	b := openOn(t, srv, opts, func(o *agent.Options) { o.Continue = true })
	if len(b.Warnings) > 0 {
		t.Errorf("warnings on resume: %q", b.Warnings)
	}
	if _, _, err := run(t, b, "prompt D"); err != nil {
		t.Fatal(err)
	}
	body := string(srv.Last().Body)
	last := -1
	for _, s := range []string{"prompt A", "answer A", "prompt B", "answer B", "prompt C", "answer C", "prompt D"} {
		i := strings.Index(body, s)
		if i < last {
			t.Fatalf("%q is missing or out of order in the resumed request: %.800s", s, body)
		}
		last = i
	}
}
