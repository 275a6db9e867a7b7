package tools

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellSafety is what Bash's safety answers are made of, found by parsing
// the command line with a real shell parser: every simple command of every
// pipeline, list, subshell, loop and command substitution is looked at.
//
// It is a first pass. readOnly errs towards false (a command not on the
// short allowlist, any output redirection to a file, any assignment before
// a command, anything that does not parse). destructive errs towards true
// for what it recognises (rm, git reset --hard, a redirection that
// truncates an existing file …) but cannot see through scripts, aliases or
// programs that delete things themselves. Relative redirection targets are
// looked up from the process's working directory, as the answer has no
// Env; the governance layer (SPEC G4) refines all this.
type shellSafety struct {
	readOnly    bool
	destructive bool
}

// analyzeShell parses command and judges it.
func analyzeShell(command string) shellSafety {
	return analyzeShellDepth(command, 0)
}

func analyzeShellDepth(command string, depth int) shellSafety {
	if depth > 3 {
		return shellSafety{destructive: true}
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		// Bash would most likely refuse it too; if not, nobody can tell
		// what it does, so a person should look.
		return shellSafety{destructive: true}
	}
	v := shellSafety{readOnly: true}
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			v.merge(judgeCall(n, depth))
		case *syntax.Redirect:
			v.merge(judgeRedirect(n))
		case *syntax.CoprocClause:
			v.readOnly = false
		}
		return true
	})
	return v
}

// merge combines the verdicts of two parts of one command line.
func (v *shellSafety) merge(o shellSafety) {
	v.readOnly = v.readOnly && o.readOnly
	v.destructive = v.destructive || o.destructive
}

// word is one shell word: its value, if it is a plain literal.
type word struct {
	value   string
	literal bool
}

// literalWord returns w's value when it holds no expansion: plain text,
// single or double quotes, backslash escapes.
func literalWord(w *syntax.Word) word {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return word{}
				}
				b.WriteString(lit.Value)
			}
		default:
			return word{}
		}
	}
	return word{value: b.String(), literal: true}
}

// unescape drops the backslashes of an unquoted literal ("r\m" is "rm").
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// judgeCall judges one simple command.
func judgeCall(c *syntax.CallExpr, depth int) shellSafety {
	if len(c.Args) == 0 {
		return shellSafety{readOnly: true} // shell variables only
	}
	words := make([]word, len(c.Args))
	for i, a := range c.Args {
		words[i] = literalWord(a)
	}
	v := judgeWords(words, depth)
	if len(c.Assigns) > 0 {
		// GIT_EXTERNAL_DIFF=…, LD_PRELOAD=… can make anything run.
		v.readOnly = false
	}
	return v
}

// wrappers run the command that follows their options.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "command": true, "builtin": true, "exec": true,
	"nice": true, "nohup": true, "time": true, "env": true, "xargs": true,
	"timeout": true, "stdbuf": true, "ionice": true, "chrt": true, "setsid": true,
}

// judgeWords judges a command given as words, unwrapping sudo, env,
// xargs and the like, and looking into bash -c and eval strings.
func judgeWords(words []word, depth int) shellSafety {
	if len(words) == 0 {
		return shellSafety{readOnly: true}
	}
	if !words[0].literal {
		return shellSafety{} // a command named by an expansion
	}
	name := path.Base(words[0].value)
	args := words[1:]
	if wrappers[name] {
		rest := skipWrapperOptions(name, args)
		if len(rest) == 0 {
			// env, nice … alone print something; the others do nothing.
			return shellSafety{readOnly: name != "sudo" && name != "doas" && name != "xargs"}
		}
		v := judgeWords(rest, depth)
		if name == "sudo" || name == "doas" || name == "xargs" {
			// xargs runs it on input nobody has seen yet.
			v.readOnly = false
		}
		return v
	}
	lits := make([]string, 0, len(args))
	allLiteral := true
	for _, a := range args {
		lits = append(lits, a.value)
		allLiteral = allLiteral && a.literal
	}
	switch name {
	case "bash", "sh", "zsh", "dash", "ksh":
		if i := slices.Index(lits, "-c"); i >= 0 && i+1 < len(args) {
			if !args[i+1].literal {
				return shellSafety{destructive: true}
			}
			return analyzeShellDepth(args[i+1].value, depth+1)
		}
		return shellSafety{} // runs a script
	case "eval":
		if !allLiteral {
			return shellSafety{destructive: true}
		}
		return analyzeShellDepth(strings.Join(lits, " "), depth+1)
	}
	return shellSafety{
		readOnly:    isReadOnlyCommand(name, lits, allLiteral),
		destructive: isDestructiveCommand(name, lits, depth),
	}
}

// skipWrapperOptions returns the command a wrapper runs: the words after
// its options (and after timeout's duration, env's assignments).
func skipWrapperOptions(name string, args []word) []word {
	i := 0
	for i < len(args) && args[i].literal {
		a := args[i].value
		switch {
		case a == "--":
			return args[i+1:]
		case strings.HasPrefix(a, "-"):
			// Options that take a value as the next word.
			if (name == "nice" && a == "-n") || (name == "sudo" && (a == "-u" || a == "-g")) ||
				(name == "timeout" && (a == "-s" || a == "-k")) || (name == "xargs" && slices.Contains([]string{"-I", "-n", "-P", "-L", "-d", "-E", "-s"}, a)) ||
				(name == "ionice" && (a == "-c" || a == "-n")) {
				i++
			}
			i++
		case name == "env" && strings.Contains(a, "="):
			i++
		case name == "timeout" && i == 0 || name == "chrt" && i == 0:
			i++ // the duration or priority
		default:
			return args[i:]
		}
	}
	return args[i:]
}

// alwaysReadOnly are commands that only read, whatever their arguments.
var alwaysReadOnly = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "pwd": true,
	"echo": true, "printf": true, "grep": true, "egrep": true, "fgrep": true,
	"stat": true, "file": true, "du": true, "df": true, "tree": true,
	"which": true, "type": true, "whoami": true, "id": true, "uname": true,
	"basename": true, "dirname": true, "realpath": true, "readlink": true,
	"cut": true, "tr": true, "diff": true, "cmp": true, "comm": true,
	"true": true, "false": true, "printenv": true, "nl": true, "od": true,
	"hexdump": true, "sha256sum": true, "sha1sum": true, "sha512sum": true,
	"md5sum": true, "cksum": true, "test": true, "[": true, "column": true,
	"jq": true, "seq": true, "sleep": true, "ps": true, "cd": true,
}

// isReadOnlyCommand reports whether name with args is on the allowlist.
func isReadOnlyCommand(name string, args []string, allLiteral bool) bool {
	if alwaysReadOnly[name] {
		return true
	}
	if !allLiteral {
		return false // an option could hide in an expansion
	}
	has := func(opts ...string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			return slices.ContainsFunc(opts, func(o string) bool { return a == o || strings.HasPrefix(a, o+"=") })
		})
	}
	switch name {
	case "find":
		return !has("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")
	case "rg":
		return !has("--pre", "--search-zip", "-z")
	case "sort":
		return !has("-o", "--output") && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-o") })
	case "uniq":
		n := 0
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				n++
			}
		}
		return n <= 1
	case "date":
		return !has("-s", "--set")
	case "hostname":
		return len(args) == 0
	case "git":
		return gitReadOnly(args)
	}
	return false
}

// gitReadOnly reports whether a git command line only reads.
func gitReadOnly(args []string) bool {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-C":
			if len(args) < 2 {
				return false
			}
			args = args[2:]
		case "--no-pager":
			args = args[1:]
		default:
			return false // -c, --exec-path, --git-dir … can change what runs
		}
	}
	if len(args) == 0 {
		return true
	}
	sub, rest := args[0], args[1:]
	for _, a := range rest {
		if strings.HasPrefix(a, "--output") || a == "--ext-diff" || strings.HasPrefix(a, "--textconv") {
			return false
		}
	}
	switch sub {
	case "status", "log", "diff", "show", "rev-parse", "ls-files", "blame",
		"describe", "shortlog", "rev-list", "cat-file", "ls-tree", "merge-base", "grep", "reflog":
		return sub != "reflog" || len(rest) == 0 || rest[0] == "show"
	case "branch", "tag":
		for _, a := range rest {
			switch a {
			case "-a", "-r", "-v", "-vv", "-l", "--list", "--all", "--remotes", "--merged", "--no-merged", "--show-current", "--contains":
			default:
				if strings.HasPrefix(a, "-") || sub == "branch" {
					return false
				}
				// a pattern after tag -l
				if !slices.Contains(rest, "-l") && !slices.Contains(rest, "--list") {
					return false
				}
			}
		}
		return true
	case "remote":
		return len(rest) == 0 || (len(rest) == 1 && rest[0] == "-v") || (len(rest) >= 1 && (rest[0] == "show" || rest[0] == "get-url"))
	case "config":
		return len(rest) > 0 && (rest[0] == "--get" || rest[0] == "--list" || rest[0] == "-l" || rest[0] == "--get-all")
	case "stash":
		return len(rest) > 0 && (rest[0] == "list" || rest[0] == "show")
	}
	return false
}

// alwaysDestructive are commands that destroy data by design.
var alwaysDestructive = map[string]bool{
	"rm": true, "rmdir": true, "unlink": true, "shred": true, "srm": true,
	"dd": true, "truncate": true, "wipefs": true, "fdisk": true, "sfdisk": true,
	"parted": true, "mkswap": true,
}

// isDestructiveCommand reports whether name with args may destroy work
// that cannot be recovered.
func isDestructiveCommand(name string, args []string, depth int) bool {
	if alwaysDestructive[name] || strings.HasPrefix(name, "mkfs") || name == "mke2fs" {
		return true
	}
	switch name {
	case "git":
		return gitDestructive(args)
	case "find":
		for i, a := range args {
			switch a {
			case "-delete":
				return true
			case "-exec", "-execdir", "-ok", "-okdir":
				var cmd []word
				for _, w := range args[i+1:] {
					if w == ";" || w == "+" {
						break
					}
					cmd = append(cmd, word{value: w, literal: true})
				}
				if judgeWords(cmd, depth).destructive {
					return true
				}
			}
		}
	}
	return false
}

// gitDestructive reports whether a git command line throws work away.
func gitDestructive(args []string) bool {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if args[0] == "-C" || args[0] == "-c" {
			args = args[min(2, len(args)):]
			continue
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return false
	}
	sub, rest := args[0], args[1:]
	has := func(opts ...string) bool {
		return slices.ContainsFunc(rest, func(a string) bool {
			return slices.ContainsFunc(opts, func(o string) bool { return a == o || strings.HasPrefix(a, o+"=") })
		})
	}
	switch sub {
	case "reset":
		return has("--hard", "--merge", "--keep")
	case "push":
		if has("-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "-d", "--delete", "--prune") {
			return true
		}
		return slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "+") || strings.HasPrefix(a, ":") })
	case "clean":
		return !has("-n", "--dry-run")
	case "checkout":
		return has("-f", "--force", "--", ".")
	case "restore":
		return !has("--staged", "-S") || has("--worktree", "-W")
	case "switch":
		return has("-f", "--force", "--discard-changes")
	case "branch":
		return has("-D") || (has("-d", "--delete") && has("-f", "--force"))
	case "stash":
		return len(rest) > 0 && (rest[0] == "drop" || rest[0] == "clear")
	case "reflog":
		return len(rest) > 0 && (rest[0] == "expire" || rest[0] == "delete")
	case "gc", "prune":
		return has("--prune", "--expire")
	case "filter-branch", "filter-repo":
		return true
	case "update-ref":
		return has("-d")
	case "worktree":
		return len(rest) > 0 && rest[0] == "remove" && has("-f", "--force")
	}
	return false
}

// judgeRedirect judges one redirection: only reading and writing to
// /dev/null or another descriptor are read-only; truncating an existing
// file is destructive.
func judgeRedirect(r *syntax.Redirect) shellSafety {
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn:
		return shellSafety{readOnly: true}
	}
	target := word{}
	if r.Word != nil {
		target = literalWord(r.Word)
	}
	if r.Op == syntax.DplOut && target.literal && (target.value == "-" || isDigits(target.value)) {
		return shellSafety{readOnly: true} // 2>&1, >&-
	}
	switch target.value {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return shellSafety{readOnly: true}
	}
	truncates := r.Op == syntax.RdrOut || r.Op == syntax.RdrClob || r.Op == syntax.RdrAll || r.Op == syntax.RdrAllClob || r.Op == syntax.DplOut
	if !truncates {
		return shellSafety{}
	}
	if !target.literal {
		return shellSafety{destructive: true} // "> $out": cannot tell
	}
	return shellSafety{destructive: fileExists(target.value)}
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// fileExists reports whether a redirection target names an existing file.
func fileExists(p string) bool {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return true
		}
		p = filepath.Join(home, rest)
	}
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
