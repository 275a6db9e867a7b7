package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusGroup is one group of testdata/bash_corpus.json: rules and a
// mode, and the decisions expected for command lines under them.
type corpusGroup struct {
	Group    string   `json:"group"`
	Mode     Mode     `json:"mode"`
	Headless bool     `json:"headless"`
	Allow    []string `json:"allow"`
	Ask      []string `json:"ask"`
	Deny     []string `json:"deny"`
	Cases    []struct {
		Command string   `json:"command"`
		Want    Behavior `json:"want"`
		Note    string   `json:"note"`
	} `json:"cases"`
}

// project makes a project folder with a few files, and a home folder
// beside it.
func project(t *testing.T) (proj, home string) {
	t.Helper()
	root := t.TempDir()
	proj, home = filepath.Join(root, "proj"), filepath.Join(root, "home")
	for _, f := range []string{"existing.txt", "src/main.go", ".env", "sub/.env", "log.txt", "empty/.keep"} {
		p := filepath.Join(proj, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	return proj, home
}

func rules(t *testing.T, allow, ask, deny []string, root string) Rules {
	t.Helper()
	parse := func(ss []string) []Rule {
		var out []Rule
		for _, s := range ss {
			r, err := ParseRule(s)
			if err != nil {
				t.Fatal(err)
			}
			r.Source, r.Root = "test", root
			out = append(out, r)
		}
		return out
	}
	return Rules{Allow: parse(allow), Ask: parse(ask), Deny: parse(deny)}
}

func TestBashCorpus(t *testing.T) {
	b, err := os.ReadFile("testdata/bash_corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var groups []corpusGroup
	if err := json.Unmarshal(b, &groups); err != nil {
		t.Fatal(err)
	}
	proj, home := project(t)
	n := 0
	for _, g := range groups {
		rs := rules(t, g.Allow, g.Ask, g.Deny, proj)
		for i, c := range g.Cases {
			n++
			cmd := strings.NewReplacer("{{project}}", proj, "{{home}}", home).Replace(c.Command)
			t.Run(fmt.Sprintf("%s/%d", g.Group, i), func(t *testing.T) {
				in, _ := json.Marshal(map[string]string{"command": cmd})
				ro, de := traits("Bash", in, proj)
				d := Decide(context.Background(), Request{
					Tool: "Bash", Input: in, ReadOnly: ro, Destructive: de, Mode: g.Mode, Rules: rs,
					ProjectDir: proj, Home: home, Headless: g.Headless,
				})
				if os.Getenv("CORPUS_DUMP") != "" {
					t.Logf("%-45q %-5s %s", cmd, d.Behavior, d.Reason)
				}
				if d.Behavior != c.Want {
					t.Errorf("%q: got %s, want %s (%s)\nreason: %s\nrule: %s", cmd, d.Behavior, c.Want, c.Note, d.Reason, d.Rule)
				}
				if d.Reason == "" {
					t.Errorf("%q: no reason", cmd)
				}
			})
		}
	}
	if n < 150 {
		t.Errorf("the corpus has %d cases; keep it at 150 or more", n)
	}
}
