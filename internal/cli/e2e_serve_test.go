package cli_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/session"
)

var screenshots = flag.String("screenshots", "", "write the web viewer's screenshots to this folder")

// compactedSession writes a session with a compaction in the middle: a
// prompt and a tool call before it, the summary, and a turn after it.
func compactedSession(t *testing.T, home, cwd, id string) {
	t.Helper()
	env := fmt.Sprintf(`"sessionId":%q,"cwd":%q,"version":"2.1.332","userType":"external","isSidechain":false`, id, cwd)
	usage := func(in, read int) string {
		return fmt.Sprintf(`"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,"output_tokens":40}`, in, read)
	}
	lines := []string{
		`{"parentUuid":null,` + env + `,"type":"user","message":{"role":"user","content":"Find the flaky test in the payments module (PROMPT-BEFORE-COMPACTION)"},"uuid":"u1","timestamp":"2026-11-30T10:00:00.000Z"}`,
		`{"parentUuid":"u1",` + env + `,"type":"assistant","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/p/pay.go","old_string":"sleep(10)","new_string":"waitFor(ready)"}}],"stop_reason":"tool_use",` + usage(12000, 0) + `},"uuid":"a1","timestamp":"2026-11-30T10:00:05.000Z"}`,
		`{"parentUuid":"a1",` + env + `,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"The file was edited."}]},"uuid":"r1","timestamp":"2026-11-30T10:00:06.000Z"}`,
		`{"parentUuid":"r1",` + env + `,"type":"assistant","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Replaced the sleep with a readiness wait."}],"stop_reason":"end_turn",` + usage(800, 12000) + `},"uuid":"a2","timestamp":"2026-11-30T10:00:09.000Z"}`,
		`{"parentUuid":null,"logicalParentUuid":"a2",` + env + `,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"manual","preTokens":13000},"uuid":"b1","timestamp":"2026-11-30T10:01:00.000Z"}`,
		`{"parentUuid":"b1",` + env + `,"type":"user","message":{"role":"user","content":"Summary: the flaky payments test waited with sleep; it now waits for readiness."},"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"uuid":"s1","timestamp":"2026-11-30T10:01:00.000Z"}`,
		`{"parentUuid":"s1",` + env + `,"type":"user","message":{"role":"user","content":"Now run the suite (PROMPT-AFTER-COMPACTION)"},"uuid":"u2","timestamp":"2026-11-30T10:02:00.000Z"}`,
		`{"parentUuid":"u2",` + env + `,"type":"assistant","message":{"id":"m3","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"All 212 tests pass."}],"stop_reason":"end_turn",` + usage(3000, 0) + `},"uuid":"a3","timestamp":"2026-11-30T10:02:30.000Z"}`,
	}
	dir := session.Home{Dir: home}.ProjectDir(cwd)
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startServe runs `cairn serve` on a free loopback port and returns the
// URL it printed (with its token).
func startServe(t *testing.T, p *project, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = p.dir
	cmd.Env = append([]string{"CAIRN_HOME=" + p.home, "HOME=" + p.home, "PATH=" + os.Getenv("PATH")}, p.env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("cairn serve printed nothing: %v", err)
	}
	m := regexp.MustCompile(`http://\S+`).FindString(line)
	if m == "" {
		t.Fatalf("no URL in %q", line)
	}
	go io.Copy(io.Discard, out)
	return m
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install chromium); the web viewer's browser test needs it"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browse loads url in headless Chromium and returns the DOM after the
// page's scripts ran; with shot set it also saves a screenshot there.
func browse(t *testing.T, bin, url, shot string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000", "--window-size=1200,900"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if shot != "" {
		cmd := exec.CommandContext(ctx, bin, append(args, "--screenshot="+shot, url)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "--dump-dom", url)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

func TestWebViewerInChromium(t *testing.T) {
	bin := chromium(t)
	p := newProject(t)
	id := "0b1c2d3e-0000-4000-8000-00000000c0de"
	compactedSession(t, p.home, p.dir, id)
	base := startServe(t, p)

	// Without the token: nothing.
	resp, err := http.Get(strings.Split(base, "?")[0] + "api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("API without a token: %d", resp.StatusCode)
	}

	shot := func(name string) string {
		if *screenshots == "" {
			return ""
		}
		return filepath.Join(*screenshots, name)
	}
	list := browse(t, bin, base, shot("viewer-list.png"))
	if !strings.Contains(list, "Find the flaky test in the payments module") {
		t.Errorf("the list does not show the session's first prompt:\n%.2000s", list)
	}
	// A still page: the live tail's open connection would keep the
	// headless browser from ever finishing the page.
	view := browse(t, bin, base+"#/s/"+id+"?tail=off", shot("viewer-session.png"))
	for _, want := range []string{"PROMPT-BEFORE-COMPACTION", "Compacted (manual", "What the compaction kept", "PROMPT-AFTER-COMPACTION", "All 212 tests pass.", "waitFor(ready)"} {
		if !strings.Contains(view, want) {
			t.Errorf("the scroll-back lacks %q", want)
		}
	}
	// The chart: one point per request, the compaction marked.
	pts := regexp.MustCompile(`<polyline class="ctx" points="([^"]+)"`).FindStringSubmatch(view)
	if pts == nil || len(strings.Fields(pts[1])) != 3 {
		t.Errorf("the context chart is not drawn with 3 requests: %v", pts)
	}
	if !strings.Contains(view, `class="compaction"`) {
		t.Error("the chart does not mark the compaction")
	}
}
