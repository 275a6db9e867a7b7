package engine

import (
	"time"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// EventType tells what an Event reports.
type EventType int

// The events of a turn.
const (
	EventUser         EventType = iota // Message: the prompt, or tool results
	EventRequest                       // Request: about to be sent
	EventText                          // Text: a piece of the reply as it streams
	EventThinking                      // Text: a piece of the model's thinking
	EventAssistant                     // Message, Response: a complete reply
	EventToolCall                      // Call: a tool call starts
	EventToolResult                    // Call, Result: a tool call ended
	EventNotice                        // Text: something the user should know (a retry)
	EventCompact                       // Compaction: the context was compacted
	EventStatus                        // Text: what the session is busy with ("compacting", "compacting: part 2"; see Prep.Status), "" when done
	EventDone                          // Result: the turn ended
	EventToolProgress                  // Call, Text: how a running call is going (a subagent's steps)
	EventToolMessage                   // Call, Message, Response, Progress: a running call's subagent completed a message
)

// Event is one thing that happened in a turn.
type Event struct {
	Type     EventType
	Text     string
	Message  *model.Message
	Response *model.Response
	Request  *model.Request
	Call     *model.Block
	Result   *tool.Result
	// Done carries the turn's outcome on EventDone.
	Done *Result
	// Compaction reports a compaction on EventCompact.
	Compaction *Compaction
	// Progress is the call's report on EventToolMessage: the subagent's
	// message (also in Message, and its reply in Response) and the model
	// that answered it.
	Progress *tool.Progress
}

// Stop says why a turn ended.
type Stop string

// Reasons a turn ends.
const (
	StopEndTurn  Stop = "end_turn"
	StopMaxTurns Stop = "max_turns"
	// StopTool: a tool call ended the turn (tool.Result.EndTurn).
	StopTool Stop = "tool"
)

// Result is the outcome of a turn.
type Result struct {
	Stop  Stop
	Turns int // model requests made
	// Text is the final reply's text.
	Text string
	// Usage is the last response's usage: what the context holds now.
	Usage model.Usage
	// Total adds up the usage of every response of the turn.
	Total    model.Usage
	Duration time.Duration
}

func (r *Result) addCost(u model.Usage) {
	r.Total.InputTokens += u.InputTokens
	r.Total.OutputTokens += u.OutputTokens
	r.Total.CacheCreationInputTokens += u.CacheCreationInputTokens
	r.Total.CacheReadInputTokens += u.CacheReadInputTokens
}
