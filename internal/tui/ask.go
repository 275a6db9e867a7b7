package tui

import (
	"context"
	"encoding/json"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// Question is a tool call the permission checker wants a person to
// decide.
type Question struct {
	Tool  string
	Input json.RawMessage
	// Reason is why the checker asks.
	Reason string
	// Rule is the allow rule "don't ask again" would add; "" when there
	// is none to offer.
	Rule string
}

// Answer is the person's decision.
type Answer struct {
	Allow bool
	// Always is set when the person allowed the call and every one like
	// it: Rule was added to the project's local settings.
	Always bool
	Rule   string
	// Note is what the person told the model when refusing.
	Note string
	// Mode is the permission mode the person chose to carry out a plan
	// they approved (a question about ExitPlanMode).
	Mode string
}

// Asker carries questions from the permission gate (on a tool's
// goroutine) to the UI and the answers back. It is safe for concurrent
// use; several calls may wait at once.
type Asker struct {
	questions chan asked
}

type asked struct {
	q     Question
	reply chan Answer
}

// NewAsker returns an Asker; give it to the UI in Options.
func NewAsker() *Asker { return &Asker{questions: make(chan asked)} }

// Ask blocks until the person answers q or ctx ends (the turn was
// interrupted), which refuses the call.
func (a *Asker) Ask(ctx context.Context, q Question) Answer {
	reply := make(chan Answer, 1)
	select {
	case a.questions <- asked{q, reply}:
	case <-ctx.Done():
		return Answer{Note: "the turn was interrupted"}
	}
	select {
	case ans := <-reply:
		return ans
	case <-ctx.Done():
		return Answer{Note: "the turn was interrupted"}
	}
}

// askMsg brings a question to Update.
type askMsg asked

// waitAsk is the command that waits for the next question.
func (a *Asker) wait() tea.Cmd {
	if a == nil {
		return nil
	}
	return func() tea.Msg { return askMsg(<-a.questions) }
}

// Notices is an io.Writer whose lines the UI shows as notices: what
// would go to stderr while the UI owns the terminal. Writes never block;
// past a backlog of 64 lines, lines are dropped. Safe for concurrent use.
type Notices struct {
	lines chan string
}

// NewNotices returns a Notices.
func NewNotices() *Notices { return &Notices{lines: make(chan string, 64)} }

// Write implements io.Writer: each line of p becomes a notice.
func (n *Notices) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "cairn: ")
		if l == "" {
			continue
		}
		select {
		case n.lines <- l:
		default:
		}
	}
	return len(p), nil
}

type noticeMsg string

func (n *Notices) wait() tea.Cmd {
	if n == nil {
		return nil
	}
	return func() tea.Msg { return noticeMsg(<-n.lines) }
}
