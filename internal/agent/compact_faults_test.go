package agent_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// faultyScript answers the task like script, but its summary requests get
// the reply bad returns.
func faultyScript(steps int, bad func(*modeltest.Request) modeltest.Reply) (*script, func(*modeltest.Request) modeltest.Reply) {
	sc := &script{steps: steps}
	var mu sync.Mutex
	return sc, func(r *modeltest.Request) modeltest.Reply {
		if isSummaryRequest(r) {
			mu.Lock()
			defer mu.Unlock()
			return bad(r)
		}
		return sc.respond(r)
	}
}

func TestSummaryFaults(t *testing.T) {
	onStores(t, testSummaryFaults)
}

func testSummaryFaults(t *testing.T, k storeKind) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	tests := []struct {
		name string
		bad  func(*modeltest.Request) modeltest.Reply
		want string // in the notices
	}{
		{"empty summary", func(*modeltest.Request) modeltest.Reply { return modeltest.Text("   ") }, "empty summary"},
		{"summary times out", func(*modeltest.Request) modeltest.Reply {
			return modeltest.Reply{Content: []model.Block{model.TextBlock("<summary>never finishes</summary>")}, Hold: never, HoldAfter: 2}
		}, "longer than"},
		{"summary request fails", func(*modeltest.Request) modeltest.Reply { return modeltest.Error(500) }, "500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, respond := faultyScript(20, tt.bad)
			r := newRig(t, k, 0, sc)
			r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: 40_000, Respond: respond})
			a := r.open(t, tokens.Window{Size: 40_000, MaxOutput: 4_000}, func(o *agent.Options) { o.SummaryTimeout = 300 * time.Millisecond })
			_, notices, err := run(t, a, "go")
			if err != nil {
				t.Fatalf("the session must go on: %v (notices %q)", err, notices)
			}
			all := strings.Join(notices, "\n")
			if !strings.Contains(all, tt.want) {
				t.Errorf("notices %q lack %q", all, tt.want)
			}
			for _, req := range r.srv.Requests() {
				if !isSummaryRequest(req) && req.Status != 200 {
					t.Errorf("request %s answered %d: every request must fit", req.ID, req.Status)
				}
			}
		})
	}
}

// TestSummaryRequestTooLong: the summary request itself would not fit;
// the history is trimmed and summarised in chunks instead.
func TestSummaryRequestTooLong(t *testing.T) {
	onStores(t, testSummaryRequestTooLong)
}

func testSummaryRequestTooLong(t *testing.T, k storeKind) {
	sc := &script{steps: 40}
	r := newRig(t, k, 0, sc)
	big := r.open(t, tokens.Window{Size: 1_000_000, MaxOutput: 4_000}, nil)
	if _, _, err := run(t, big, "grow"); err != nil {
		t.Fatal(err)
	}
	big.Close()
	// Ten times the window: no single summary request can hold it.
	window := tokens.EstimateMessages(big.History()) / 10
	r.srv = modeltest.Start(t, modeltest.Config{ContextWindow: window, Respond: sc.respond})
	sc.steps, sc.calls = 0, 0
	a := r.open(t, tokens.Window{Size: window, MaxOutput: 4_000}, func(o *agent.Options) { o.Continue = true })
	compactions, notices, err := run(t, a, "and now?")
	if err != nil {
		t.Fatalf("resume at 10x the window: %v (notices %q)", err, notices)
	}
	if len(compactions) == 0 {
		t.Fatal("no compaction")
	}
	summaries := 0
	for _, req := range r.srv.Requests() {
		if isSummaryRequest(req) {
			summaries++
		} else if req.Status != 200 {
			t.Errorf("request %s answered %d", req.ID, req.Status)
		}
	}
	if summaries < 2 {
		t.Errorf("%d summary requests: a history ten times the window needs several parts", summaries)
	}
}
