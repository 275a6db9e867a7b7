package transcript

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/fsfault"
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Eager makes every Append synchronous and durable, for hosts that kill
	// the process as soon as output appears.
	Eager bool
	// Known lists uuids already in the transcript (a resumed session's
	// loaded entries); entries with these uuids are not written again.
	Known []string
	// KnownIn, when not nil, reports whether an entry with this uuid is
	// already in the transcript, as Known does with a list: for a caller
	// that can say so without listing them first. The Writer asks it,
	// holding its lock, about each uuid it has not seen, from whichever
	// goroutine appends; it must be safe for that.
	KnownIn func(uuid string) bool
	// OnError is told at once, with a *SaveError, about a failed write of
	// entries given with Append, which no caller waits for (a durable
	// write's caller gets the error itself). The entries stay queued and
	// are retried by the next write or Flush (unless they were written and
	// only the sync failed).
	OnError func(error)
	// Now is the clock of SaveError.Since; nil means time.Now.
	Now func() time.Time
}

// SaveError is a failed write of the transcript: the lines given before
// Since were written (and synced, when asked), the later ones are not on
// disk — or, when only the sync failed, are written but may not survive a
// crash.
type SaveError struct {
	Err   error
	Since time.Time
}

func (e *SaveError) Error() string {
	cause, advice := fsfault.Describe(e.Err)
	lost := "nothing after %s is on disk"
	if errors.Is(e.Err, ErrNotSynced) {
		lost = "what was written after %s may not be on disk"
	}
	msg := "the session could not be saved: " + cause + "; " + fmt.Sprintf(lost, e.Since.Format("15:04:05")) + ". "
	switch {
	case errors.Is(e.Err, fsfault.ErrReplaced):
		msg += strings.ToUpper(advice[:1]) + advice[1:] + " "
	case advice != "":
		msg += strings.ToUpper(advice[:1]) + advice[1:] + ", then --resume continues from what was saved "
	default:
		msg += "--resume continues from what was saved "
	}
	return msg + "(" + e.Err.Error() + ")"
}

func (e *SaveError) Unwrap() error { return e.Err }

// Writer appends a session's entries in order, each uuid once. User entries
// go through AppendDurable, which returns once they are on disk; assistant
// and tool entries go through Append, which queues them for a background
// goroutine that writes whatever has accumulated in one batch. Flush waits
// for everything queued before it. A Writer is safe for concurrent use.
type Writer struct {
	app  Appender
	opts WriterOptions

	mu      sync.Mutex
	seen    map[string]struct{}
	queue   []Entry
	durable bool          // a queued entry needs fsync
	gen     uint64        // number of batches taken from the queue
	written uint64        // number of batches finished
	busy    bool          // a batch is being written
	err     error         // the last write's error, cleared by a success
	saved   time.Time     // everything given before it was written
	wake    chan struct{} // buffered(1): the loop has work
	done    *sync.Cond    // broadcast after each batch
	closed  bool
	exited  chan struct{}
}

// NewWriter starts a Writer over app. Close it to stop its goroutine and
// release app.
func NewWriter(app Appender, opts WriterOptions) *Writer {
	w := &Writer{
		app:    app,
		opts:   opts,
		seen:   make(map[string]struct{}, len(opts.Known)),
		wake:   make(chan struct{}, 1),
		exited: make(chan struct{}),
	}
	w.done = sync.NewCond(&w.mu)
	if w.opts.Now == nil {
		w.opts.Now = time.Now
	}
	w.saved = w.opts.Now()
	for _, id := range opts.Known {
		w.seen[id] = struct{}{}
	}
	go w.loop()
	return w
}

// Append queues entries for writing and returns at once. Entries whose uuid
// was written or queued before are dropped. While the last write has
// failed it still queues them (for the retry it starts) but returns that
// write's *SaveError, so that no one goes on as if the session were being
// saved. In eager mode it is AppendDurable.
func (w *Writer) Append(entries ...Entry) error {
	if w.opts.Eager {
		return w.AppendDurable(context.Background(), entries...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errWriterClosed
	}
	w.enqueue(entries, false)
	if w.err != nil {
		select { // retry now, with these
		case w.wake <- struct{}{}:
		default:
		}
	}
	return w.err
}

var errWriterClosed = errors.New("transcript writer is closed")

// AppendDurable writes entries after everything queued before them and
// returns once all of it is on stable storage.
func (w *Writer) AppendDurable(ctx context.Context, entries ...Entry) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errWriterClosed
	}
	if w.busy || len(w.queue) > 0 || w.err != nil {
		w.enqueue(entries, true)
		w.mu.Unlock()
		return w.Flush(ctx)
	}
	// Nothing queued or being written: write on this goroutine, sparing
	// the hand-off to the background one (the common case for a prompt).
	if !w.add(entries, true) {
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	w.writeBatch()
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	return err
}

// Seen reports whether an entry with this uuid was written or queued, or
// is known to be in the transcript (Known, KnownIn).
func (w *Writer) Seen(uuid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.seen[uuid]
	return ok || w.known(uuid)
}

// known reports whether KnownIn knows uuid. The caller holds w.mu.
func (w *Writer) known(uuid string) bool {
	return w.opts.KnownIn != nil && w.opts.KnownIn(uuid)
}

func (w *Writer) enqueue(entries []Entry, durable bool) {
	if w.add(entries, durable) {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// add queues the entries not seen before and reports whether there were
// any. The caller holds w.mu.
func (w *Writer) add(entries []Entry, durable bool) bool {
	added := false
	for _, e := range entries {
		if e.UUID != "" {
			if _, dup := w.seen[e.UUID]; dup || w.known(e.UUID) {
				continue
			}
			w.seen[e.UUID] = struct{}{}
		}
		w.queue = append(w.queue, e)
		added = true
	}
	w.durable = w.durable || (added && durable)
	return added
}

// Flush waits until every entry queued before the call is written (and, if
// any of them was durable, synced), and returns the error of a failed
// write. Cancelling ctx stops the wait, not the write.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.gen
	if len(w.queue) > 0 {
		target++ // the batch that will take what is queued now
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() {
			w.mu.Lock()
			w.done.Broadcast()
			w.mu.Unlock()
		})
	}
	for w.written < target && ctx.Err() == nil {
		if w.closed && !w.busy {
			// Closed with entries it could not write: no one will.
			if w.err == nil {
				w.err = errWriterClosed
			}
			break
		}
		if w.err != nil && len(w.queue) > 0 {
			// The last batch failed and was put back: retry now.
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		w.done.Wait()
		if w.err != nil {
			break
		}
	}
	err := w.err
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

func (w *Writer) loop() {
	defer close(w.exited)
	for range w.wake {
		w.writeBatch()
	}
}

// writeBatch writes everything queued as one batch, after any write in
// flight: writes never overlap, so lines keep their order.
func (w *Writer) writeBatch() {
	w.mu.Lock()
	for w.busy {
		w.done.Wait()
	}
	batch, durable := w.queue, w.durable
	w.queue, w.durable = nil, false
	if len(batch) == 0 {
		w.mu.Unlock()
		return
	}
	w.gen++
	w.busy = true
	taken := w.opts.Now()
	w.mu.Unlock()

	err := w.app.Append(context.Background(), batch, durable)

	w.mu.Lock()
	w.busy = false
	switch {
	case errors.Is(err, ErrNotSynced):
		// The lines are in the file: writing them again would repeat them.
		// The next write syncs, whether it asks to or not, so lines meant
		// to be durable do not stay unsynced behind a later success.
		w.written++
		err = &SaveError{Err: err, Since: w.saved}
		w.err = err
		w.durable = w.durable || durable
	case err != nil:
		// Put the batch back in front, keeping order, for a retry.
		w.queue = append(batch, w.queue...)
		w.durable = w.durable || durable
		w.gen--
		err = &SaveError{Err: err, Since: w.saved}
		w.err = err
	default:
		w.err = nil
		w.written++
		w.saved = taken
	}
	w.done.Broadcast()
	w.mu.Unlock()
	if err != nil && !durable && w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}

// Close flushes what is queued, stops the goroutine and closes the
// Appender. Entries that could not be written are reported in the error.
func (w *Writer) Close() error {
	ferr := w.Flush(context.Background())
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ferr
	}
	w.closed = true
	w.mu.Unlock()
	close(w.wake)
	<-w.exited
	cerr := w.app.Close()
	if ferr != nil {
		return ferr
	}
	return cerr
}
