package permission

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cairn-dev/cairn/internal/shellsafe"
)

// badLines are command lines cairn cannot follow: they must ask (or be
// denied headless) with the reason, under any rule, and be decided at
// once.
var badLines = map[string]string{
	"unparsable":          "echo 'unterminated",
	"unparsable compound": "git status && (",
	"over 1 MB":           strings.Repeat("echo a; ", 1<<17+8),
	"1 MB of commands":    strings.Repeat("echo a; ", 1<<17)[:1<<20-16],
	"nested $(":           strings.Repeat("$(", 5000) + "echo" + strings.Repeat(")", 5000),
	"nested quoted $(":    strings.Repeat(`"$(`, 3000) + "echo" + strings.Repeat(`)"`, 3000),
	"nested braces":       strings.Repeat("{ ", 1000) + "echo" + strings.Repeat("; }", 1000),
	"nested subshells":    strings.Repeat("(", 10000) + "echo" + strings.Repeat(")", 10000),
	"NUL byte":            "git status\x00; rm -rf ~",
	"NUL in a word":       "echo a\x00b",
	"thousands of cd":     strings.Repeat("cd a; ", 50000) + "touch x",
}

func TestBadInput(t *testing.T) {
	proj, home, _ := pathSetup(t)
	for _, allow := range [][]string{{"Bash(echo:*)", "Bash(git status:*)", "Bash(cd:*)", "Bash(touch:*)"}, {"Bash"}} {
		rs := rules(t, allow, nil, nil, proj).Compile()
		for name, line := range badLines {
			for _, headless := range []bool{false, true} {
				d, _ := decideIn(proj, home, rs, ModeDefault, headless, nil, "Bash", bashInput(line))
				want := Ask
				if headless {
					want = Deny
				}
				if d.Behavior != want || d.Reason == "" {
					t.Errorf("%s under %v (headless %v): got %s, want %s: %.300s", name, allow, headless, d.Behavior, want, d.Reason)
				}
				if len(d.Reason) > 2000 {
					t.Errorf("%s: a reason of %d bytes; it quotes too much of the line", name, len(d.Reason))
				}
			}
		}
	}
}

// FuzzDecideBash: whatever the line, the decision has a reason, and a
// line that cannot be read as a whole is never allowed, not even by a
// rule for every Bash command.
//
//	go test -run '^$' -fuzz FuzzDecideBash -fuzztime 1m ./internal/permission/
func FuzzDecideBash(f *testing.F) {
	for _, s := range []string{"cd .. && touch x", "touch ~/.profile", "cp a ~/.ssh/x", "cd $OLDPWD; touch x",
		"echo x > /tmp/y", "git -C .. commit", "tar -C / -xf a", "ln -s /etc e && echo > e/x", "x\x00y", "$(", "((((", "cd -",
		"sed 's/a/b/w /tmp/x' f", "sed -n '/x/,/y/{W o\n}' f", "sed 'y/abc/xyz/;e id' f", "tar -xPf a", "tar --ext --to-command=x -f a",
		"git --git-dir /tmp x", "git -c core.pager=x log", "find -L / -exec rm {} \\;", "cp --targ /tmp a", "chmod -w /etc/x",
		`awk '{print > "/tmp/x"}' f`, `awk 'BEGIN{getline < "/etc/shadow"}'`} {
		f.Add(s)
	}
	for _, s := range badLines {
		if len(s) < 4096 {
			f.Add(s)
		}
	}
	root := f.TempDir()
	proj, home := root+"/proj", root+"/home"
	write(f, proj+"/README.md", "x\n")
	write(f, home+"/.bashrc", "x\n")
	p := Rules{}
	for _, r := range []string{"Bash(touch:*)", "Bash(cp:*)", "Bash(cd:*)", "Bash(echo:*)"} {
		rule, _ := ParseRule(r)
		p.Allow = append(p.Allow, rule)
	}
	whole, _ := ParseRule("Bash")
	sets := []Rules{p.Compile(), {Allow: []Rule{whole}}}
	sedRule, _ := ParseRule("Bash(sed:*)")
	sets = append(sets, Rules{Allow: []Rule{sedRule}}.Compile())
	f.Fuzz(func(t *testing.T, line string) {
		if strings.TrimSpace(line) == "" {
			return
		}
		// The line as the check gets it, through JSON (which replaces
		// invalid UTF-8).
		in := bashInput(line)
		var sent struct{ Command string }
		_ = json.Unmarshal(in, &sent)
		unreadable := len(shellsafe.Parse(sent.Command).Whole) > 0
		for _, rs := range sets {
			d, _ := decideIn(proj, home, rs, ModeDefault, false, nil, "Bash", in)
			if d.Reason == "" {
				t.Fatalf("%q: %s without a reason", line, d.Behavior)
			}
			if unreadable && d.Behavior == Allow {
				t.Fatalf("%q cannot be read but is allowed: %s", line, d.Reason)
			}
			if !unreadable {
				continue
			}
			// Headless, what would ask is denied, with the reason.
			if d, _ := decideIn(proj, home, rs, ModeDefault, true, nil, "Bash", in); d.Behavior != Deny || d.Reason == "" {
				t.Fatalf("%q cannot be read; headless it is %s (%s), want deny", line, d.Behavior, d.Reason)
			}
		}
	})
}

// FuzzSedScript: the sed script reader ends on any script (it always
// moves on), never panics, and names only files the script spells out
// after a file command.
//
//	go test -run '^$' -fuzz FuzzSedScript -fuzztime 30s ./internal/permission/
func FuzzSedScript(f *testing.F) {
	for _, s := range []string{"s/a/b/w /tmp/x", "1,5p;$d", "/x/,/y/{W o\n}", "y/abc/xyz/", "e id", "\\cxcp", "s/a/b/gIpe", "a\\\ntext", ":l;N;bl", "s", "y/", "/", "#n\np"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		writes, reads, _ := sedScript(script)
		// The files it names are in the script, after a w, W, r or R.
		for _, f := range append(writes, reads...) {
			if !strings.Contains(script, f) {
				t.Fatalf("%q: file %q is not in the script", script, f)
			}
		}
		if !strings.ContainsAny(script, "wWrR") && len(writes)+len(reads) > 0 {
			t.Fatalf("%q has no w, W, r or R command, yet names files %q %q", script, writes, reads)
		}
	})
}

// FuzzAwkProgram: the awk program reader ends on any program, never
// panics, and names only files the program spells out as strings.
//
//	go test -run '^$' -fuzz FuzzAwkProgram -fuzztime 30s ./internal/permission/
func FuzzAwkProgram(f *testing.F) {
	for _, s := range []string{`BEGIN{print 1 > "/tmp/x"}`, `{print >> "log"}`, `{print $1 > f}`, `BEGIN{system("id")}`,
		`{print | "sh"}`, `BEGIN{while ((getline l < "x") > 0) print l}`, `$3 > 100 {print $1}`, `"`, `print >`, `getline <`, `# c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prog string) {
		writes, reads, _ := awkProgram(prog)
		for _, f := range append(writes, reads...) {
			if !strings.Contains(prog, `"`) {
				t.Fatalf("%q names file %q without a string", prog, f)
			}
		}
		if !strings.Contains(prog, "print") && len(writes) > 0 {
			t.Fatalf("%q writes %q without a print", prog, writes)
		}
	})
}
