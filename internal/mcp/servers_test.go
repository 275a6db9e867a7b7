package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-dev/cairn/internal/mcp"
	"github.com/cairn-dev/cairn/internal/mcp/mcptest"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfAsked() // this binary is also the stdio servers of the tests
	os.Exit(m.Run())
}

// stdio is the definition of this test binary run as the server named.
func stdio(name, server string) mcp.Config {
	cmd, env := mcptest.Command(server)
	return mcp.Config{Name: name, Source: "test", Type: mcp.Stdio, Command: cmd, Env: env}
}

// connect connects to configs, closing them when the test ends.
func connect(t *testing.T, o mcp.Options, configs ...mcp.Config) *mcp.Servers {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 20 * time.Second
	}
	s := mcp.Connect(t.Context(), configs, o)
	t.Cleanup(func() { s.Close() })
	return s
}

// find returns the tool named name.
func find(t *testing.T, s *mcp.Servers, name string) tool.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func run(t *testing.T, tl tool.Tool, input string) tool.Result {
	t.Helper()
	res, err := tl.Run(t.Context(), tool.NewEnv(t.TempDir()), json.RawMessage(input))
	if err != nil {
		t.Fatalf("%s: %v", tl.Spec().Name, err)
	}
	return res
}

func TestStdioServerTools(t *testing.T) {
	s := connect(t, mcp.Options{Dir: t.TempDir()}, stdio("my notes", "notes"))
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
	type props struct {
		Name                                   string
		ReadOnly, Destructive, ConcurrencySafe bool
	}
	var got []props
	for _, tl := range s.Tools() {
		in := json.RawMessage(`{}`)
		got = append(got, props{tl.Spec().Name, tl.ReadOnly(in), tl.Destructive(in), tl.ConcurrencySafe(in)})
	}
	want := []props{
		{"mcp__my_notes__echo", true, false, true},
		{"mcp__my_notes__env", true, false, true},
		{"mcp__my_notes__fail", false, false, false},
		{"mcp__my_notes__picture", true, false, true},
		{"mcp__my_notes__slow", false, false, false},
		{"mcp__my_notes__write_note", false, true, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	spec := find(t, s, "mcp__my_notes__echo").Spec()
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(spec.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("echo's schema %s (%v)", spec.InputSchema, err)
	}
	if spec.Description != "Returns the text given." {
		t.Errorf("echo's description %q", spec.Description)
	}

	wantSection := "# MCP server instructions\nThe MCP servers connected to this session describe how to use their tools and resources:\n\n## my notes\n" + mcptest.Instructions
	if got := s.Instructions(); got != wantSection {
		t.Errorf("instructions section:\n%s\nwant:\n%s", got, wantSection)
	}
	st := s.Status()
	if len(st) != 1 || st[0].Err != nil || st[0].Name != "my notes" || len(st[0].Tools) != 6 || st[0].Instructions != mcptest.Instructions {
		t.Errorf("status %+v", st)
	}
}

func TestStdioServerCalls(t *testing.T) {
	cfg := stdio("notes", "notes")
	cfg.Env["NOTES_COLOUR"] = "green"
	s := connect(t, mcp.Options{}, cfg)

	res := run(t, find(t, s, "mcp__notes__echo"), `{"text":"hello"}`)
	if diff := cmp.Diff(tool.Text("echo: hello").Content, res.Content); diff != "" || res.IsError || res.Detail != "echo: hello" {
		t.Errorf("echo: %+v\n%s", res, diff)
	}
	// The server's environment has its "env" on top of cairn's.
	if res := run(t, find(t, s, "mcp__notes__env"), `{"text":"NOTES_COLOUR"}`); res.Content[0].Text != "green" {
		t.Errorf("env: %+v", res)
	}

	res = run(t, find(t, s, "mcp__notes__picture"), `{}`)
	if len(res.Content) != 3 || res.Content[0].Type != model.BlockImage || res.Content[1].Text != "a transparent pixel" || !strings.Contains(res.Content[2].Text, "audio") {
		t.Fatalf("picture: %+v", res.Content)
	}
	var source struct {
		Type, MediaType, Data string
	}
	raw := res.Content[0].Extra["source"]
	if err := json.Unmarshal(raw, &source); err != nil || !strings.Contains(string(raw), `"media_type":"image/png"`) {
		t.Fatalf("image source %s: %v", raw, err)
	}
	if data, _ := base64.StdEncoding.DecodeString(source.Data); string(data) != string(mcptest.PNG) || source.Type != "base64" {
		t.Errorf("image data %q", source.Data)
	}

	res = run(t, find(t, s, "mcp__notes__fail"), `{"text":"on purpose"}`)
	if !res.IsError || res.Content[0].Text != "failed: on purpose" {
		t.Errorf("fail: %+v", res)
	}
	// Input the server's schema refuses is an error the model reads.
	res = run(t, find(t, s, "mcp__notes__echo"), `{"text": 42}`)
	if !res.IsError {
		t.Errorf("bad input: %+v", res)
	}
}

func TestCallCancelledAndTimedOut(t *testing.T) {
	s := connect(t, mcp.Options{CallTimeout: 300 * time.Millisecond}, stdio("notes", "notes"))
	slow := find(t, s, "mcp__notes__slow")

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := slow.Run(ctx, nil, json.RawMessage(`{}`))
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}

	res := run(t, slow, `{}`)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "did not finish within 300ms") {
		t.Errorf("timed out call: %+v", res)
	}
	// The server is still there for the next call.
	if res := run(t, find(t, s, "mcp__notes__echo"), `{"text":"still here"}`); res.Content[0].Text != "echo: still here" {
		t.Errorf("after the timeout: %+v", res)
	}
}

func TestFailingServersAreLeftOut(t *testing.T) {
	timeout := 2 * time.Second
	start := time.Now()
	s := connect(t, mcp.Options{Timeout: timeout},
		stdio("exits", "exit"),
		stdio("hangs", "hang"),
		mcp.Config{Name: "missing", Source: "test", Type: mcp.Stdio, Command: "cairn-no-such-mcp-server"},
		stdio("notes", "notes"),
		mcp.Config{Name: "nobody", Source: "test", Type: mcp.HTTP, URL: "http://127.0.0.1:1/mcp"},
	)
	if took := time.Since(start); took > timeout+5*time.Second {
		t.Errorf("connecting took %s with a timeout of %s", took, timeout)
	}
	warnings := strings.Join(s.Warnings(), "\n")
	for _, want := range []string{
		`MCP server "exits" (test):`, "the server is broken",
		`MCP server "hangs" (test): no answer within 2s`,
		`MCP server "missing" (test):`, "cairn-no-such-mcp-server",
		`MCP server "nobody" (test):`,
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	if n := strings.Count(warnings, "its tools are not available"); n != 4 {
		t.Errorf("%d failures reported:\n%s", n, warnings)
	}
	for _, st := range s.Status() {
		if (st.Err == nil) != (st.Name == "notes") {
			t.Errorf("status %+v", st)
		}
	}
	if res := run(t, find(t, s, "mcp__notes__echo"), `{"text":"hi"}`); res.Content[0].Text != "echo: hi" {
		t.Errorf("the working server: %+v", res)
	}
	if len(s.Tools()) != 6 {
		t.Errorf("%d tools", len(s.Tools()))
	}
}

func TestClose(t *testing.T) {
	s := mcp.Connect(t.Context(), []mcp.Config{stdio("notes", "notes")}, mcp.Options{Timeout: 20 * time.Second})
	echo := find(t, s, "mcp__notes__echo")
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("closing took %s", took)
	}
	if res := run(t, echo, `{"text":"gone?"}`); !res.IsError {
		t.Errorf("a call after Close: %+v", res)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var none *mcp.Servers
	if err := none.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
}

// TestRemoteServers serves the notes server over streamable HTTP and SSE,
// behind a check of the configured headers.
func TestRemoteServers(t *testing.T) {
	notes := &mcptest.Notes{}
	server := mcptest.NewServer(notes)
	getServer := func(*http.Request) *sdk.Server { return server }
	auth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "who are you?", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	// Cleanups run last first: the connections close before the servers.
	streamable := httptest.NewServer(auth(sdk.NewStreamableHTTPHandler(getServer, nil)))
	t.Cleanup(streamable.Close)
	sse := httptest.NewServer(auth(sdk.NewSSEHandler(getServer, nil)))
	t.Cleanup(sse.Close)

	data := `{"mcpServers": {
		"remote": {"type": "http", "url": "` + streamable.URL + `", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"legacy": {"type": "sse", "url": "` + sse.URL + `", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"stranger": {"type": "http", "url": "` + streamable.URL + `"}
	}}`
	configs, warnings := mcp.Parse("test", []byte(data), func(k string) string { return map[string]string{"TOKEN": "s3cret"}[k] })
	if len(warnings) != 0 {
		t.Fatalf("warnings %q", warnings)
	}
	s := connect(t, mcp.Options{}, configs...)
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], `MCP server "stranger" (test)`) || !strings.Contains(w[0], "its tools are not available") {
		t.Errorf("warnings %q", w)
	}
	for _, name := range []string{"mcp__remote__write_note", "mcp__legacy__write_note"} {
		if res := run(t, find(t, s, name), `{"text":"from `+name+`"}`); res.IsError || !strings.HasPrefix(res.Content[0].Text, "saved note") {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if diff := cmp.Diff([]string{"from mcp__remote__write_note", "from mcp__legacy__write_note"}, notes.Saved()); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if !strings.Contains(s.Instructions(), "## legacy\n"+mcptest.Instructions+"\n\n## remote\n") {
		t.Errorf("instructions:\n%s", s.Instructions())
	}
}

func TestDuplicateToolNames(t *testing.T) {
	// "a.b" and "a_b" normalize alike: the second server's tools are left out.
	s := connect(t, mcp.Options{}, stdio("a.b", "notes"), stdio("a_b", "notes"))
	if len(s.Tools()) != 6 {
		t.Errorf("%d tools", len(s.Tools()))
	}
	if w := s.Warnings(); len(w) != 6 || !strings.Contains(w[0], `MCP server "a_b" offers a tool named mcp__a_b__echo, as server "a.b" does`) {
		t.Errorf("warnings %q", w)
	}
}

func TestConnectCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	s := mcp.Connect(ctx, []mcp.Config{stdio("hangs", "hang")}, mcp.Options{Timeout: time.Minute})
	defer s.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a cancelled Connect took %s", took)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "context canceled") {
		t.Errorf("warnings %q", w)
	}
}

// TestNotApproved: an unapproved server is not started, and the command
// its warning gives approves it as written, quoted for the shell when its
// name needs it.
func TestNotApproved(t *testing.T) {
	cfg := stdio("my notes", "notes")
	cfg.Unapproved = true
	s := connect(t, mcp.Options{}, cfg)
	if len(s.Tools()) != 0 {
		t.Errorf("an unapproved server's tools: %d", len(s.Tools()))
	}
	var na *mcp.NotApprovedError
	if st := s.Status(); len(st) != 1 || !errors.As(st[0].Err, &na) {
		t.Fatalf("status %+v", st)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "`cairn mcp approve 'my notes'`") {
		t.Errorf("warnings %q", w)
	}
}

// TestInstructionsCut: a server's instructions, which go into every
// request's system prompt, are cut as a tool's description is.
func TestInstructionsCut(t *testing.T) {
	long := strings.Repeat("Use the tools well. ", 1000)
	server := sdk.NewServer(&sdk.Implementation{Name: "wordy", Version: "1"}, &sdk.ServerOptions{Instructions: long})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	t.Cleanup(hs.Close)
	s := connect(t, mcp.Options{}, mcp.Config{Name: "wordy", Source: "test", Type: mcp.HTTP, URL: hs.URL})
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
	const mark = "… [instructions cut]"
	got := s.Status()[0].Instructions
	if n := len([]rune(got)); n != mcp.MaxDescription+len([]rune(mark)) || !strings.HasSuffix(got, mark) || !strings.HasPrefix(long, strings.TrimSuffix(got, mark)) {
		t.Errorf("instructions of %d characters: ...%q", n, got[max(0, len(got)-80):])
	}
	if !strings.Contains(s.Instructions(), got) || len(s.Instructions()) > len(got)+200 {
		t.Errorf("section of %d bytes", len(s.Instructions()))
	}
}

// TestReady: while one server is still connecting, Ready holds the tools
// and the instructions of those connected already; once all have
// settled, those of Servers.
func TestReady(t *testing.T) {
	st := mcp.Start(t.Context(), []mcp.Config{stdio("notes", "notes"), stdio("stuck", "hang")}, mcp.Options{Timeout: time.Minute})
	defer st.Close()
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(st.Pending(), []string{"stuck"}); {
		if time.Now().After(deadline) {
			t.Fatalf("the notes server did not connect within 30s; pending %q", st.Pending())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tools, instructions := st.Ready()
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Spec().Name)
	}
	want := []string{"mcp__notes__echo", "mcp__notes__env", "mcp__notes__fail", "mcp__notes__picture", "mcp__notes__slow", "mcp__notes__write_note"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("ready tools (-want +got):\n%s", diff)
	}
	if !strings.Contains(instructions, "## notes\n"+mcptest.Instructions) {
		t.Errorf("ready instructions:\n%s", instructions)
	}
	if st.Servers() != nil {
		t.Errorf("Servers before the stuck server settled")
	}
	if res := run(t, tools[0], `{"text":"hi"}`); res.Detail != "echo: hi" {
		t.Errorf("a ready tool's call: %+v", res)
	}

	var none *mcp.Starting
	if tools, instructions := none.Ready(); tools != nil || instructions != "" {
		t.Errorf("a nil Starting's Ready: %v %q", tools, instructions)
	}
}
