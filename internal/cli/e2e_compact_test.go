package cli_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/pricing"
	"github.com/cairn-dev/cairn/model/modeltest"
)

// summarizer answers summary requests with a summary, others with a long
// answer.
func summarizer(r *modeltest.Request) modeltest.Reply {
	if bytes.Contains(r.Body, []byte("<summary></summary>")) {
		return modeltest.Text("<summary>THE-SUMMARY of the work so far.</summary>")
	}
	return modeltest.Text(longAnswer)
}

// longAnswer is an answer too long to be kept verbatim by a compaction
// (over the 40,000 tokens of the kept tail): a compaction of a session
// holding it frees room, where a short conversation is smaller than its
// summary and is left as it was.
var longAnswer = "fine. " + strings.Repeat("More detail. ", 14_000)

func TestCompactCommandWithHooks(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: summarizer})
	p.withHooks(t, `{
		"PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "$H/pre"}]}],
		"PostCompact": [{"hooks": [{"type": "command", "command": "$H/post"}]}]
	}`, map[string]string{
		"pre":  `cat > "$CLAUDE_PROJECT_DIR/pre.json"; echo "Keep every FOO detail."`,
		"post": `cat > "$CLAUDE_PROJECT_DIR/post.json"`,
	})
	for _, prompt := range []string{"first question", "second question"} {
		if code, _, e := p.cairn(t, "-c", "-p", prompt); code != 0 && !strings.Contains(e, "no transcript") {
			t.Fatalf("%s: %s", prompt, e)
		} else if code != 0 {
			p.cairn(t, "-p", prompt)
		}
	}
	code, out, errOut := p.cairn(t, "-c", "-p", "/compact keep the names", "--output-format", "stream-json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, `"subtype":"compact_boundary"`) || !strings.Contains(out, `"trigger":"manual"`) {
		t.Errorf("no compact_boundary event in:\n%s", out)
	}
	var summaryReq *modeltest.Request
	for _, r := range p.srv.Requests() {
		if bytes.Contains(r.Body, []byte("<summary></summary>")) {
			summaryReq = r
		}
	}
	if summaryReq == nil {
		t.Fatal("no summary request")
	}
	for _, want := range []string{"keep the names", "Keep every FOO detail."} {
		if !bytes.Contains(summaryReq.Body, []byte(want)) {
			t.Errorf("the summary request lacks %q", want)
		}
	}
	pre, _ := os.ReadFile(filepath.Join(p.dir, "pre.json"))
	post, _ := os.ReadFile(filepath.Join(p.dir, "post.json"))
	if !bytes.Contains(pre, []byte(`"trigger":"manual"`)) || !bytes.Contains(pre, []byte("keep the names")) {
		t.Errorf("PreCompact input: %s", pre)
	}
	if !bytes.Contains(post, []byte("THE-SUMMARY")) {
		t.Errorf("PostCompact input lacks the summary: %s", post)
	}
	// The next turn starts from the summary, and the user's words survive.
	if code, _, e := p.cairn(t, "-c", "-p", "third question"); code != 0 {
		t.Fatal(e)
	}
	last := string(p.srv.Last().Body)
	// The first request is carried as a reminder; the second is in the
	// kept tail, and is not carried as well (it would be sent twice).
	if !strings.Contains(last, "THE-SUMMARY") || !strings.Contains(last, `A request the user made earlier, in their own words:\nfirst question`) || strings.Count(last, "second question") != 1 {
		t.Errorf("the request after /compact: %s", last)
	}
	data := p.transcript(t)
	if !bytes.Contains(data, []byte(`"subtype":"compact_boundary"`)) || !bytes.Contains(data, []byte(`"isCompactSummary":true`)) {
		t.Error("the transcript lacks the compaction records")
	}
}

// TestCostCountsSideRequests: a run's total_cost_usd is every request it
// made, the compaction's summary request included.
func TestCostCountsSideRequests(t *testing.T) {
	p := newProject(t)
	p.srv = modeltest.Start(t, modeltest.Config{Respond: summarizer})
	if code, _, e := p.cairn(t, "-p", "first question"); code != 0 {
		t.Fatal(e)
	}
	before := len(p.srv.Requests())
	code, out, errOut := p.cairn(t, "-c", "-p", "/compact", "--output-format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Cost float64 `json:"total_cost_usd"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var want float64
	for _, r := range p.srv.Requests()[before:] {
		want += pricing.Cost("claude-sonnet-4-5", r.Usage)
	}
	if want == 0 || math.Abs(res.Cost-want) > 1e-9 {
		t.Errorf("total_cost_usd %v, want the summary request's %v", res.Cost, want)
	}
}
