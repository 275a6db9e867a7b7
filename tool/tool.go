// Package tool defines what a capability of the agent is: a Tool declares
// its three safety properties — read-only, destructive, safe to run
// concurrently — and runs one call. The engine knows tools only through
// this interface, so adding a capability means adding a tool (SPEC A1, A2).
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/cairn-dev/cairn/model"
)

// Tool is one capability the model can call. A type that does not answer
// all three safety questions does not implement Tool, so no tool can leave
// one out. Implementations are safe for concurrent use.
type Tool interface {
	// Spec describes the tool to the model.
	Spec() model.ToolSpec
	// ReadOnly reports whether the call with this input changes nothing
	// outside the process (files, processes, the network's state).
	ReadOnly(input json.RawMessage) bool
	// Destructive reports whether the call may destroy work that cannot be
	// recovered (deleting, overwriting, force-pushing): it needs a person's
	// confirmation unless a rule allows it.
	Destructive(input json.RawMessage) bool
	// ConcurrencySafe reports whether the call may run alongside other
	// calls of the same response.
	ConcurrencySafe(input json.RawMessage) bool
	// Run executes one call. A failure the model should read and act on
	// (no such file, a command's non-zero exit) is a Result with IsError;
	// an error return means the tool itself failed. Cancelling ctx stops
	// the call promptly.
	Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error)
}

// Result is what one call produced.
type Result struct {
	// Content is what the model reads: usually one text block.
	Content []model.Block
	IsError bool
	// Detail is the tool's own record of the call, stored in the
	// transcript as toolUseResult and never sent to the model.
	Detail any
	// EndTurn, when not empty, ends the turn once this response's results
	// are recorded: no further request is made, and EndTurn is the turn's
	// final text (a plan returned for approval by a run no one can
	// approve it in). The model reads Content on the next turn.
	EndTurn string
	// After are blocks the model reads after the response's tool
	// results, in the same user message but outside the tool_result (as
	// Claude Code sends the text of a skill the Skill tool loaded). The
	// transcript keeps them as a meta user line of their own after the
	// results.
	After []model.Block
}

// Text returns a result holding one text block.
func Text(s string) Result { return Result{Content: []model.Block{model.TextBlock(s)}} }

// Errorf returns an error result the model reads.
func Errorf(format string, args ...any) Result {
	r := Text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// Registry is an ordered set of tools, looked up by name. It is safe for
// concurrent use; Add and Replace change it, between a session's turns.
type Registry struct {
	mu    sync.RWMutex
	tools []Tool
	index map[string]Tool
}

// NewRegistry returns a registry of tools in the order given; a repeated
// name is an error.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{index: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		name := t.Spec().Name
		if _, dup := r.index[name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", name)
		}
		r.index[name] = t
		r.tools = append(r.tools, t)
	}
	return r, nil
}

// Add appends tools after the ones registered (a session's MCP servers
// that were still starting when it opened). A name already registered is
// an error, and then nothing is added.
func (r *Registry) Add(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		name := t.Spec().Name
		if _, dup := r.index[name]; dup || seen[name] {
			return fmt.Errorf("tool %q registered twice", name)
		}
		seen[name] = true
	}
	for _, t := range tools {
		r.index[t.Spec().Name] = t
		r.tools = append(r.tools, t)
	}
	return nil
}

// Replace puts each of tools in the place of the registered tool of its
// name (an MCP tool whose name another server turned out to own). A name
// not registered is an error, and then nothing is replaced.
func (r *Registry) Replace(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		if _, ok := r.index[t.Spec().Name]; !ok {
			return fmt.Errorf("tool %q is not registered", t.Spec().Name)
		}
	}
	for _, t := range tools {
		name := t.Spec().Name
		r.index[name] = t
		i := slices.IndexFunc(r.tools, func(u Tool) bool { return u.Spec().Name == name })
		r.tools[i] = t
	}
	return nil
}

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.index[name]
	return t, ok
}

// Tools returns the tools in order.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.tools)
}

// Specs returns the tools' specs in order, as a request lists them.
func (r *Registry) Specs() []model.ToolSpec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]model.ToolSpec, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Spec()
	}
	return out
}

// Without returns a registry without the named tools.
func (r *Registry) Without(names ...string) *Registry {
	out := &Registry{index: make(map[string]Tool)}
	for _, t := range r.tools {
		if n := t.Spec().Name; !slices.Contains(names, n) {
			out.index[n] = t
			out.tools = append(out.tools, t)
		}
	}
	return out
}
