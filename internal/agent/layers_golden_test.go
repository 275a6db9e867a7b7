package agent_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/agent"
	"github.com/cairn-dev/cairn/internal/tokens"
	"github.com/cairn-dev/cairn/model/modeltest"
	"github.com/cairn-dev/cairn/tool"
)

// Golden request bodies before and after the layers whose other tests
// check behaviour: offload (C0), snip (C1) and auto-compaction (C4). The
// micro-compaction and collapse goldens live with their tests.

// fixed makes a rig's sessions reproducible: uuids, clock and tools.
func fixed(tools ...tool.Tool) func(*agent.Options) {
	clk := &clock{now: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)}
	return func(o *agent.Options) {
		o.NewUUID, o.Now, o.DisableSessionMemory = spreadIDs(), clk.Now, true
		if len(tools) > 0 {
			o.Tools = tools
		}
	}
}

func TestGoldenOffload(t *testing.T) {
	onStores(t, testGoldenOffload)
}

func testGoldenOffload(t *testing.T, k storeKind) {
	st := &snipSteps{steps: []func([]byte) modeltest.Reply{callTool("toolu_big", "Fetch", `{}`), sayText("done")}}
	r := snipRig(t, k, 0, st.respond)
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, fixed(fetcher{n: 60_000}))
	runAll(t, a, "fetch it")
	reqs := r.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	golden(t, "offload_before.golden", reqs[0], r.cwd, r.home.Dir, projectDir(a))
	golden(t, "offload_after.golden", reqs[1], r.cwd, r.home.Dir, projectDir(a))
}

func TestGoldenSnip(t *testing.T) {
	onStores(t, testGoldenSnip)
}

func testGoldenSnip(t *testing.T, k storeKind) {
	st := &snipSteps{}
	r := snipRig(t, k, 0, st.respond)
	st.steps = []func([]byte) modeltest.Reply{
		callTool("toolu_1", "Big", `{}`), sayText("explored"),
		snipAt(t, "toolu_2", `"tool_use_id":"toolu_1"`), sayText("tidied"),
	}
	a := r.open(t, tokens.Window{Size: 200_000, MaxOutput: 4_000}, fixed(bigTool{n: 40}))
	for _, p := range []string{"explore", "tidy up"} {
		runAll(t, a, p)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	golden(t, "snip_before.golden", reqs[2], r.cwd, r.home.Dir, projectDir(a))
	golden(t, "snip_after.golden", reqs[3], r.cwd, r.home.Dir, projectDir(a))
}

// TestGoldenAutoCompaction: the last request before the threshold, the
// summary request (the same prefix, the instruction at the end) and the
// first request after the compaction.
func TestGoldenAutoCompaction(t *testing.T) {
	onStores(t, testGoldenAutoCompaction)
}

func testGoldenAutoCompaction(t *testing.T, k storeKind) {
	sc := &script{steps: 12}
	r := newRig(t, k, 0, sc)
	w := tokens.Window{Size: 12_000, MaxOutput: 1_000} // compacts at 6,001 (reserves scaled to half the window)
	a := r.open(t, w, fixed(bigTool{n: 600}))
	compactions, _, err := run(t, a, "PLANTED-FACT: please run Big many times")
	if err != nil {
		t.Fatal(err)
	}
	if len(compactions) == 0 {
		t.Fatal("no compaction")
	}
	reqs := r.srv.Requests()
	at := -1
	for i, req := range reqs {
		if isSummaryRequest(req) {
			at = i
			break
		}
	}
	if at < 1 || at+1 >= len(reqs) {
		t.Fatalf("summary request at %d of %d", at, len(reqs))
	}
	var before, summary []json.RawMessage
	_ = json.Unmarshal(reqs[at-1].Params.Fields["messages"], &before)
	_ = json.Unmarshal(reqs[at].Params.Fields["messages"], &summary)
	// The summary request repeats what the conversation sent, then asks.
	for i := range before[:len(before)-1] {
		if !bytes.Equal(before[i], summary[i]) {
			t.Errorf("the summary request differs from the conversation at message %d", i)
		}
	}
	golden(t, "compact_before.golden", reqs[at-1], r.cwd, r.home.Dir, projectDir(a))
	golden(t, "compact_summary.golden", reqs[at], r.cwd, r.home.Dir, projectDir(a))
	// The summary names the transcript for the model to read back only
	// when it is a file the model can read.
	after := map[storeKind]string{onFile: "compact_after.golden", onMemory: "compact_after_memory.golden"}[k]
	golden(t, after, reqs[at+1], r.cwd, r.home.Dir, projectDir(a))
}
