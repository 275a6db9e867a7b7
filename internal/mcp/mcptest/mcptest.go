// Package mcptest provides a real MCP server for tests, built with the
// go-sdk's server API: "notes", whose tools echo text, save a note, return
// an image, fail, and wait until cancelled. A test serves it over HTTP
// with NewServer, or as a stdio server by running its own binary again:
// call ServeIfAsked first thing in TestMain (or an init function) and
// start the server with Command.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Instructions are what the notes server tells its clients.
const Instructions = "Save notes with write_note and check them with echo."

// PNG is the image the picture tool returns: a 1×1 transparent PNG.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

// Notes is the state of one notes server: the notes saved so far. Safe
// for concurrent use.
type Notes struct {
	mu    sync.Mutex
	saved []string
}

// Saved returns the notes saved so far.
func (n *Notes) Saved() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.saved...)
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

// NewServer returns the notes server, saving into notes. Its tools:
//   - echo (read-only): returns its text, prefixed "echo: ";
//   - write_note (destructive): saves its text;
//   - picture (read-only): returns PNG and a caption;
//   - fail: an error result naming its text;
//   - slow: waits until the call is cancelled;
//   - env (read-only): returns the value of the environment variable named by its text.
func NewServer(notes *Notes) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, &mcp.ServerOptions{Instructions: Instructions})
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns the text given.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Saves a note, replacing none.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			notes.mu.Lock()
			notes.saved = append(notes.saved, in.Text)
			n := len(notes.saved)
			notes.mu.Unlock()
			return text(fmt.Sprintf("saved note %d", n)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "picture", Description: "Returns a picture.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{Data: PNG, MIMEType: "image/png"},
				&mcp.TextContent{Text: "a transparent pixel"},
				&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			r := text("failed: " + in.Text)
			r.IsError = true
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns an environment variable.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Text)), nil, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// EnvVar, set in a test binary's environment, makes ServeIfAsked run it
// as a stdio server: "notes" serves the notes server; "exit" writes to
// stderr and exits at once with status 3; "hang" never answers; "slow"
// serves the notes server after half a second (SlowStart), as a healthy
// server that takes a moment to start does; "gated" serves it once the
// file GateEnvVar names exists, so a test decides when it comes up.
const EnvVar = "CAIRN_MCPTEST_SERVER"

// GateEnvVar names the file the "gated" server waits for.
const GateEnvVar = "CAIRN_MCPTEST_GATE"

// SlowStart is how long the "slow" server takes before it answers.
const SlowStart = 500 * time.Millisecond

// ServeIfAsked runs this process as the stdio server EnvVar names, and
// exits, when EnvVar is set; otherwise it returns at once.
func ServeIfAsked() {
	switch os.Getenv(EnvVar) {
	case "":
		return
	case "notes", "slow", "gated":
		switch os.Getenv(EnvVar) {
		case "slow":
			time.Sleep(SlowStart)
		case "gated":
			for {
				if _, err := os.Stat(os.Getenv(GateEnvVar)); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		err := NewServer(&Notes{}).Run(context.Background(), &mcp.StdioTransport{})
		if err != nil && !strings.Contains(err.Error(), "EOF") {
			fmt.Fprintln(os.Stderr, "notes server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "exit":
		fmt.Fprintln(os.Stderr, "the server is broken")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour) // until killed
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%s=%q names no server\n", EnvVar, os.Getenv(EnvVar))
	os.Exit(2)
}

// Command returns how to start this test binary as the stdio server
// named (see EnvVar): the command and the environment to add.
func Command(server string) (command string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, map[string]string{EnvVar: server}
}
