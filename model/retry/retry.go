// Package retry wraps a model.Model so that a request the provider could
// not start — overloaded, rate limited, a server error, a dropped
// connection — is sent again after a backoff, up to a number of attempts.
//
// A response that has begun is never retried: once a chunk has been
// yielded, a failure is reported as it is, since the consumer has already
// seen part of the answer.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/model"
)

// Defaults of Options.
const (
	DefaultMaxAttempts = 8
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 60 * time.Second
	// DefaultRefusedFor bounds the waits spent on refused connections.
	DefaultRefusedFor = 15 * time.Second
)

// RefusedError is a request given up on because every attempt found
// nothing listening at the server's address.
type RefusedError struct {
	Attempts int
	// For is how long the attempts took, waits included.
	For time.Duration
	Err error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("nothing is listening at the API's address: the connection was refused %d times over %s, so cairn gave up (%v); check the base URL (ANTHROPIC_BASE_URL or OPENAI_BASE_URL) and that the server runs", e.Attempts, e.For.Round(time.Second), e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Options configure a retrying Model. The zero value means the defaults.
type Options struct {
	// MaxAttempts is the most times a request is sent, the first included;
	// 0 means DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay is the wait before the second attempt; it doubles with each
	// attempt after. 0 means DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps a wait. A server asking for a longer one (retry-after)
	// is not retried: its error is returned at once. 0 means
	// DefaultMaxDelay.
	MaxDelay time.Duration
	// RefusedFor bounds the time spent retrying while every attempt finds
	// the connection refused (nothing listening: a wrong base URL, a
	// server not started): no wait starts past it, and the request then
	// fails with a RefusedError. 0 means DefaultRefusedFor. Other
	// failures use every attempt.
	RefusedFor time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then; nil
	// means a timer. Tests inject a fake.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1) that spreads waits out; nil means
	// math/rand/v2.
	Jitter func() float64
	// OnRetry, if set, is called before each wait: attempt is the number of
	// the attempt that failed (1 for the first), wait how long until the
	// next, err why. A UI says "overloaded, retrying in 4s".
	OnRetry func(attempt int, wait time.Duration, err error)
}

// Model is a model.Model that retries requests of another. It is safe for
// concurrent use if the wrapped Model is.
type Model struct {
	m    model.Model
	opts Options
}

var _ model.Model = (*Model)(nil)

// New returns m wrapped to retry as opts say.
func New(m model.Model, opts Options) *Model {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = DefaultBaseDelay
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.RefusedFor <= 0 {
		opts.RefusedFor = DefaultRefusedFor
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	return &Model{m: m, opts: opts}
}

// Stream streams req from the wrapped Model. If an attempt fails before
// yielding any chunk with an error Retryable reports, it waits and tries
// again; the last error is yielded when attempts run out. Cancelling ctx
// stops a wait and yields ctx's error.
func (r *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		// refused is how long the attempts have been refused, every one
		// of them so far (waits included); -1 once one was not.
		var refused time.Duration
		for attempt := 1; ; attempt++ {
			began := time.Now()
			started := false
			var failed error
			for ch, err := range r.m.Stream(ctx, req) {
				if err != nil {
					failed = err
					break
				}
				started = true
				if !yield(ch, nil) {
					return
				}
			}
			if failed == nil {
				return
			}
			if started || attempt >= r.opts.MaxAttempts || ctx.Err() != nil || !Retryable(failed) {
				yield(model.Chunk{}, failed)
				return
			}
			wait, ok := r.delay(attempt, failed)
			if !ok {
				yield(model.Chunk{}, failed)
				return
			}
			if refused >= 0 && errors.Is(failed, syscall.ECONNREFUSED) {
				refused += time.Since(began)
				if refused+wait > r.opts.RefusedFor {
					yield(model.Chunk{}, &RefusedError{Attempts: attempt, For: refused, Err: failed})
					return
				}
				refused += wait
			} else {
				refused = -1
			}
			if r.opts.OnRetry != nil {
				r.opts.OnRetry(attempt, wait, failed)
			}
			if err := r.opts.Sleep(ctx, wait); err != nil {
				yield(model.Chunk{}, err)
				return
			}
		}
	}
}

// delay is the wait after the given failed attempt: the server's
// retry-after if it gave one, else BaseDelay doubled per attempt plus up to
// a quarter more of jitter, capped at MaxDelay. It reports false when the
// server asks for more than MaxDelay.
func (r *Model) delay(attempt int, err error) (time.Duration, bool) {
	var ae *model.APIError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		return ae.RetryAfter, ae.RetryAfter <= r.opts.MaxDelay
	}
	d := r.opts.MaxDelay
	if shift := attempt - 1; shift < 32 {
		if b := r.opts.BaseDelay << shift; b > 0 && b < d {
			d = b
		}
	}
	d += time.Duration(float64(d) / 4 * r.opts.Jitter())
	return min(d, r.opts.MaxDelay), true
}

// Retryable reports whether a request that failed with err may succeed if
// sent again: an error in err's chain has a Retryable method that says so
// (as *model.APIError does for 408, 409, 429 and 5xx, and providers do for
// broken connections), or err is a network error. Cancellation, bad
// requests and authentication failures are not retryable.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
