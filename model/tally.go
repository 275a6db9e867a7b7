package model

import (
	"context"
	"iter"
	"maps"
	"sync"
)

// Tally adds up the usage of every response streamed through the models
// it wraps, by the model each request named: a run's whole spend, the
// side requests included (compaction summaries, session notes, memory
// recall and extraction, context collapse's folds, subagents). Safe for
// concurrent use; the zero value is ready.
type Tally struct {
	mu sync.Mutex
	by map[string]Usage
}

// Wrap returns m, its responses counted in the tally; nil stays nil.
func (t *Tally) Wrap(m Model) Model {
	if m == nil {
		return nil
	}
	return tallied{m, t}
}

// ByModel returns the usage so far of each model.
func (t *Tally) ByModel() map[string]Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.by)
}

func (t *Tally) add(name string, u Usage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = make(map[string]Usage)
	}
	t.by[name] = t.by[name].Plus(u)
}

type tallied struct {
	Model
	t *Tally
}

func (m tallied) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		for c, err := range m.Model.Stream(ctx, req) {
			if err == nil && c.Kind == ChunkDone && c.Response != nil {
				name := req.Model
				if name == "" {
					name = c.Response.Model
				}
				m.t.add(name, c.Response.Usage)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}
