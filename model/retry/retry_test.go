package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/itertest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/model/retry"
)

// attempt is what one request to the scripted model does: answer with a
// text of words words, then fail with err (or end when err is nil). The
// stream's chunks: none when it fails with no words; otherwise the
// message's start, a delta a word, the block's stop (with words), and
// the response or the error.
type attempt struct {
	words int
	err   error
}

// scripted returns a model that plays attempts in order.
func scripted(attempts ...attempt) *modeltest.Scripted {
	return &modeltest.Scripted{Answer: func(_ context.Context, n int, _ *model.Request) ([]model.Block, error) {
		a := attempts[n]
		if a.words == 0 {
			return nil, a.err
		}
		words := make([]string, a.words)
		for i := range words {
			words[i] = fmt.Sprint(i)
		}
		return []model.Block{model.TextBlock(strings.Join(words, " "))}, a.err
	}}
}

var (
	overloaded = &model.APIError{Status: 529, Type: "overloaded_error"}
	badRequest = &model.APIError{Status: 400, Type: "invalid_request_error"}
)

func TestStream(t *testing.T) {
	tests := []struct {
		name       string
		opts       retry.Options
		attempts   []attempt
		wantErr    error
		wantChunks int
		wantWaits  []time.Duration
	}{
		{
			name:       "success at once",
			attempts:   []attempt{{words: 2}},
			wantChunks: 5,
		},
		{
			name:       "backoff doubles",
			attempts:   []attempt{{err: overloaded}, {err: overloaded}, {err: overloaded}, {words: 1}},
			wantChunks: 4,
			wantWaits:  []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
		},
		{
			name:       "backoff is capped",
			opts:       retry.Options{BaseDelay: 20 * time.Second, MaxDelay: 30 * time.Second},
			attempts:   []attempt{{err: overloaded}, {err: overloaded}, {err: overloaded}, {words: 0}},
			wantChunks: 2,
			wantWaits:  []time.Duration{20 * time.Second, 30 * time.Second, 30 * time.Second},
		},
		{
			name:       "retry-after is honoured",
			attempts:   []attempt{{err: &model.APIError{Status: 429, RetryAfter: 7 * time.Second}}, {}},
			wantChunks: 2,
			wantWaits:  []time.Duration{7 * time.Second},
		},
		{
			name:     "retry-after beyond the cap gives up",
			attempts: []attempt{{err: &model.APIError{Status: 429, RetryAfter: 5 * time.Minute}}, {}},
			wantErr:  model.ErrRateLimited,
		},
		{
			name:       "never after a chunk",
			attempts:   []attempt{{words: 1, err: overloaded}, {}},
			wantErr:    overloaded,
			wantChunks: 3,
		},
		{
			name:     "not on a bad request",
			attempts: []attempt{{err: badRequest}, {}},
			wantErr:  badRequest,
		},
		{
			name:     "not on auth",
			attempts: []attempt{{err: &model.APIError{Status: 401}}, {}},
			wantErr:  model.ErrAuth,
		},
		{
			name:      "at most MaxAttempts",
			opts:      retry.Options{MaxAttempts: 3},
			attempts:  []attempt{{err: overloaded}, {err: overloaded}, {err: overloaded}, {}},
			wantErr:   overloaded,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second},
		},
		{
			name:       "connection errors",
			attempts:   []attempt{{err: io.ErrUnexpectedEOF}, {err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, {}},
			wantChunks: 2,
			wantWaits:  []time.Duration{500 * time.Millisecond, time.Second},
		},
		{
			name:     "not on other errors",
			attempts: []attempt{{err: errors.New("no model")}, {}},
			wantErr:  errors.New("no model"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var waits, notified []time.Duration
			opts := tt.opts
			opts.Jitter = func() float64 { return 0 }
			opts.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			opts.OnRetry = func(n int, d time.Duration, err error) {
				if n != len(notified)+1 {
					t.Errorf("OnRetry attempt %d after %d calls", n, len(notified))
				}
				notified = append(notified, d)
			}
			inner := scripted(tt.attempts...)
			chunks := 0
			var err error
			for _, e := range retry.New(inner, opts).Stream(t.Context(), &model.Request{}) {
				if e != nil {
					err = e
					break
				}
				chunks++
			}
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) && (err == nil || err.Error() != tt.wantErr.Error()) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if chunks != tt.wantChunks {
				t.Errorf("%d chunks, want %d", chunks, tt.wantChunks)
			}
			if d := cmp.Diff(tt.wantWaits, waits); d != "" {
				t.Errorf("waits (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantWaits, notified); d != "" {
				t.Errorf("OnRetry waits (-want +got):\n%s", d)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	var waits []time.Duration
	inner := scripted(attempt{err: overloaded}, attempt{err: overloaded}, attempt{})
	m := retry.New(inner, retry.Options{
		Jitter: func() float64 { return 0.5 },
		Sleep:  func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	})
	for range m.Stream(t.Context(), &model.Request{}) {
	}
	// An eighth more for a jitter of 0.5: a quarter at most.
	want := []time.Duration{562500 * time.Microsecond, 1125 * time.Millisecond}
	if d := cmp.Diff(want, waits); d != "" {
		t.Errorf("waits (-want +got):\n%s", d)
	}
}

// TestDefaultSleep runs the real timer in a synctest bubble: the fake clock
// advances, nothing sleeps.
func TestDefaultSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := scripted(attempt{err: overloaded}, attempt{err: overloaded}, attempt{})
		start := time.Now()
		var err error
		for _, e := range retry.New(inner, retry.Options{Jitter: func() float64 { return 0 }}).Stream(t.Context(), &model.Request{}) {
			err = e
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 1500*time.Millisecond {
			t.Errorf("waited %v, want 1.5s", got)
		}
	})
}

func TestCancelWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		inner := scripted(attempt{err: overloaded}, attempt{})
		m := retry.New(inner, retry.Options{OnRetry: func(int, time.Duration, error) {
			time.AfterFunc(100*time.Millisecond, cancel)
		}})
		start := time.Now()
		var err error
		for _, e := range m.Stream(ctx, &model.Request{}) {
			err = e
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("returned after %v, want 100ms", got)
		}
		if n := len(inner.Requests()); n != 1 {
			t.Errorf("%d calls after cancel", n)
		}
	})
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("stream: %w", context.DeadlineExceeded), false},
		{&model.APIError{Status: 529}, true},
		{&model.APIError{Status: 429}, true},
		{&model.APIError{Status: 500}, true},
		{&model.APIError{Status: 503}, true},
		{&model.APIError{Status: 400}, false},
		{&model.APIError{Status: 401}, false},
		{&model.APIError{Status: 403}, false},
		{fmt.Errorf("wrapped: %w", &model.APIError{Status: 529}), true},
		{io.ErrUnexpectedEOF, true},
		{syscall.ECONNRESET, true},
		{&net.OpError{Op: "read", Err: errors.New("x")}, true},
		{io.EOF, false},
		{errors.New("plain"), false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			if got := retry.Retryable(tt.err); got != tt.want {
				t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestStreamBreak: a consumer may stop at any chunk, of a first attempt or
// of one after a retry; the stream yields nothing after, and no attempt
// starts after the break.
func TestStreamBreak(t *testing.T) {
	var inner *modeltest.Scripted
	itertest.BreakAtEvery(t, func(*testing.T) iter.Seq2[model.Chunk, error] {
		inner = scripted(attempt{err: overloaded}, attempt{words: 3})
		opts := retry.Options{Jitter: func() float64 { return 0 }, Sleep: func(context.Context, time.Duration) error { return nil }}
		return retry.New(inner, opts).Stream(t.Context(), &model.Request{})
	}, func(t *testing.T, k int) {
		if n := len(inner.Requests()); n != 2 {
			t.Errorf("break after %d chunks: %d attempts, want 2", k+1, n)
		}
	})
}

// TestRefusedGivesUp: while every attempt finds the connection refused,
// the retries stop once their waits would pass RefusedFor, with a
// RefusedError; one other failure among them lifts the bound.
func TestRefusedGivesUp(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	var waits []time.Duration
	opts := retry.Options{Jitter: func() float64 { return 0 }, Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	all := make([]attempt, retry.DefaultMaxAttempts)
	for i := range all {
		all[i] = attempt{err: refused}
	}
	m := retry.New(scripted(all...), opts)
	var got error
	for _, err := range m.Stream(context.Background(), &model.Request{}) {
		got = err
	}
	var re *retry.RefusedError
	if !errors.As(got, &re) || !errors.Is(got, syscall.ECONNREFUSED) {
		t.Fatalf("error %v, want a RefusedError wrapping ECONNREFUSED", got)
	}
	// 0.5+1+2+4 = 7.5 s; the next wait (8 s) would pass 15 s.
	if diff := cmp.Diff([]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if re.Attempts != 5 {
		t.Errorf("gave up after %d attempts, want 5", re.Attempts)
	}

	waits = nil
	mixed := append([]attempt{{err: overloaded}}, all[:retry.DefaultMaxAttempts-1]...)
	m = retry.New(scripted(mixed...), opts)
	for _, err := range m.Stream(context.Background(), &model.Request{}) {
		got = err
	}
	if errors.As(got, &re) || len(waits) != retry.DefaultMaxAttempts-1 {
		t.Errorf("with an overload first: error %v after %d waits, want every attempt and the plain error", got, len(waits))
	}
}
