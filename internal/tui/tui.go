package tui

import (
	"context"

	tea "charm.land/bubbletea/v2"
)

// Run runs the UI until the person exits or ctx ends, and returns the
// session in use then (/resume and /clear change it); the caller closes
// it. A turn still running is interrupted first, so its transcript ends
// with the interruption marker, as after Esc.
func Run(ctx context.Context, opts Options, programOpts ...tea.ProgramOption) (Session, error) {
	m := New(opts)
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, programOpts...)...)
	_, err := p.Run()
	m.Shutdown()
	return m.sess, err
}

// Shutdown stops the work under way (a turn is interrupted) and waits
// until it no longer uses the session. Call it once the program running
// the model has ended; Run does.
func (m *Model) Shutdown() {
	w := m.work
	if w == nil {
		return
	}
	if w.cancel != nil {
		w.cancel()
	}
	for _, a := range m.asks {
		a.answer(Answer{Note: "cairn is exiting"})
	}
	m.asks = nil
	if w.events != nil {
		go func() {
			for range w.events { // the turn blocks on a full channel otherwise
			}
		}()
	}
	if w.done != nil {
		<-w.done
	}
}
