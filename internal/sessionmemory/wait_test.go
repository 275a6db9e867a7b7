package sessionmemory

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairn-dev/cairn/model"
)

// TestSavedHasADeadline: the store write after an update has a deadline
// of its own, so a store that never answers cannot hold up Close: in a
// synctest bubble, a Saved that waits for its context to end holds the
// update up for saveTimeout exactly, and no longer.
func TestSavedHasADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var left time.Duration
		var ok bool
		f := newFixture(t, nil, func(c *Config) {
			c.Saved = func(ctx context.Context, _ string) {
				var d time.Time
				d, ok = ctx.Deadline()
				left = time.Until(d)
				<-ctx.Done() // a store that never answers
			}
		})
		f.m.Answer = noter(f.path, "saved")
		start := time.Now()
		f.respond(t, 20_000, 0)
		if !ok || left != saveTimeout {
			t.Errorf("Saved's context: deadline set %v, %v left; want %v", ok, left, saveTimeout)
		}
		if d := time.Since(start); d != saveTimeout {
			t.Errorf("the update with a store that never answers took %v, want %v", d, saveTimeout)
		}
	})
}

// TestWaitSeesTheWarning: Wait does not return while the failed update's
// warning is still being given.
func TestWaitSeesTheWarning(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	f := newFixture(t, func(context.Context, int, *model.Request) ([]model.Block, error) {
		return nil, &model.APIError{Status: 529, Type: "overloaded_error", Message: "Overloaded"}
	}, func(c *Config) {
		c.Warn = func(string) { close(entered); <-release }
	})
	f.k.AfterResponse(t.Context(), f.request(), response(20_000, 0), nil)
	<-entered
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.k.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait while the warning is given: %v, want it still waiting (context.Canceled)", err)
	}
	close(release)
	if err := f.k.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
