// Package mcp connects cairn to MCP servers (SPEC G5), configured as
// Claude Code configures them: the project's .mcp.json and "mcpServers" in
// the settings files (Load). Connect starts every server at once — a
// command spoken to over stdin/stdout, or a remote one over streamable
// HTTP or SSE — and waits at most a timeout for each; a server that fails
// is reported and left out, and the session goes on without it.
//
// Each tool of a server becomes a tool.Tool named mcp__<server>__<tool>,
// with the server's description and input schema and its hints as the
// safety properties; the servers' instructions become one section of the
// system prompt, fixed for the session.
package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairn-dev/cairn/internal/shellsafe"
	"github.com/cairn-dev/cairn/tool"
)

// Defaults of Options.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultCallTimeout = 10 * time.Minute
)

// protocolVersion is the version cairn asks for in initialize; servers
// answer with the newest they share with it.
const protocolVersion = "2025-11-25"

// shutdownGrace is how long Close waits for servers to end on their own
// before they are killed.
const shutdownGrace = time.Second

// Options tune Connect.
type Options struct {
	// Dir is the working directory of stdio servers: the project.
	Dir string
	// Timeout bounds connecting to one server: starting it, initialize
	// and listing its tools (0: DefaultTimeout).
	Timeout time.Duration
	// CallTimeout bounds one tool call (0: DefaultCallTimeout).
	CallTimeout time.Duration
	// Version is the version cairn announces to servers.
	Version string
	// Environ is the environment stdio servers start with, before their
	// own "env" (nil: this process's environment).
	Environ []string
}

// EnvTimeouts reads the timeouts from MCP_TIMEOUT and MCP_TOOL_TIMEOUT,
// in milliseconds as Claude Code reads them; 0 where a variable is unset.
// A value that is not a positive whole number is ignored with a warning.
func EnvTimeouts(getenv func(string) string) (connect, call time.Duration, warnings []string) {
	read := func(name string) time.Duration {
		if getenv == nil {
			return 0
		}
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > int64(time.Duration(1<<62)/time.Millisecond) {
			warnings = append(warnings, fmt.Sprintf("%s=%q is not a number of milliseconds; the default applies", name, v))
			return 0
		}
		return time.Duration(ms) * time.Millisecond
	}
	return read("MCP_TIMEOUT"), read("MCP_TOOL_TIMEOUT"), warnings
}

// NotApprovedError is why a server of the project's .mcp.json was not
// started: the person has not approved it yet (see Config.Unapproved).
type NotApprovedError struct{ Name string }

func (e *NotApprovedError) Error() string {
	return fmt.Sprintf("not started: it comes with the project, and runs once you approve it with `cairn mcp approve %s`", shellsafe.Quote(e.Name))
}

// Servers are a session's MCP servers, connected or failed. They are not
// changed after Connect, so they are safe for concurrent use; Close ends
// every connection.
type Servers struct {
	list         []*server
	tools        []tool.Tool
	instructions string
	warnings     []string
}

// Status describes one configured server.
type Status struct {
	Name, Type, Source string
	// Err is why the server is not connected; nil when it is.
	Err error
	// Tools are the names the model calls its tools by.
	Tools []string
	// Instructions are what the server said about using it.
	Instructions string
}

// server is one configured server and its connection.
type server struct {
	cfg         Config
	callTimeout time.Duration
	session     *sdk.ClientSession // nil when not connected
	err         error
	tools       []*serverTool
	// instructions from initialize
	instructions string
	// kill ends the connection's process or stream at once.
	kill context.CancelFunc
}

// Connect connects to every server of configs at once and returns when
// each has connected, failed or run out of time. A server that fails is
// described in Warnings and offers no tools; the others are ready.
// Cancelling ctx abandons the servers still connecting. The connections
// outlive ctx: Close ends them.
func Connect(ctx context.Context, configs []Config, o Options) *Servers {
	return assembleServers(connectEach(ctx, configs, o, nil))
}

// connectEach connects to every server of configs at once and returns
// them in the configs' order once each has connected or failed; settled,
// when set, is called (from any goroutine) with each server as it has.
func connectEach(ctx context.Context, configs []Config, o Options, settled func(i int, sv *server)) []*server {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	list := make([]*server, len(configs))
	var wg sync.WaitGroup
	for i, c := range configs {
		if c.Unapproved {
			list[i] = &server{cfg: c, err: &NotApprovedError{Name: c.Name}}
			continue
		}
		wg.Go(func() {
			list[i] = connect(ctx, c, o)
			if settled != nil {
				settled(i, list[i])
			}
		})
	}
	wg.Wait()
	return list
}

// assembleServers gathers list (every server settled) into Servers and
// leaves each server only the tools it is kept for.
func assembleServers(list []*server) *Servers {
	g := gather(list)
	for i, sv := range list {
		if sv.err == nil {
			sv.tools = g.kept[i]
		}
	}
	return &Servers{list: list, tools: g.tools, instructions: g.instructions, warnings: g.warnings}
}

// gathered are the tools, the instructions' section and the warnings of
// a list of servers.
type gathered struct {
	tools        []tool.Tool
	kept         [][]*serverTool // each server's tools kept, by index
	instructions string
	warnings     []string
}

// gather collects the tools and instructions of the connected servers of
// list, in its order, skipping nil entries (servers not settled yet): a
// tool whose name an earlier server's tool has is left out with a
// warning. It changes no server.
func gather(list []*server) gathered {
	g := gathered{kept: make([][]*serverTool, len(list))}
	owner := make(map[string]string) // tool name → server
	var sections []string
	for i, sv := range list {
		if sv == nil {
			continue
		}
		if sv.err != nil {
			g.warnings = append(g.warnings, failedWarning(sv.cfg, sv.err))
			continue
		}
		for _, t := range sv.tools {
			name := t.spec.Name
			if other, dup := owner[name]; dup {
				g.warnings = append(g.warnings, fmt.Sprintf("MCP server %q offers a tool named %s, as server %q does; only the first is available (rename a server to tell them apart)", sv.cfg.Name, name, other))
				continue
			}
			owner[name] = sv.cfg.Name
			g.kept[i] = append(g.kept[i], t)
			g.tools = append(g.tools, t)
		}
		if text := strings.TrimSpace(sv.instructions); text != "" {
			sections = append(sections, "## "+sv.cfg.Name+"\n"+text)
		}
	}
	if len(sections) > 0 {
		g.instructions = "# MCP server instructions\nThe MCP servers connected to this session describe how to use their tools and resources:\n\n" + strings.Join(sections, "\n\n")
	}
	return g
}

// failedWarning says that the server c is left out, and why.
func failedWarning(c Config, err error) string {
	return fmt.Sprintf("MCP server %q (%s): %v; its tools are not available", c.Name, c.Source, err)
}

// Starting are MCP servers connecting in the background (Start): a
// session opens without waiting for them and takes their tools once all
// of them have connected or failed, in one change of its tool list. Safe
// for concurrent use.
type Starting struct {
	done    chan struct{}
	cancel  context.CancelFunc
	mu      sync.Mutex
	servers *Servers  // set, under mu, before done is closed
	settled []*server // by the configs' index; nil while connecting
	pending []string  // names still connecting, in the configs' order
	early   []string  // warnings known at Start
	closed  bool
}

// Start connects to every server of configs, as Connect does, in the
// background, and returns at once. Close the result when the session
// ends: it abandons the servers still connecting and closes every
// connection.
func Start(ctx context.Context, configs []Config, o Options) *Starting {
	ctx, cancel := context.WithCancel(ctx)
	st := &Starting{done: make(chan struct{}), cancel: cancel, settled: make([]*server, len(configs))}
	for _, c := range configs {
		if c.Unapproved {
			st.early = append(st.early, failedWarning(c, &NotApprovedError{Name: c.Name}))
		} else {
			st.pending = append(st.pending, c.Name)
		}
	}
	go func() {
		list := connectEach(ctx, configs, o, func(i int, sv *server) {
			st.mu.Lock()
			st.settled[i] = sv
			st.pending = slices.DeleteFunc(st.pending, func(n string) bool { return n == sv.cfg.Name })
			st.mu.Unlock()
		})
		st.mu.Lock()
		st.servers = assembleServers(list)
		st.mu.Unlock()
		close(st.done)
	}()
	return st
}

// Pending names the servers still connecting, in the configs' order.
// A nil Starting has none.
func (st *Starting) Pending() []string {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.pending)
}

// Early are the warnings known at Start, before any server has answered:
// the servers left out because the person has not approved them. The
// Servers' Warnings repeat them. A nil Starting has none.
func (st *Starting) Early() []string {
	if st == nil {
		return nil
	}
	return slices.Clone(st.early)
}

// Ready are the tools and the instructions' section of the servers
// connected so far — all of Servers' once every server has connected or
// failed. A server that connects later may take a tool name one of these
// has: Servers then gives it to the server configured first. A nil
// Starting has none.
func (st *Starting) Ready() (tools []tool.Tool, instructions string) {
	if st == nil {
		return nil, ""
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.servers != nil {
		return st.servers.Tools(), st.servers.Instructions()
	}
	g := gather(st.settled)
	return g.tools, g.instructions
}

// Done is closed once every server has connected or failed.
func (st *Starting) Done() <-chan struct{} { return st.done }

// Servers are the servers once Done is closed; nil before.
func (st *Starting) Servers() *Servers {
	select {
	case <-st.done:
		return st.servers
	default:
		return nil
	}
}

// Wait waits until every server has connected or failed (each within
// its timeout), or ctx ends, and returns the servers (nil if ctx ended
// first). A nil Starting has no servers.
func (st *Starting) Wait(ctx context.Context) *Servers {
	if st == nil {
		return nil
	}
	select {
	case <-st.done:
		return st.servers
	case <-ctx.Done():
		return nil
	}
}

// Close abandons the servers still connecting (they fail as cancelled)
// and closes every connection. Close may be called more than once.
func (st *Starting) Close() error {
	if st == nil {
		return nil
	}
	st.cancel()
	<-st.done
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil
	}
	st.closed = true
	return st.servers.Close()
}

// Tools are the connected servers' tools, server by server in the order
// of the configs, each server's in the order it lists them.
func (s *Servers) Tools() []tool.Tool { return append([]tool.Tool(nil), s.tools...) }

// Instructions is the system prompt section holding the servers'
// instructions, "" when none gave any. It is computed once, so it is the
// same on every turn.
func (s *Servers) Instructions() string { return s.instructions }

// Warnings describe the servers that could not be connected or whose
// tools were left out.
func (s *Servers) Warnings() []string { return append([]string(nil), s.warnings...) }

// Status describes every configured server, in the order of the configs.
func (s *Servers) Status() []Status {
	out := make([]Status, len(s.list))
	for i, sv := range s.list {
		st := Status{Name: sv.cfg.Name, Type: sv.cfg.Type, Source: sv.cfg.Source, Err: sv.err, Instructions: sv.instructions}
		for _, t := range sv.tools {
			st.Tools = append(st.Tools, t.spec.Name)
		}
		out[i] = st
	}
	return out
}

// Close ends every connection: each server is asked to stop (a stdio
// server's input is closed) and, if it has not within a second, its
// process group is killed. A tool call still running fails. Close may be
// called more than once; a nil Servers has nothing to close.
func (s *Servers) Close() error {
	if s == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, sv := range s.list {
		if sv.session == nil {
			continue
		}
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			sv.session.Close() // a server killed on the way out is not an error
		})
		wg.Go(func() {
			select {
			case <-done:
			case <-time.After(shutdownGrace):
			}
			sv.kill()
		})
	}
	wg.Wait()
	return nil
}

// connect starts one server and lists its tools, within o.Timeout.
func connect(ctx context.Context, c Config, o Options) *server {
	sv := &server{cfg: c, callTimeout: o.CallTimeout}
	// The connection lives until Close, not until ctx ends; kill stops it
	// early when connecting fails.
	life, kill := context.WithCancel(context.WithoutCancel(ctx))
	sv.kill = kill
	transport, cmd, stderr, err := newTransport(life, c, o)
	if err != nil {
		kill()
		sv.err = err
		return sv
	}
	done := make(chan attempt, 1)
	go func() {
		client := sdk.NewClient(&sdk.Implementation{Name: "cairn", Version: o.Version}, nil)
		if o.Dir != "" {
			// The project is the server's root, as Claude Code tells it.
			u := url.URL{Scheme: "file", Path: filepath.ToSlash(o.Dir)}
			client.AddRoots(&sdk.Root{URI: u.String(), Name: filepath.Base(o.Dir)})
		}
		cs, err := client.Connect(life, transport, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			// A failed Connect has waited for the process: if it ended on
			// its own, that says more than the broken pipe.
			if cmd != nil && cmd.ProcessState != nil && cmd.ProcessState.Exited() {
				err = fmt.Errorf("it exited with status %d before it was ready", cmd.ProcessState.ExitCode())
			}
			done <- attempt{err: err}
			return
		}
		var tools []*sdk.Tool
		if init := cs.InitializeResult(); init != nil && init.Capabilities != nil && init.Capabilities.Tools != nil {
			for t, err := range cs.Tools(life, nil) {
				if err != nil {
					cs.Close()
					done <- attempt{err: fmt.Errorf("list its tools: %w", err)}
					return
				}
				tools = append(tools, t)
			}
		}
		done <- attempt{session: cs, tools: tools}
	}()

	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	var r attempt
	select {
	case r = <-done:
	case <-timer.C:
		r = abandon(kill, done)
		r.err = fmt.Errorf("no answer within %s (MCP_TIMEOUT sets the limit, in milliseconds)", o.Timeout)
	case <-ctx.Done():
		r = abandon(kill, done)
		r.err = ctx.Err()
	}
	if r.err != nil {
		if r.session != nil {
			r.session.Close()
		}
		kill()
		sv.err = r.err
		if tail := stderr.tail(); tail != "" {
			sv.err = fmt.Errorf("%w (its stderr: %s)", r.err, tail)
		}
		return sv
	}
	sv.session = r.session
	if init := r.session.InitializeResult(); init != nil {
		sv.instructions = cut(init.Instructions, "instructions")
	}
	for _, t := range r.tools {
		sv.tools = append(sv.tools, newTool(sv, t))
	}
	return sv
}

// attempt is how connecting to a server ended.
type attempt struct {
	session *sdk.ClientSession
	tools   []*sdk.Tool
	err     error
}

// abandon stops a connection still being made and waits a moment for it
// to end; a session made after all is closed when it comes.
func abandon(kill context.CancelFunc, done <-chan attempt) attempt {
	kill()
	select {
	case r := <-done:
		return r
	case <-time.After(shutdownGrace):
		go func() {
			if r := <-done; r.session != nil {
				r.session.Close()
			}
		}()
		return attempt{}
	}
}

// newTransport builds the transport of c, with a stdio server's command
// and where its stderr goes; life ends a stdio server's process and an SSE
// server's stream.
func newTransport(life context.Context, c Config, o Options) (sdk.Transport, *exec.Cmd, *tailBuffer, error) {
	stderr := &tailBuffer{max: 1024}
	switch c.Type {
	case Stdio:
		cmd := exec.CommandContext(life, c.Command, c.Args...)
		cmd.Dir = o.Dir
		cmd.Env = append([]string(nil), o.Environ...)
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = stderr
		// Its own process group: a Ctrl-C in the terminal is cairn's to
		// handle, and killing the server stops what it started.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = shutdownGrace
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: shutdownGrace}, cmd, stderr, nil
	case HTTP, SSE:
		client := &http.Client{Transport: headers{base: http.DefaultTransport, set: c.Headers}}
		if c.Type == SSE {
			return &sdk.SSEClientTransport{Endpoint: c.URL, HTTPClient: client}, nil, nil, nil
		}
		return &sdk.StreamableClientTransport{Endpoint: c.URL, HTTPClient: client}, nil, nil, nil
	}
	return nil, nil, nil, fmt.Errorf("type %q is not supported", c.Type)
}

// headers adds a server's configured headers to every request.
type headers struct {
	base http.RoundTripper
	set  map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.set) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.set {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tailBuffer keeps the last bytes written to it: a server's stderr, quoted
// when it fails. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// tail is the text kept, on one line.
func (b *tailBuffer) tail() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b.buf), "")), " ")
}
