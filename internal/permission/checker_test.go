package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckerSettingsPrecedence(t *testing.T) {
	root := t.TempDir()
	cairnHome, proj, home := filepath.Join(root, "home", ".cairn"), filepath.Join(root, "proj"), filepath.Join(root, "home")
	write(t, filepath.Join(cairnHome, "settings.json"), `{"permissions": {"allow": ["Bash(make:*)"], "defaultMode": "plan"}}`)
	write(t, filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(/secrets/**)"], "defaultMode": "default", "additionalDirectories": ["../shared"]}}`)
	write(t, filepath.Join(proj, ".claude", "settings.local.json"), `{"permissions": {"ask": ["Bash(npm test)"]}}`)
	write(t, filepath.Join(proj, ".cairn", "settings.json"), `{"permissions": {"defaultMode": "acceptEdits", "allow": ["not a rule"]}}`)

	c, err := New(Options{CairnHome: cairnHome, UserHome: home, ProjectDir: proj, AllowedTools: []string{"Bash(go test:*) Bash(go vet:*)"}, DisallowedTools: []string{"WebFetch"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode() != ModeAcceptEdits {
		t.Errorf("mode = %s; .cairn/settings.json's defaultMode should win", c.Mode())
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "not a rule") {
		t.Errorf("warnings = %q, want one about the bad rule", w)
	}
	var got []string
	for _, r := range c.Rules().Allow {
		got = append(got, r.String()+" @"+filepath.Base(r.Source))
	}
	want := []string{"Bash(make:*) @settings.json", "Bash(npm test) @settings.json", "Bash(go test:*) @--allowedTools", "Bash(go vet:*) @--allowedTools"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("allow rules, lowest priority first (-want +got):\n%s", diff)
	}

	ctx := context.Background()
	check := func(tool string, in json.RawMessage, ro bool) Decision {
		return c.Check(ctx, named{tool, ro, false}, in)
	}
	if d := check("Bash", input("command", "make build"), false); d.Behavior != Allow {
		t.Errorf("user rule: %+v", d)
	}
	if d := check("Bash", input("command", "npm test"), false); d.Behavior != Ask {
		t.Errorf("an ask in settings.local.json beats an allow in settings.json: %+v", d)
	}
	if d := check("Bash", input("command", "go vet ./... && go test ./..."), false); d.Behavior != Allow {
		t.Errorf("--allowedTools: %+v", d)
	}
	if d := check("WebFetch", input("url", "https://x.test"), true); d.Behavior != Deny {
		t.Errorf("--disallowedTools: %+v", d)
	}
	if d := check("Read", input("file_path", filepath.Join(proj, "secrets", "k")), true); d.Behavior != Deny || !strings.Contains(d.Reason, ".claude") {
		t.Errorf("/secrets/** is relative to the project of .claude/settings.json: %+v", d)
	}
	if d := check("Write", input("file_path", filepath.Join(root, "shared", "x")), false); d.Behavior != Allow {
		t.Errorf("additionalDirectories relative to the settings file's project, acceptEdits: %+v", d)
	}

	c.SetMode(ModePlan)
	if d := check("Write", input("file_path", "x"), false); d.Behavior != Deny {
		t.Errorf("after SetMode(plan): %+v", d)
	}
}

func TestCheckerFlagModeAndBypassDisabled(t *testing.T) {
	proj := t.TempDir()
	write(t, filepath.Join(proj, ".cairn", "settings.json"), `{"permissions": {"defaultMode": "acceptEdits", "disableBypassPermissionsMode": "disable"}}`)
	c, err := New(Options{ProjectDir: proj, Mode: ModePlan})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode() != ModePlan {
		t.Errorf("--permission-mode should beat defaultMode; got %s", c.Mode())
	}
	if _, err := New(Options{ProjectDir: proj, Mode: ModeBypass}); err == nil || !strings.Contains(err.Error(), "disableBypassPermissionsMode") {
		t.Errorf("bypass while disabled: err = %v", err)
	}
}

// TestCheckerBadSettings: a settings file with errors never stops the
// others, and never allows more than the user wrote: what cannot be read
// is named with its file and line, and a deny or ask rule that cannot be
// read denies or asks for everything it might have been about.
func TestCheckerBadSettings(t *testing.T) {
	ctx := context.Background()
	t.Run("allow of the wrong kind", func(t *testing.T) {
		proj := t.TempDir()
		write(t, filepath.Join(proj, ".claude", "settings.json"), "{\"permissions\": {\n\"allow\": \"Bash\"}}")
		write(t, filepath.Join(proj, ".cairn", "settings.json"), `{"permissions": {"allow": ["Bash(make:*)"]}}`)
		c, err := New(Options{ProjectDir: proj})
		if err != nil {
			t.Fatal(err)
		}
		if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], filepath.Join(".claude", "settings.json")+" is not valid at line 2") {
			t.Errorf("warnings = %q, want one naming the file and line", w)
		}
		if d := c.Check(ctx, named{"Bash", false, false}, input("command", "make")); d.Behavior != Allow {
			t.Errorf("the other file's rule: %+v", d)
		}
	})
	t.Run("invalid JSON without restrictions", func(t *testing.T) {
		proj := t.TempDir()
		write(t, filepath.Join(proj, ".claude", "settings.local.json"), "{\"permissions\": {\"allow\": [\n\"Bash(npm test)\",\n]}}")
		write(t, filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(make:*)"]}}`)
		c, err := New(Options{ProjectDir: proj})
		if err != nil {
			t.Fatal(err)
		}
		if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "settings.local.json is not valid at line 3, column 1") || !strings.Contains(w[0], "ignored until it is fixed") {
			t.Errorf("warnings = %q", w)
		}
		if d := c.Check(ctx, named{"Bash", false, true}, input("command", "rm -rf x")); d.Behavior != Deny || !strings.Contains(d.Reason, "settings.json line 1") {
			t.Errorf("the good file's deny rule: %+v", d)
		}
	})
	t.Run("invalid JSON that may hold deny rules", func(t *testing.T) {
		proj := t.TempDir()
		write(t, filepath.Join(proj, ".claude", "settings.json"), "{\"permissions\": {\n\"deny\": [\"Bash(rm:*)\"\n\"Read(./.env)\"]}}")
		_, err := New(Options{ProjectDir: proj})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(".claude", "settings.json")+" is not valid at line 3, column 1") || !strings.Contains(err.Error(), "fix the file") {
			t.Errorf("err = %v, want one naming the file and line and saying to fix it", err)
		}
	})
	t.Run("broken rules", func(t *testing.T) {
		proj := t.TempDir()
		write(t, filepath.Join(proj, ".cairn", "settings.json"), `{"permissions": {
  "allow": ["Bash(git status", "Bash(ls:*)", "Read"],
  "deny": ["Bash(rm -rf:*"],
  "ask": ["Web Fetch"]
}}`)
		c, err := New(Options{ProjectDir: proj})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			`settings.json line 2: permission rule "Bash(git status" has no closing parenthesis; write Tool or Tool(specifier); the rule is ignored until it is fixed`,
			`settings.json line 4: permission rule "Web Fetch" does not start with a tool name`,
			`until it is fixed, this ask rule asks before every call of every tool`,
			`settings.json line 3: permission rule "Bash(rm -rf:*" has no closing parenthesis; write Tool or Tool(specifier); until it is fixed, this deny rule denies every Bash call`,
		}
		all := strings.Join(c.Warnings(), "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("warnings lack %q:\n%s", w, all)
			}
		}
		// The broken deny rule denies every command, even an allowed one;
		// the broken ask rule asks before everything else.
		if d := c.Check(ctx, named{"Bash", true, false}, input("command", "ls")); d.Behavior != Deny || !strings.Contains(d.Reason, "cannot be read") || !strings.Contains(d.Reason, "line 3") {
			t.Errorf("ls under a broken deny rule: %+v", d)
		}
		if d := c.Check(ctx, named{"Read", true, false}, input("file_path", filepath.Join(proj, "a"))); d.Behavior != Ask || !strings.Contains(d.Reason, "Web Fetch") {
			t.Errorf("Read under a broken ask rule for every tool: %+v", d)
		}
	})
}

// FuzzDecide checks that no Bash line panics the decision and that every
// decision carries a reason.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"git status; rm -rf ~", "cd .. && cat x > /etc/y", "$(x) | sh", "find / -exec rm {} +", "echo ${a:-$(b)}"} {
		f.Add(s)
	}
	proj := f.TempDir()
	rs := Rules{Allow: []Rule{{Tool: "Bash", Specifier: "git status:*"}, {Tool: "Bash", Specifier: "git * main"}}, Deny: []Rule{{Tool: "Bash", Specifier: "rm:*"}, {Tool: "Read", Specifier: ".env"}}}
	f.Fuzz(func(t *testing.T, line string) {
		in, _ := json.Marshal(map[string]string{"command": line})
		for _, m := range []Mode{ModeDefault, ModePlan, ModeBypass} {
			d := Decide(context.Background(), Request{Tool: "Bash", Input: in, Mode: m, Rules: rs, ProjectDir: proj, Home: "/home/x"})
			if d.Reason == "" || (d.Behavior != Allow && d.Behavior != Ask && d.Behavior != Deny) {
				t.Fatalf("%q in %s: %+v", line, m, d)
			}
		}
	})
}

// A grant allows its rules until it ends; a deny rule still wins over
// it; two grants end separately; a rule that does not parse is named
// and left out.
func TestCheckerGrant(t *testing.T) {
	proj := t.TempDir()
	write(t, filepath.Join(proj, ".claude", "settings.json"), `{"permissions": {"deny": ["Bash(git push:*)"]}}`)
	c, err := New(Options{ProjectDir: proj, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	decide := func(cmd string) Behavior {
		return c.Check(ctx, named{"Bash", false, false}, input("command", cmd)).Behavior
	}
	if b := decide("git commit -m x"); b == Allow {
		t.Fatalf("before any grant: %s, want a refusal", b)
	}
	end, err := c.Grant("/p/.claude/commands/ci.md", []string{"Bash(git commit:*)", "Bash(git push:*)"})
	if err != nil {
		t.Fatal(err)
	}
	end2, err := c.Grant("second", []string{"Bash(make:*) Bash(((", "Edit"})
	if err == nil || !strings.Contains(err.Error(), `"Bash((("`) || !strings.Contains(err.Error(), "second") {
		t.Errorf("a bad rule: err = %v, want it named with its source", err)
	}
	d := c.Check(ctx, named{"Bash", false, false}, input("command", "git commit -m x"))
	if d.Behavior != Allow || d.Rule != "Bash(git commit:*)" {
		t.Errorf("granted: %+v", d)
	}
	if b := decide("git push origin main"); b != Deny {
		t.Errorf("a deny rule beats a grant: %s", b)
	}
	if b := decide("make all"); b != Allow {
		t.Errorf("second grant: %s", b)
	}
	hasRule := func(text string) bool {
		for _, r := range c.Rules().Allow {
			if r.String() == text {
				return true
			}
		}
		return false
	}
	if !hasRule("Bash(git commit:*)") {
		t.Error("Rules() (what /permissions lists) leaves out a grant in force")
	}
	end()
	end() // again: nothing more
	if hasRule("Bash(git commit:*)") {
		t.Error("Rules() still lists a grant that ended")
	}
	if b := decide("git commit -m x"); b == Allow {
		t.Errorf("after the grant ended: %s", b)
	}
	if b := decide("make all"); b != Allow {
		t.Errorf("the second grant ended with the first: %s", b)
	}
	end2()
	if b := decide("make all"); b == Allow {
		t.Errorf("after both ended: %s", b)
	}
}
