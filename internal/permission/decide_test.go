package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

func input(kv ...string) json.RawMessage {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

func TestToolDecisions(t *testing.T) {
	proj, home := project(t)
	other := filepath.Join(filepath.Dir(proj), "other")
	for _, tc := range []struct {
		name             string
		tool             string
		in               json.RawMessage
		ro, de           bool
		mode             Mode
		allow, ask, deny []string
		dirs             []string
		want             Behavior
		wantRule         string
	}{
		// Read rules and the default mode.
		{name: "read inside the project", tool: "Read", in: input("file_path", proj+"/src/main.go"), ro: true, want: Allow},
		{name: "relative read", tool: "Read", in: input("file_path", "src/main.go"), ro: true, want: Allow},
		{name: "read outside asks", tool: "Read", in: input("file_path", "/etc/passwd"), ro: true, want: Ask},
		{name: "read via .. asks", tool: "Read", in: input("file_path", proj+"/../x"), ro: true, want: Ask},
		{name: "read in additional dir", tool: "Read", in: input("file_path", other+"/a"), ro: true, dirs: []string{other}, want: Allow},
		{name: "deny ./.env", tool: "Read", in: input("file_path", ".env"), ro: true, deny: []string{"Read(./.env)"}, want: Deny, wantRule: "Read(./.env)"},
		{name: "deny *.env any depth", tool: "Read", in: input("file_path", proj+"/sub/.env"), ro: true, deny: []string{"Read(.env)"}, want: Deny, wantRule: "Read(.env)"},
		{name: "deny /src/** relative to settings", tool: "Read", in: input("file_path", proj+"/src/main.go"), ro: true, deny: []string{"Read(/src/**)"}, want: Deny, wantRule: "Read(/src/**)"},
		{name: "deny folder covers contents", tool: "Read", in: input("file_path", proj+"/sub/.env"), ro: true, deny: []string{"Read(sub/)"}, want: Deny, wantRule: "Read(sub/)"},
		{name: "deny ~/secrets", tool: "Read", in: input("file_path", home+"/secrets/k"), ro: true, deny: []string{"Read(~/secrets/**)"}, want: Deny, wantRule: "Read(~/secrets/**)"},
		{name: "allow //abs", tool: "Read", in: input("file_path", "/etc/hosts"), ro: true, allow: []string{"Read(//etc/**)"}, want: Allow, wantRule: "Read(//etc/**)"},
		{name: "Read rule covers Grep", tool: "Grep", in: input("pattern", "x", "path", "/var/log"), ro: true, allow: []string{"Read(//var/log/**)"}, want: Allow, wantRule: "Read(//var/log/**)"},
		{name: "Read deny covers Glob", tool: "Glob", in: input("pattern", "*", "path", "src"), ro: true, deny: []string{"Read(./src/**)"}, want: Deny, wantRule: "Read(./src/**)"},
		{name: "Grep defaults to cwd", tool: "Grep", in: input("pattern", "x"), ro: true, want: Allow},

		// Edit rules and modes.
		{name: "edit asks in default", tool: "Edit", in: input("file_path", "src/main.go"), want: Ask},
		{name: "edit allowed in acceptEdits", tool: "Edit", in: input("file_path", "src/main.go"), mode: ModeAcceptEdits, want: Allow},
		{name: "write allowed in acceptEdits", tool: "Write", in: input("file_path", "new.go"), mode: ModeAcceptEdits, want: Allow},
		{name: "write outside asks in acceptEdits", tool: "Write", in: input("file_path", "/tmp/x.go"), mode: ModeAcceptEdits, want: Ask},
		{name: "write in additional dir in acceptEdits", tool: "Write", in: input("file_path", other+"/x.go"), mode: ModeAcceptEdits, dirs: []string{other}, want: Allow},
		{name: "Edit rule covers Write", tool: "Write", in: input("file_path", "docs/a.md"), allow: []string{"Edit(docs/**)"}, want: Allow, wantRule: "Edit(docs/**)"},
		{name: "Edit rule covers MultiEdit", tool: "MultiEdit", in: input("file_path", proj+"/docs/a.md"), allow: []string{"Edit(/docs/**)"}, want: Allow, wantRule: "Edit(/docs/**)"},
		{name: "Edit deny beats acceptEdits", tool: "Edit", in: input("file_path", "src/main.go"), mode: ModeAcceptEdits, deny: []string{"Edit(src/**)"}, want: Deny, wantRule: "Edit(src/**)"},
		{name: "Edit allow outside project", tool: "Edit", in: input("file_path", "/tmp/scratch/a"), allow: []string{"Edit(//tmp/scratch/**)"}, want: Allow, wantRule: "Edit(//tmp/scratch/**)"},
		{name: "Read rule does not cover Edit", tool: "Edit", in: input("file_path", "a"), allow: []string{"Read"}, want: Ask},
		{name: "destructive asks", tool: "Write", in: input("file_path", "a"), de: true, mode: ModeAcceptEdits, want: Ask},
		{name: "plan denies edits", tool: "Edit", in: input("file_path", "a"), mode: ModePlan, allow: []string{"Edit"}, want: Deny},
		{name: "plan allows reads", tool: "Read", in: input("file_path", "a"), ro: true, mode: ModePlan, want: Allow},
		{name: "bypass allows", tool: "Write", in: input("file_path", "/etc/x"), mode: ModeBypass, want: Allow},
		{name: "bypass obeys deny", tool: "Write", in: input("file_path", "/etc/x"), mode: ModeBypass, deny: []string{"Edit(//etc/**)"}, want: Deny, wantRule: "Edit(//etc/**)"},
		{name: "bypass ignores ask", tool: "Write", in: input("file_path", "a"), mode: ModeBypass, ask: []string{"Write"}, want: Allow},

		// Priority: deny beats ask beats allow, whatever the order.
		{name: "deny beats allow", tool: "Edit", in: input("file_path", "a"), allow: []string{"Edit"}, deny: []string{"Edit"}, want: Deny, wantRule: "Edit"},
		{name: "ask beats allow", tool: "Edit", in: input("file_path", "a"), allow: []string{"Edit(a)"}, ask: []string{"Edit"}, want: Ask, wantRule: "Edit"},
		{name: "specific allow cannot undo broad deny", tool: "Bash", in: input("command", "aws s3 ls"), allow: []string{"Bash(aws s3 ls)"}, deny: []string{"Bash(aws *)"}, want: Deny, wantRule: "Bash(aws *)"},

		// WebFetch, MCP, other tools.
		{name: "webfetch asks", tool: "WebFetch", in: input("url", "https://example.com/x"), ro: true, want: Ask},
		{name: "webfetch domain", tool: "WebFetch", in: input("url", "https://example.com/x"), ro: true, allow: []string{"WebFetch(domain:example.com)"}, want: Allow, wantRule: "WebFetch(domain:example.com)"},
		{name: "webfetch domain is exact", tool: "WebFetch", in: input("url", "https://docs.example.com/x"), ro: true, allow: []string{"WebFetch(domain:example.com)"}, want: Ask},
		{name: "webfetch subdomain wildcard", tool: "WebFetch", in: input("url", "https://a.b.example.com/"), ro: true, allow: []string{"WebFetch(domain:*.example.com)"}, want: Allow, wantRule: "WebFetch(domain:*.example.com)"},
		{name: "webfetch wildcard is not the apex", tool: "WebFetch", in: input("url", "https://notexample.com/"), ro: true, allow: []string{"WebFetch(domain:*.example.com)"}, want: Ask},
		{name: "webfetch deny", tool: "WebFetch", in: input("url", "http://evil.test/"), ro: true, allow: []string{"WebFetch"}, deny: []string{"WebFetch(domain:evil.test)"}, want: Deny, wantRule: "WebFetch(domain:evil.test)"},
		{name: "mcp asks", tool: "mcp__github__create_issue", in: input(), want: Ask},
		{name: "mcp tool rule", tool: "mcp__github__create_issue", in: input(), allow: []string{"mcp__github__create_issue"}, want: Allow, wantRule: "mcp__github__create_issue"},
		{name: "mcp server rule", tool: "mcp__github__create_issue", in: input(), allow: []string{"mcp__github"}, want: Allow, wantRule: "mcp__github"},
		{name: "mcp server wildcard", tool: "mcp__github__get_me", in: input(), allow: []string{"mcp__github__get_*"}, want: Allow, wantRule: "mcp__github__get_*"},
		{name: "mcp other server", tool: "mcp__gitlab__x", in: input(), allow: []string{"mcp__github"}, want: Ask},
		{name: "mcp deny", tool: "mcp__db__drop", in: input(), allow: []string{"mcp__db"}, deny: []string{"mcp__db__drop"}, want: Deny, wantRule: "mcp__db__drop"},
		{name: "task specifier", tool: "Task", in: input("subagent_type", "Explore", "prompt", "x"), allow: []string{"Task(Explore)"}, want: Allow, wantRule: "Task(Explore)"},
		{name: "task allowed", tool: "Task", in: input("subagent_type", "general-purpose", "prompt", "x"), want: Allow},
		{name: "task allowed in plan mode", tool: "Task", in: input("subagent_type", "general-purpose", "prompt", "x"), mode: ModePlan, want: Allow},
		{name: "task deny specifier", tool: "Task", in: input("subagent_type", "reviewer", "prompt", "x"), deny: []string{"Task(reviewer)"}, want: Deny, wantRule: "Task(reviewer)"},
		{name: "task deny default type", tool: "Task", in: input("prompt", "x"), deny: []string{"Task(general-purpose)"}, want: Deny, wantRule: "Task(general-purpose)"},
		{name: "task specifier is the type only", tool: "Task", in: input("subagent_type", "general-purpose", "description", "reviewer"), deny: []string{"Task(reviewer)"}, want: Allow},
		{name: "task ask rule", tool: "Task", in: input("subagent_type", "general-purpose", "prompt", "x"), ask: []string{"Task"}, want: Ask, wantRule: "Task"},
		{name: "read-only tool allowed", tool: "TodoWrite", in: input(), ro: true, want: Allow},
		{name: "unknown tool asks", tool: "Deploy", in: input(), want: Ask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := rules(t, tc.allow, tc.ask, tc.deny, proj)
			d := Decide(context.Background(), Request{
				Tool: tc.tool, Input: tc.in, ReadOnly: tc.ro, Destructive: tc.de, Paths: pathsOf(tc.tool, tc.in), Mode: tc.mode, Rules: rs,
				ProjectDir: proj, AdditionalDirectories: tc.dirs, Home: home,
			})
			got := [2]string{string(d.Behavior), d.Rule}
			if diff := cmp.Diff([2]string{string(tc.want), tc.wantRule}, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s\nreason: %s", diff, d.Reason)
			}
		})
	}
}

func TestSymlinkOutOfProject(t *testing.T) {
	proj, _ := project(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(proj, "link")); err != nil {
		t.Skip("no symlinks:", err)
	}
	d := Decide(context.Background(), Request{Tool: "Write", Input: input("file_path", "link/x"), Paths: pathsOf("Write", input("file_path", "link/x")), Mode: ModeAcceptEdits, ProjectDir: proj})
	if d.Behavior != Ask {
		t.Errorf("a write through a link out of the project: got %s, want ask (%s)", d.Behavior, d.Reason)
	}
}

func TestHeadlessReason(t *testing.T) {
	proj, home := project(t)
	for _, tc := range []struct {
		tool string
		in   json.RawMessage
		want []string
	}{
		{"Bash", input("command", "rm -rf build"), []string{"Permission to run `rm -rf build` was not granted: headless mode cannot ask.", "Add Bash(rm -rf build) to permissions.allow in .cairn/settings.json", "--permission-mode"}},
		{"Edit", input("file_path", "src/main.go"), []string{"was not granted: headless mode cannot ask", "Edit(/src/main.go)", "--permission-mode acceptEdits"}},
		{"WebFetch", input("url", "https://go.dev/doc"), []string{"WebFetch(domain:go.dev)"}},
	} {
		d := Decide(context.Background(), Request{Tool: tc.tool, Input: tc.in, ReadOnly: tc.tool == "WebFetch", Paths: pathsOf(tc.tool, tc.in), ProjectDir: proj, Home: home, Headless: true})
		if d.Behavior != Deny {
			t.Errorf("%s %s: got %s, want deny", tc.tool, tc.in, d.Behavior)
		}
		for _, w := range tc.want {
			if !strings.Contains(d.Reason, w) {
				t.Errorf("%s reason %q lacks %q", tc.tool, d.Reason, w)
			}
		}
	}
}

func TestCancelledDenies(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := Decide(ctx, Request{Tool: "Read", ReadOnly: true}); d.Behavior != Deny {
		t.Errorf("cancelled: got %s", d.Behavior)
	}
}

func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		d    Decision
		want Record
	}{
		{Decision{Allow, "ok", "Bash(ls)"}, Record{Decision: Allow, By: "rule", Rule: "Bash(ls)", Reason: "ok", Mode: ModeDefault}},
		{Decision{Allow, "read-only", ""}, Record{Decision: Allow, By: "mode", Reason: "read-only", Mode: ModeDefault}},
		{Decision{Deny, "Permission to run `x` was not granted: headless mode cannot ask.", ""}, Record{Decision: Deny, By: "headless", Reason: "Permission to run `x` was not granted: headless mode cannot ask.", Mode: ModeDefault}},
	} {
		if diff := cmp.Diff(tc.want, tc.d.Record(ModeDefault)); diff != "" {
			t.Errorf("Record (-want +got):\n%s", diff)
		}
	}
	got := Decision{Ask, "asks", ""}.Answered(ModeDefault, true)
	if got.Decision != Allow || got.By != "user" {
		t.Errorf("Answered = %+v", got)
	}
	b, _ := json.Marshal(Decision{Allow, "r", ""})
	if string(b) != `{"decision":"allow","reason":"r","rule":""}` {
		t.Errorf("Decision JSON = %s", b)
	}
}

// TestEveryPathDecided: a call that touches several paths is decided on
// each, and the strictest answer wins; whatever the tool is called, what
// it says it does to each path decides which rules cover it.
func TestEveryPathDecided(t *testing.T) {
	proj, home := project(t)
	w := func(p string) tool.PathUse { return tool.PathUse{Path: p, Write: true} }
	r := func(p string) tool.PathUse { return tool.PathUse{Path: p} }
	for _, tc := range []struct {
		name             string
		paths            []tool.PathUse
		allow, ask, deny []string
		mode             Mode
		want             Behavior
		wantRule         string
	}{
		{name: "one allowed write", paths: []tool.PathUse{w("docs/a.md")}, allow: []string{"Edit(docs/**)"}, want: Allow, wantRule: "Edit(docs/**)"},
		{name: "a second write outside the rule asks", paths: []tool.PathUse{w("docs/a.md"), w("src/b.go")}, allow: []string{"Edit(docs/**)"}, want: Ask},
		{name: "a read the rules deny denies", paths: []tool.PathUse{w("docs/a.md"), r(".env")}, allow: []string{"Edit(docs/**)"}, deny: []string{"Read(./.env)"}, want: Deny, wantRule: "Read(./.env)"},
		{name: "a read inside the project is fine", paths: []tool.PathUse{r("src/main.go"), w("docs/a.md")}, allow: []string{"Edit(docs/**)"}, want: Allow, wantRule: "Edit(docs/**)"},
		{name: "acceptEdits covers both writes inside", paths: []tool.PathUse{w("a"), w("b")}, mode: ModeAcceptEdits, want: Allow},
		{name: "acceptEdits asks for a write outside", paths: []tool.PathUse{w("a"), w("/etc/b")}, mode: ModeAcceptEdits, want: Ask},
		{name: "Edit rule does not cover a read", paths: []tool.PathUse{r("/etc/hosts")}, allow: []string{"Edit(//etc/**)"}, want: Ask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(context.Background(), Request{Tool: "Move", Input: input(), Paths: tc.paths, Mode: tc.mode,
				Rules: rules(t, tc.allow, tc.ask, tc.deny, proj), ProjectDir: proj, Home: home})
			if got := [2]string{string(d.Behavior), d.Rule}; got != [2]string{string(tc.want), tc.wantRule} {
				t.Errorf("decision %v, want %s %q (%s)", got, tc.want, tc.wantRule, d.Reason)
			}
		})
	}
}

// TestEveryPathConstrained: the path constraints apply to every path a
// call touches, not only the one it is described by: a rule for the
// whole of Edit or Read does not let a call's second path write outside
// the project or read a secret there, and the explanation names that
// path.
func TestEveryPathConstrained(t *testing.T) {
	proj, home := project(t)
	w := func(p string) tool.PathUse { return tool.PathUse{Path: p, Write: true} }
	r := func(p string) tool.PathUse { return tool.PathUse{Path: p} }
	secret := filepath.Join(home, ".ssh", "id_rsa")
	for _, tc := range []struct {
		name     string
		paths    []tool.PathUse
		allow    []string
		want     Behavior
		wantPath *PathCheck
	}{
		{name: "both writes inside", paths: []tool.PathUse{w("a"), w("b")}, allow: []string{"Edit"}, want: Allow},
		{name: "a second write outside", paths: []tool.PathUse{w("a"), w("/etc/b")}, allow: []string{"Edit"}, want: Ask,
			wantPath: &PathCheck{Path: "/etc/b", Command: "Move", Access: "write", AllowWith: "Edit(//etc/b)"}},
		{name: "a first write outside", paths: []tool.PathUse{w("/etc/b"), w("a")}, allow: []string{"Edit"}, want: Ask,
			wantPath: &PathCheck{Path: "/etc/b", Command: "Move", Access: "write", AllowWith: "Edit(//etc/b)"}},
		{name: "a secret read besides", paths: []tool.PathUse{r("src/main.go"), r(secret)}, allow: []string{"Read"}, want: Ask,
			wantPath: &PathCheck{Path: secret, Command: "Move", Access: "read", AllowWith: "Read(/" + secret + ")"}},
		{name: "a secret read besides a write", paths: []tool.PathUse{w("a"), r(secret)}, allow: []string{"Edit", "Read"}, want: Ask,
			wantPath: &PathCheck{Path: secret, Command: "Move", Access: "read", AllowWith: "Read(/" + secret + ")"}},
		{name: "a rule naming the place", paths: []tool.PathUse{w("a"), w("/etc/b")}, allow: []string{"Edit(//etc/**)", "Edit"}, want: Allow},
		{name: "a rule naming the place after the whole tool's", paths: []tool.PathUse{w("a"), w("/etc/b")}, allow: []string{"Edit", "Edit(//etc/**)"}, want: Allow},
		{name: "a rule naming the secret after the whole tool's", paths: []tool.PathUse{r(secret)}, allow: []string{"Read", "Read(/" + secret + ")"}, want: Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, pc := Explain(context.Background(), Request{Tool: "Move", Input: input(), Paths: tc.paths,
				Rules: rules(t, tc.allow, nil, nil, proj), ProjectDir: proj, Home: home})
			if d.Behavior != tc.want {
				t.Errorf("decision %s, want %s (%s)", d.Behavior, tc.want, d.Reason)
			}
			if pc != nil {
				pc.Outside = nil // the roots, checked by the path corpus
			}
			if diff := cmp.Diff(tc.wantPath, pc); diff != "" {
				t.Errorf("path check (-want +got):\n%s", diff)
			}
		})
	}
}
