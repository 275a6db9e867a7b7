// Package longrun measures what a long session costs and what the model
// still knows at its end, for cairn and for Claude Code alike: a scripted
// fake model (it picks each tool call from the step number, so the same
// script drives both programs) works through real files with the real
// Bash and Read tools against the fake Anthropic server (model/modeltest),
// which clears, caches, counts and enforces its window the way the API
// does. Facts planted in tool outputs, in CLAUDE.md and in later user
// messages must be visible to the model in the last request, after the
// server's context edits; side requests (summaries, session-notes
// updates) are answered by an extractive oracle that keeps every fact
// line it is shown, so what is lost is lost by the program's pipeline,
// not by the oracle.
package longrun

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
)

// Kinds of step.
const (
	KindCat  = "cat"  // Bash: cat logs/NNNN.log
	KindSeq  = "seq"  // Bash: seq 1 N
	KindRead = "read" // Read: tables/NNNN.csv
)

// Step is one tool call of the script.
type Step struct {
	Kind string
	// Path is the file a cat or read shows, relative to the project.
	Path string
	// N is seq's last number.
	N int
	// Bytes is the output's size, about.
	Bytes int
}

// Turn is one user message and the steps that answer it.
type Turn struct {
	Prompt string
	Steps  []Step
}

// Fact is one line FACT-<ID>=<value> the task says to keep.
type Fact struct {
	ID, Value string
	// Where says where it was planted, for reports.
	Where string
}

// Line is the fact as it is written: FACT-<ID>=<value>.
func (f Fact) Line() string { return "FACT-" + f.ID + "=" + f.Value }

// Workload is a scripted session: the project's files, the user's turns
// and the facts to keep.
type Workload struct {
	Name string
	// Files are the project's files by relative path, CLAUDE.md among them.
	Files map[string]string
	Turns []Turn
	Facts []Fact
}

// Task is the first user message, which must reach the end word for word.
func (w *Workload) Task() string { return w.Turns[0].Prompt }

// Steps is the number of tool steps.
func (w *Workload) Steps() int {
	n := 0
	for _, t := range w.Turns {
		n += len(t.Steps)
	}
	return n
}

// OutputBytes is the size of every tool output together.
func (w *Workload) OutputBytes() int {
	n := 0
	for _, t := range w.Turns {
		for _, s := range t.Steps {
			n += s.Bytes
		}
	}
	return n
}

// task is the first prompt of both workloads.
const task = "Go through the logs, tables and sequences of this project, one at a time, as I ask. " +
	"Some outputs contain lines of the form FACT-<ID>=<value>: keep every one of them, exactly. " +
	"At the end report them all."

// gen builds workloads deterministically from a seed.
type gen struct {
	rng   *rand.Rand
	files map[string]string
	logs  int
	csvs  int
	facts int
}

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, 0x1e9)), files: map[string]string{}}
}

// logUniform draws a size between lo and hi bytes, log-uniformly.
func (g *gen) logUniform(lo, hi int) int {
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return int(math.Exp(l + g.rng.Float64()*(h-l)))
}

var words = []string{"amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "jasper", "kestrel", "lumen", "marlin", "nectar", "onyx", "pylon", "quartz", "raven", "sable", "tundra"}

// fact makes a new fact planted at where.
func (g *gen) fact(where string) Fact {
	g.facts++
	id := fmt.Sprintf("%c%d%c", 'A'+rune(g.rng.IntN(26)), g.facts, 'A'+rune(g.rng.IntN(26)))
	return Fact{ID: id, Value: fmt.Sprintf("%s-%04d", words[g.rng.IntN(len(words))], g.rng.IntN(10000)), Where: where}
}

// step makes a step of the given kind with an output of about size
// bytes, the fact (if any) in its middle.
func (g *gen) step(kind string, size int, fact *Fact) Step {
	switch kind {
	case KindSeq:
		n, b := 0, 0
		for b < size {
			n++
			b += len(fmt.Sprint(n)) + 1
		}
		return Step{Kind: KindSeq, N: n, Bytes: b}
	case KindCat:
		g.logs++
		path := filepath.Join("logs", fmt.Sprintf("%04d.log", g.logs))
		g.files[path] = g.text(size, fact, func(i int) string {
			return fmt.Sprintf("2026-11-30T%02d:%02d:%02d.%03dZ INFO svc=%s req=%d-%d took %dms cache=%s\n",
				i/3600%24, i/60%60, i%60, i%1000, words[(g.logs+i)%len(words)], g.logs, i, (g.logs*31+i*7)%400, []string{"hit", "miss"}[i%2])
		})
		return Step{Kind: KindCat, Path: path, Bytes: len(g.files[path])}
	default:
		g.csvs++
		path := filepath.Join("tables", fmt.Sprintf("%04d.csv", g.csvs))
		g.files[path] = g.text(size, fact, func(i int) string {
			if i == 0 {
				return "id,region,service,latency_ms,status,bytes,checksum,note\n"
			}
			return fmt.Sprintf("%d,%s,%s,%d,%d,%d,%08x,batch %d row %d of the nightly export\n",
				i, words[(g.csvs+i)%len(words)], words[(g.csvs*3+i)%len(words)], (g.csvs*17+i*13)%900, []int{200, 200, 200, 404, 500}[i%5], (i*7919)%65536, uint32(g.csvs*2654435761+i*40503), g.csvs, i)
		})
		return Step{Kind: KindRead, Path: path, Bytes: len(g.files[path])}
	}
}

// text fills about size bytes with line(i), the fact's line in the middle.
func (g *gen) text(size int, fact *Fact, line func(int) string) string {
	var b strings.Builder
	planted := fact == nil
	for i := 0; b.Len() < size; i++ {
		if !planted && b.Len() >= size/2 {
			b.WriteString(fact.Line() + "\n")
			planted = true
		}
		b.WriteString(line(i))
	}
	return b.String()
}

// kind draws a step's kind with the given shares of cat and read (the
// rest is seq).
func (g *gen) kind(cat, read float64) string {
	switch x := g.rng.Float64(); {
	case x < cat:
		return KindCat
	case x < cat+read:
		return KindRead
	}
	return KindSeq
}

// claudeMd writes the project's CLAUDE.md with n rules that are facts.
func (g *gen) claudeMd(n int) []Fact {
	var facts []Fact
	var b strings.Builder
	b.WriteString("# Project rules\n\n- Logs are in logs/, tables in tables/.\n")
	for range n {
		f := g.fact("CLAUDE.md")
		fmt.Fprintf(&b, "- This rule is itself a fact to report: %s\n", f.Line())
		facts = append(facts, f)
	}
	g.files["CLAUDE.md"] = b.String()
	return facts
}

// Basic is the first workload: one task, 160 steps of Bash (cat, seq) and
// Read with outputs of 1–100 KB, log-uniform; ten facts in the middle of
// 2–20 KB outputs in the first third, two more as rules in CLAUDE.md.
func Basic(seed uint64) *Workload {
	g := newGen(seed)
	w := &Workload{Name: "basic", Facts: g.claudeMd(2)}
	const steps = 160
	at := map[int]bool{}
	for len(at) < 10 {
		at[2+g.rng.IntN(steps/3-2)] = true
	}
	t := Turn{Prompt: task}
	for i := range steps {
		if at[i] {
			f := g.fact(fmt.Sprintf("step %d", i+1))
			kind := KindCat
			if g.rng.IntN(2) == 0 {
				kind = KindRead
			}
			s := g.step(kind, g.logUniform(2_000, 20_000), &f)
			f.Where += fmt.Sprintf(" (%s, %d KB)", s.Kind, s.Bytes/1000)
			w.Facts = append(w.Facts, f)
			t.Steps = append(t.Steps, s)
			continue
		}
		t.Steps = append(t.Steps, g.step(g.kind(0.45, 0.40), g.logUniform(1_000, 100_000), nil))
	}
	w.Turns = []Turn{t}
	w.Files = g.files
	return w
}

// Hard is the second workload: four user turns of 120 steps each, read-
// heavy, about ten compactions' worth of output; 18 facts: in early,
// middle and late outputs (four deep inside 60–95 KB reads), two in
// CLAUDE.md, and four in the follow-up user messages, one of which changes
// a requirement.
func Hard(seed uint64) *Workload {
	g := newGen(seed)
	w := &Workload{Name: "hard", Facts: g.claudeMd(2)}
	const perTurn = 120
	// Facts in outputs: global step index → deep (60–95 KB read) or not.
	plant := map[int]bool{}
	for _, band := range []struct {
		lo, hi, n, deep int
	}{{0, 120, 4, 1}, {120, 360, 4, 2}, {360, 480, 4, 1}} {
		placed := 0
		for placed < band.n {
			i := band.lo + 5 + g.rng.IntN(band.hi-band.lo-10)
			if _, ok := plant[i]; ok || i%perTurn > perTurn-3 {
				continue
			}
			plant[i] = placed < band.deep
			placed++
		}
	}
	followUps := []string{
		"Good. Now the next batch, the same way. One more to keep: %s.",
		"Change of requirement: the final report must list the facts sorted by their ID, not in the order you found them. Record this too: %s. Then go on with the third batch.",
		"Last batch. Two more to keep: %s and %s. Then give me the final report.",
	}
	var userFacts [][]Fact
	for i := range followUps {
		n := 1
		if i == 2 {
			n = 2
		}
		var fs []Fact
		for range n {
			fs = append(fs, g.fact(fmt.Sprintf("user message %d", i+2)))
		}
		userFacts = append(userFacts, fs)
	}
	for ti := range 4 {
		t := Turn{Prompt: task}
		if ti > 0 {
			args := []any{}
			for _, f := range userFacts[ti-1] {
				args = append(args, f.Line())
			}
			t.Prompt = fmt.Sprintf(followUps[ti-1], args...)
		}
		for j := range perTurn {
			i := ti*perTurn + j
			deep, ok := plant[i]
			if !ok {
				t.Steps = append(t.Steps, g.step(g.kind(0.35, 0.55), g.logUniform(1_000, 100_000), nil))
				continue
			}
			f := g.fact(fmt.Sprintf("step %d", i+1))
			var s Step
			if deep {
				s = g.step(KindRead, 60_000+g.rng.IntN(35_000), &f)
			} else {
				kind := KindCat
				if g.rng.IntN(2) == 0 {
					kind = KindRead
				}
				s = g.step(kind, g.logUniform(2_000, 20_000), &f)
			}
			f.Where += fmt.Sprintf(" (%s, %d KB)", s.Kind, s.Bytes/1000)
			w.Facts = append(w.Facts, f)
			t.Steps = append(t.Steps, s)
		}
		w.Turns = append(w.Turns, t)
		if ti > 0 {
			w.Facts = append(w.Facts, userFacts[ti-1]...)
		}
	}
	w.Files = g.files
	return w
}

// ByName returns the workload of that name ("basic" or "hard").
func ByName(name string, seed uint64) (*Workload, error) {
	switch name {
	case "basic":
		return Basic(seed), nil
	case "hard":
		return Hard(seed), nil
	}
	return nil, fmt.Errorf("no workload %q: use basic or hard", name)
}

// Cut keeps the first n steps of each turn (quick trials); facts planted
// in the steps cut away are dropped.
func (w *Workload) Cut(n int) {
	keep := map[string]bool{}
	for ti := range w.Turns {
		t := &w.Turns[ti]
		t.Steps = t.Steps[:min(n, len(t.Steps))]
		for _, s := range t.Steps {
			if s.Path != "" && strings.Contains(w.Files[s.Path], "FACT-") {
				keep[s.Path] = true
			}
		}
	}
	var facts []Fact
	for _, f := range w.Facts {
		if !strings.HasPrefix(f.Where, "step ") {
			facts = append(facts, f)
			continue
		}
		for p := range keep {
			if strings.Contains(w.Files[p], f.Line()) {
				facts = append(facts, f)
				break
			}
		}
	}
	w.Facts = facts
}
