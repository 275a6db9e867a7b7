package model_test

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/cairn-dev/cairn/internal/itertest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// canned answers every request with one response of fixed usage.
func canned(u model.Usage) *modeltest.Scripted {
	m := &modeltest.Scripted{Answer: func(context.Context, int, *model.Request) ([]model.Block, error) { return nil, nil }}
	m.Usage = func(int) model.Usage { return u }
	return m
}

func TestTally(t *testing.T) {
	var tally model.Tally
	big := tally.Wrap(canned(model.Usage{InputTokens: 10, OutputTokens: 2, CacheReadInputTokens: 100}))
	small := tally.Wrap(canned(model.Usage{InputTokens: 1, OutputTokens: 1}))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range big.Stream(t.Context(), &model.Request{Model: "big"}) {
			}
			for range small.Stream(t.Context(), &model.Request{Model: "small"}) {
			}
		})
	}
	// A consumer that stops early still counts nothing it did not see.
	for range big.Stream(t.Context(), &model.Request{Model: "big"}) {
		break
	}
	wg.Wait()
	got := tally.ByModel()
	if want := (model.Usage{InputTokens: 500, OutputTokens: 100, CacheReadInputTokens: 5000}); got["big"] != want {
		t.Errorf("big: %+v, want %+v", got["big"], want)
	}
	if want := (model.Usage{InputTokens: 50, OutputTokens: 50}); got["small"] != want || len(got) != 2 {
		t.Errorf("tally %+v", got)
	}
	if tally.Wrap(nil) != nil {
		t.Error("a nil model wrapped is not nil")
	}
}

// TestTallyBreak: the wrapper stops where its consumer stops, and counts
// a response only once its chunk was passed on.
func TestTallyBreak(t *testing.T) {
	var tally model.Tally
	m := tally.Wrap(canned(model.Usage{InputTokens: 1}))
	itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[model.Chunk, error] {
		return m.Stream(t.Context(), &model.Request{Model: "m"})
	}, nil)
	// Two complete reads (the count and the break at the last chunk).
	if got := tally.ByModel()["m"].InputTokens; got != 2 {
		t.Errorf("counted %d responses, want 2", got)
	}
}
