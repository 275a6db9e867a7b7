package shellsafe

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flat is a command as tests describe it: its words, and how it is
// reached (">" for each wrapper level, "$" inside a substitution).
func flat(s *Script) []string {
	var out []string
	var add func(cs []*Command, prefix string)
	add = func(cs []*Command, prefix string) {
		for _, c := range cs {
			p := prefix
			if c.InSubst {
				p += "$"
			}
			line := p + strings.Join(c.Argv(), " ")
			if c.OpenArgs {
				line += " …"
			}
			if c.Dynamic {
				line += " [dynamic]"
			}
			out = append(out, line)
			add(c.Inner, prefix+">")
		}
	}
	add(s.Commands, "")
	return out
}

func TestParseCommands(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
		dynamic   bool
	}{
		{name: "simple", src: "git status", want: []string{"git status"}},
		{name: "and or seq", src: "a && b || c; d", want: []string{"a", "b", "c", "d"}},
		{name: "pipe", src: "cat x | grep y | wc -l", want: []string{"cat x", "grep y", "wc -l"}},
		{name: "subshell and block", src: "(cd sub && make); { ls; pwd; }", want: []string{"cd sub", "make", "ls", "pwd"}},
		{name: "command substitution", src: "echo $(date) `whoami`", want: []string{"$date", "$whoami", "echo $(date) `whoami`"}, dynamic: true},
		{name: "process substitution", src: "diff <(ls a) <(ls b)", want: []string{"$ls a", "$ls b", "diff <(ls a) <(ls b)"}},
		{name: "nested substitution in assignment", src: "x=$(curl -s u | sh)", want: []string{"$curl -s u", "$sh [dynamic]"}, dynamic: true},
		{name: "substitution in heredoc", src: "cat <<EOF\n$(rm -rf x)\nEOF", want: []string{"$rm -rf x", "cat"}},
		{name: "if for while case", src: "if test -f a; then rm a; elif b; then c; else d; fi; for i in 1 2; do echo $i; done; while read l; do e; done; case $x in a) f;; esac",
			want: []string{"test -f a", "rm a", "b", "c", "d", "echo $i", "read l", "e", "f"}, dynamic: true},
		{name: "function body", src: "f() { rm -rf /; }; f", want: []string{"rm -rf /", "f"}},
		{name: "quoting tricks", src: `'git' "status"; g\it log; $'\x72\155' -rf x; "r"m y`, want: []string{"git status", "git log", "rm -rf x", "rm y"}},
		{name: "brace expansion", src: "{rm,-rf,/}", want: []string{"rm -rf /"}},
		{name: "newlines and comments", src: "ls\n# rm -rf /\npwd # ; rm x", want: []string{"ls", "pwd"}},
		{name: "line continuation", src: "ls \\\n  -la", want: []string{"ls -la"}},
		{name: "env assignment prefix", src: "FOO=1 BAR=2 rm -rf /", want: []string{"rm -rf /"}},
		{name: "sudo", src: "sudo -u root rm -rf /", want: []string{"sudo -u root rm -rf /", ">rm -rf /"}},
		{name: "wrapper chain", src: "nohup nice -n 5 timeout -s KILL 10 stdbuf -oL make test", want: []string{
			"nohup nice -n 5 timeout -s KILL 10 stdbuf -oL make test", ">nice -n 5 timeout -s KILL 10 stdbuf -oL make test",
			">>timeout -s KILL 10 stdbuf -oL make test", ">>>stdbuf -oL make test", ">>>>make test"}},
		{name: "env with options", src: "env -i -u HOME A=1 git status", want: []string{"env -i -u HOME A=1 git status", ">git status"}},
		{name: "env alone prints", src: "env", want: []string{"env"}},
		{name: "command builtin exec", src: "command rm a; builtin cd b; exec rm c; command -v ls",
			want: []string{"command rm a", ">rm a", "builtin cd b", ">cd b", "exec rm c", ">rm c", "command -v ls"}},
		{name: "xargs", src: "find . -name '*.o' | xargs -0 -n 1 rm -f", want: []string{"find . -name *.o", "xargs -0 -n 1 rm -f", ">rm -f …"}},
		{name: "xargs default echo", src: "ls | xargs", want: []string{"ls", "xargs", ">echo …"}},
		{name: "find exec", src: `find . -type f -exec chmod 644 {} \; -execdir rm {} +`, want: []string{"find . -type f -exec chmod 644 {} ; -execdir rm {} +", ">chmod 644 {}", ">rm {} …"}},
		{name: "sh -c literal", src: `bash -c 'cd /; rm -rf *'`, want: []string{"bash -c cd /; rm -rf *", ">cd /", ">rm -rf *"}},
		{name: "sh -lc combined flags", src: `sh -lc "npm test"`, want: []string{"sh -lc npm test", ">npm test"}},
		{name: "sh -c dynamic", src: `sh -c "$CMD"`, want: []string{`sh -c "$CMD" [dynamic]`}, dynamic: true},
		{name: "eval literal", src: `eval "ls; rm x"`, want: []string{"eval ls; rm x", ">ls", ">rm x"}},
		{name: "eval dynamic", src: `eval "$X"`, want: []string{`eval "$X" [dynamic]`}, dynamic: true},
		{name: "shell reads heredoc", src: "bash <<'EOF'\nrm -rf /\nEOF", want: []string{"bash", ">rm -rf /"}},
		{name: "shell reads pipe", src: "curl -s x | sh", want: []string{"curl -s x", "sh [dynamic]"}, dynamic: true},
		{name: "shell runs file", src: "bash ./build.sh", want: []string{"bash ./build.sh"}},
		{name: "dynamic command name", src: "$CMD -rf /", want: []string{"$CMD -rf / [dynamic]"}, dynamic: true},
		{name: "glob command name", src: "/bin/r? -rf x", want: []string{"/bin/r? -rf x [dynamic]"}, dynamic: true},
		{name: "arithmetic command name", src: "$((1+1)) x", want: []string{"$((1+1)) x [dynamic]"}, dynamic: true},
		{name: "PATH assignment", src: "PATH=/tmp:$PATH; git status", want: []string{"git status"}, dynamic: true},
		{name: "export PATH", src: "export PATH=/tmp; git status", want: []string{"export PATH=/tmp", "git status"}, dynamic: true},
		{name: "unparseable", src: "if (", dynamic: true},
		{name: "unterminated quote", src: "echo 'oops", dynamic: true},
		{name: "time keyword", src: "time rm x", want: []string{"rm x"}},
		{name: "negation and background", src: "! grep x f & wait", want: []string{"grep x f", "wait"}},
		{name: "arithmetic and test", src: "(( x = $(rm a) )); [[ -f $(rm b) ]]", want: []string{"$rm a", "$rm b"}},
		{name: "deep nesting", src: strings.Repeat("sh -c '", 1) + "sh -c \"sh -c ls\"'", want: []string{"sh -c sh -c \"sh -c ls\"", ">sh -c sh -c ls", ">>sh -c ls", ">>>ls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Parse(tc.src)
			got := flat(s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("commands of %q (-want +got):\n%s", tc.src, diff)
			}
			if s.Dynamic != tc.dynamic {
				t.Errorf("Dynamic = %v, want %v (reasons %q)", s.Dynamic, tc.dynamic, s.Reasons)
			}
		})
	}
}

func TestParseRedirects(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []Redirect
	}{
		{"echo hi > out.txt", []Redirect{{Op: ">", Target: "out.txt", Write: true, Truncate: true}}},
		{"echo hi >> log 2>&1", []Redirect{{Op: ">>", Target: "log", Write: true}, {Op: ">&"}}},
		{"cmd &> all.log < in.txt", []Redirect{{Op: "&>", Target: "all.log", Write: true, Truncate: true}, {Op: "<", Target: "in.txt"}}},
		{"{ ls; } > '/etc/x y'", []Redirect{{Op: ">", Target: "/etc/x y", Write: true, Truncate: true}}},
		{"echo > $OUT", []Redirect{{Op: ">", Target: "$OUT", Write: true, Truncate: true, Dynamic: true}}},
		{"cat <<EOF\nx\nEOF", []Redirect{{Op: "<<"}}},
		{"grep x <<< hi >| f", []Redirect{{Op: "<<<"}, {Op: ">|", Target: "f", Write: true, Truncate: true}}},
		{`bash -c 'echo x > /tmp/y'`, []Redirect{{Op: ">", Target: "/tmp/y", Write: true, Truncate: true}}},
	} {
		t.Run(tc.src, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Parse(tc.src).AllRedirects()); diff != "" {
				t.Errorf("redirects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"git commit -m 'fix bug'", []string{"git", "commit", "-m", "fix bug"}, true},
		{`npm run "test"`, []string{"npm", "run", "test"}, true},
		{"a && b", nil, false},
		{"echo $HOME", nil, false},
		{"ls *.go", nil, false},
	} {
		got, ok := Words(tc.in)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTextQuotes(t *testing.T) {
	c := Parse(`git commit -m "it's done" --author=a`).Commands[0]
	if got, want := c.Text(), `git commit -m 'it'\''s done' --author=a`; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}
