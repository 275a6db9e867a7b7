package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// StructuredOutput is the tool a run with --json-schema answers through,
// as Claude Code's is: its input schema is the schema, a call whose input
// validates ends the turn with it, one that does not is an error the
// model reads and may correct once (MaxStructuredAttempts calls in all).
// Safe for concurrent use.
type StructuredOutput struct {
	schema   json.RawMessage
	resolved *jsonschema.Resolved

	mu       sync.Mutex
	value    json.RawMessage
	attempts int
	lastErr  string
}

// MaxStructuredAttempts is how many StructuredOutput calls a turn gets.
const MaxStructuredAttempts = 2

// NewStructuredOutput compiles schema; a schema that is not one is an
// error saying why.
func NewStructuredOutput(schema json.RawMessage) (*StructuredOutput, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the JSON schema does not parse: %w", err)
	}
	if s.Type == "" && len(s.Types) == 0 {
		s.Type = "object"
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the JSON schema is not valid: %w", err)
	}
	return &StructuredOutput{schema: schema, resolved: r}, nil
}

func (s *StructuredOutput) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name:        "StructuredOutput",
		Description: "Give your final answer through this tool, in the structure the user asked for: call it once, at the end, with the answer as its input. Nothing else you write is the answer.",
		InputSchema: s.schema,
	}
}
func (*StructuredOutput) ReadOnly(json.RawMessage) bool        { return true }
func (*StructuredOutput) Destructive(json.RawMessage) bool     { return false }
func (*StructuredOutput) ConcurrencySafe(json.RawMessage) bool { return false }

func (s *StructuredOutput) Run(_ context.Context, _ *tool.Env, input json.RawMessage) (tool.Result, error) {
	var v any
	err := json.Unmarshal(input, &v)
	if err == nil {
		err = s.resolved.Validate(v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if err != nil {
		s.lastErr = err.Error()
		r := tool.Errorf("The output does not match the required schema: %v. Call StructuredOutput again with input that does.", err)
		if s.attempts >= MaxStructuredAttempts {
			r.EndTurn = "The structured output did not match the schema after " + fmt.Sprint(s.attempts) + " attempts: " + s.lastErr
		}
		return r, nil
	}
	s.value = append(json.RawMessage(nil), input...)
	r := tool.Text("Structured output provided successfully.")
	r.EndTurn = string(input)
	return r, nil
}

// Value returns the validated output; ok is false when none was given.
func (s *StructuredOutput) Value() (v json.RawMessage, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.value != nil
}

// Attempts is how many calls were made, and why the last failed.
func (s *StructuredOutput) Attempts() (n int, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, s.lastErr
}

// Reset starts another turn's attempts.
func (s *StructuredOutput) Reset() {
	s.mu.Lock()
	s.value, s.attempts, s.lastErr = nil, 0, ""
	s.mu.Unlock()
}
