package longrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-dev/cairn/model/modeltest"
)

// Report is what one run cost and what the model knew at its end.
type Report struct {
	Program, Workload string
	// Provider is the API the program talked to (ProviderAnthropic,
	// ProviderOpenAI); with OpenAI's, cache reads are its cached tokens
	// and there are no cache writes, so the bill is not comparable with
	// one measured on Anthropic's.
	Provider    string `json:",omitempty"`
	Steps       int
	OutputBytes int
	// Requests by kind; TooLong the prompt-too-long refusals.
	Main, Summaries, Notes, Other, TooLong int
	// CountTokens are count_tokens calls (not billed).
	CountTokens                     int
	Input, CacheRead, CacheCreation int64
	PeakContext                     int64
	// Compactions are the compact_boundary events the program printed.
	Compactions int
	// Rewrites are main requests that read less of the cache than the
	// previous main request had cached: the prefix was rewritten.
	Rewrites int
	// Facts planted; FactsSeen visible to the model in the last main
	// request (after the server's edits); Missing names the others.
	Facts, FactsSeen int
	Missing          []string
	// TaskVerbatim: the first prompt is in the last request word for word.
	TaskVerbatim bool
	Completed    bool
	Errors       []string
	// Warnings are the program's lines about compaction or notes.
	Warnings []string
	Seconds  float64
}

// Billed is the input cost in input-token equivalents: input + 1.25 ×
// cache writes + 0.1 × cache reads.
func (r *Report) Billed() float64 {
	return float64(r.Input) + 1.25*float64(r.CacheCreation) + 0.1*float64(r.CacheRead)
}

// CacheShare is the share of input tokens read from the cache.
func (r *Report) CacheShare() float64 {
	total := r.Input + r.CacheRead + r.CacheCreation
	if total == 0 {
		return 0
	}
	return float64(r.CacheRead) / float64(total)
}

// RewritesPerCompaction is the rewrites over the compactions (at least one).
func (r *Report) RewritesPerCompaction() float64 {
	return float64(r.Rewrites) / float64(max(1, r.Compactions))
}

// MarshalJSON adds the derived figures.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		*plain
		Billed     float64 `json:"BilledInput"`
		CacheShare float64
	}{(*plain)(r), r.Billed(), r.CacheShare()})
}

// measure fills the report from the server's requests.
func (r *Report) measure(w *Workload, reqs []*modeltest.Request, pl *player) {
	var last *modeltest.Request
	var prefix int64 = -1
	for _, q := range reqs {
		if q.Path == "/v1/messages/count_tokens" {
			r.CountTokens++
			continue
		}
		if q.Status == 400 && q.Params != nil && bytes.Contains(errorOf(q), []byte("prompt is too long")) {
			r.TooLong++
			continue
		}
		if q.Status != 200 {
			continue
		}
		u := q.Usage
		r.Input += u.InputTokens
		r.CacheRead += u.CacheReadInputTokens
		r.CacheCreation += u.CacheCreationInputTokens
		switch pl.kind(q.ID) {
		case ReqMain:
			r.Main++
			r.PeakContext = max(r.PeakContext, u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens)
			if prefix >= 0 && u.CacheReadInputTokens+1024 < prefix {
				r.Rewrites++
			}
			prefix = u.CacheReadInputTokens + u.CacheCreationInputTokens
			last = q
		case ReqSummary:
			r.Summaries++
		case ReqNotes:
			r.Notes++
		default:
			r.Other++
		}
	}
	if last == nil {
		r.Missing = []string{"no main request"}
		return
	}
	seen := strings.Join(seenFacts(last), "\n")
	for _, f := range w.Facts {
		if strings.Contains(seen, f.Line()) {
			r.FactsSeen++
		} else {
			r.Missing = append(r.Missing, f.Line()+" ("+f.Where+")")
		}
	}
	r.TaskVerbatim = bytes.Contains(last.SeenJSON(), []byte(w.Task()))
}

// errorOf is what the server answered a refused request with: the
// modeltest server keeps no body, so the window check is redone.
func errorOf(q *modeltest.Request) []byte {
	if q.Tokens > Window {
		return []byte("prompt is too long")
	}
	return nil
}

// String renders the report for people.
func (r *Report) String() string {
	var b strings.Builder
	name := r.Program
	if r.Provider != "" && r.Provider != ProviderAnthropic {
		name += " (" + r.Provider + "-compatible API)"
	}
	fmt.Fprintf(&b, "%s on %s: %d steps, %.1f MB of tool output, %.0f s\n", name, r.Workload, r.Steps, float64(r.OutputBytes)/1e6, r.Seconds)
	fmt.Fprintf(&b, "  billed input        %.0f (input %d + 1.25 x writes %d + 0.1 x reads %d)\n", r.Billed(), r.Input, r.CacheCreation, r.CacheRead)
	fmt.Fprintf(&b, "  cache-read share    %.1f%%\n", 100*r.CacheShare())
	fmt.Fprintf(&b, "  requests            %d main / %d summaries / %d notes updates / %d other (%d count_tokens)\n", r.Main, r.Summaries, r.Notes, r.Other, r.CountTokens)
	fmt.Fprintf(&b, "  facts in last req.  %d / %d\n", r.FactsSeen, r.Facts)
	for _, m := range r.Missing {
		fmt.Fprintf(&b, "    missing %s\n", m)
	}
	fmt.Fprintf(&b, "  task word for word  %v\n", r.TaskVerbatim)
	fmt.Fprintf(&b, "  prompt too long     %d (context-length errors)\n", r.TooLong)
	fmt.Fprintf(&b, "  compactions         %d; prefix rewrites %d (%.1f per compaction)\n", r.Compactions, r.Rewrites, r.RewritesPerCompaction())
	fmt.Fprintf(&b, "  peak context        %d\n", r.PeakContext)
	if !r.Completed {
		b.WriteString("  the script did NOT run to its end\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  said: %s\n", w)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  error: %s\n", e)
	}
	return b.String()
}
