package shellsafe

import (
	"path"
	"strings"
)

// unwrap finds what a wrapper command runs and records it as Inner.
func (w *walker) unwrap(c *Command, stdin string, hasStdin bool, depth int) {
	if len(c.Args) == 0 {
		return
	}
	head := c.Args[0]
	if head.Dynamic || head.Glob {
		c.Dynamic, c.Reason = true, errorf("the command name %s is only known when the command runs", head.Value)
		return
	}
	if depth > maxDepth {
		c.Dynamic, c.Reason = true, errorf("commands are nested more than %d deep", maxDepth)
		return
	}
	args := c.Args[1:]
	switch path.Base(head.Value) {
	case "sudo", "doas":
		w.wrapOpts(c, args, Privileged, "ugpCDhrtUT", depth)
	case "timeout":
		if rest, ok := skipOpts(c, args, "sk", "signal", "kill-after"); ok && len(rest) > 0 {
			w.wrap(c, rest[1:], Transparent, depth) // rest[0] is the duration
		}
	case "nice":
		w.wrapOpts(c, niceArgs(args), Transparent, "n", depth)
	case "nohup", "builtin":
		w.wrapOpts(c, args, Transparent, "", depth)
	case "time":
		if !hasOpt(args, "-o", "--output", "-a", "--append") { // -o writes a file: leave it unknown
			w.wrapOpts(c, args, Transparent, "f", depth)
		}
	case "stdbuf":
		w.wrapOpts(c, args, Transparent, "ioe", depth)
	case "exec":
		w.wrapOpts(c, args, Transparent, "a", depth)
	case "command":
		if !hasOpt(args, "-v", "-V") { // command -v only looks the name up
			w.wrapOpts(c, args, Transparent, "", depth)
		}
	case "env":
		w.env(c, args, depth)
	case "xargs":
		w.xargs(c, args, depth)
	case "find":
		w.findExec(c, args, depth)
	case "eval":
		w.eval(c, args, depth)
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash":
		w.shell(c, args, stdin, hasStdin, depth)
	}
}

// wrapOpts skips the wrapper's options (those in withArg take a value)
// and wraps the rest.
func (w *walker) wrapOpts(c *Command, args []Word, via Wrapper, withArg string, depth int) {
	if rest, ok := skipOpts(c, args, withArg); ok {
		w.wrap(c, rest, via, depth)
	}
}

// wrap records rest as the command c runs.
func (w *walker) wrap(c *Command, rest []Word, via Wrapper, depth int) {
	var assigns []Assign
	for len(rest) > 0 && !rest[0].Dynamic && isAssign(rest[0].Value) { // env NAME=value cmd
		name, value, _ := strings.Cut(rest[0].Value, "=")
		assigns = append(assigns, Assign{Name: name, Value: value})
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return
	}
	inner := &Command{Args: rest, Assigns: assigns, InSubst: c.InSubst, OpenArgs: c.OpenArgs}
	inner.Source = inner.Text()
	w.unwrap(inner, "", false, depth+1)
	c.Via, c.Inner = via, []*Command{inner}
}

// skipOpts skips leading options. withArg lists the one-letter options
// that take a value; longWithArg the long ones. ok is false (and c is
// marked dynamic) when an option is not fixed.
func skipOpts(c *Command, args []Word, withArg string, longWithArg ...string) (rest []Word, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.Dynamic {
			c.Dynamic, c.Reason = true, errorf("%s is given options that are only known when it runs", c.Name())
			return nil, false
		}
		v := a.Value
		switch {
		case v == "--":
			return args[i+1:], true
		case !strings.HasPrefix(v, "-") || v == "-":
			return args[i:], true
		case strings.HasPrefix(v, "--"):
			name, _, hasValue := strings.Cut(v[2:], "=")
			if !hasValue && contains(longWithArg, name) {
				i++
			}
		default:
			// -abc: a cluster; the first letter that takes a value takes
			// the rest of the word, or the next word.
			for j := 1; j < len(v); j++ {
				if strings.IndexByte(withArg, v[j]) >= 0 {
					if j == len(v)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return nil, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hasOpt reports whether one of opts appears among the wrapper's options,
// alone or as --opt=value.
func hasOpt(args []Word, opts ...string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a.Value, "-") || a.Value == "--" {
			return false
		}
		name, _, _ := strings.Cut(a.Value, "=")
		if contains(opts, name) {
			return true
		}
	}
	return false
}

// niceArgs turns nice's old -N form into -n N so skipOpts can read it.
func niceArgs(args []Word) []Word {
	if len(args) > 0 && len(args[0].Value) > 1 && args[0].Value[0] == '-' && isNumber(args[0].Value[1:]) {
		return args[1:]
	}
	return args
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && isFD(s)
}

func isAssign(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// env handles env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=value…] cmd.
func (w *walker) env(c *Command, args []Word, depth int) {
	for i, a := range args {
		if a.Dynamic {
			c.Dynamic, c.Reason = true, "env is given options that are only known when it runs"
			return
		}
		if a.Value == "-S" || strings.HasPrefix(a.Value, "--split-string") || (strings.HasPrefix(a.Value, "-S") && !strings.HasPrefix(a.Value, "--")) {
			// env -S 'cmd args' splits a string into a command: treat it
			// like sh -c of that string plus the rest.
			parts := []string{strings.TrimPrefix(strings.TrimPrefix(a.Value, "--split-string="), "-S")}
			for _, r := range args[i+1:] {
				parts = append(parts, r.Value)
			}
			w.script(c, strings.TrimSpace(strings.Join(parts, " ")), depth)
			return
		}
	}
	w.wrapOpts(c, args, Transparent, "uC", depth)
}

// xargs records the command xargs runs; its arguments come at run time.
func (w *walker) xargs(c *Command, args []Word, depth int) {
	rest, ok := skipOpts(c, args, "adEILnPs", "arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var")
	if !ok {
		return
	}
	if len(rest) == 0 {
		rest = []Word{{Value: "echo"}}
	}
	open := *c
	open.OpenArgs = true
	w.wrap(&open, rest, Repeater, depth)
	c.Via, c.Inner, c.Dynamic, c.Reason = open.Via, open.Inner, open.Dynamic, open.Reason
}

// findExec records the commands of find's -exec, -execdir, -ok and
// -okdir actions.
func (w *walker) findExec(c *Command, args []Word, depth int) {
	for i := 0; i < len(args); i++ {
		switch args[i].Value {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j].Value != ";" && args[j].Value != "+" {
			j++
		}
		if j == i+1 {
			continue
		}
		// With "+" the found files are appended; with ";" each replaces
		// {} in the fixed words.
		open := &Command{InSubst: c.InSubst, OpenArgs: j < len(args) && args[j].Value == "+"}
		w.wrap(open, args[i+1:j], Repeater, depth)
		c.Via = Repeater
		c.Inner = append(c.Inner, open.Inner...)
		if open.Dynamic {
			c.Dynamic, c.Reason = true, open.Reason
		}
		i = j
	}
}

// eval runs its arguments, joined by spaces, as a script.
func (w *walker) eval(c *Command, args []Word, depth int) {
	parts := make([]string, len(args))
	for i, a := range args {
		if a.Dynamic {
			c.Dynamic, c.Reason = true, "eval runs text that is only known when the command runs"
			return
		}
		parts[i] = a.Value
	}
	w.script(c, strings.Join(parts, " "), depth)
}

// shell handles sh -c SCRIPT, sh FILE and a shell reading standard input.
func (w *walker) shell(c *Command, args []Word, stdin string, hasStdin bool, depth int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.Dynamic {
			c.Dynamic, c.Reason = true, errorf("%s is given arguments that are only known when it runs", c.Name())
			return
		}
		v := a.Value
		switch {
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			i++
		case v == "--":
			i = len(args)
		case strings.HasPrefix(v, "--"):
		case (strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+")) && len(v) > 1:
			if !strings.ContainsRune(v[1:], 'c') {
				continue
			}
			if i+1 == len(args) || args[i+1].Dynamic {
				c.Dynamic, c.Reason = true, errorf("%s -c runs text that is only known when the command runs", c.Name())
				return
			}
			w.script(c, args[i+1].Value, depth)
			return
		default:
			return // sh FILE: runs a script file; not read-only, not dynamic
		}
	}
	// No script and no file: the shell reads its commands from standard
	// input.
	if hasStdin {
		w.script(c, stdin, depth)
		return
	}
	c.Dynamic, c.Reason = true, errorf("%s runs commands read from standard input", c.Name())
}

// script parses text as a script that c runs.
func (w *walker) script(c *Command, text string, depth int) {
	inner := parseScript(text, depth+1)
	for _, ic := range inner.Commands {
		ic.InSubst = ic.InSubst || c.InSubst
	}
	c.Via, c.Inner = Shell, inner.Commands
	if len(inner.Redirects) > 0 {
		// Redirections on compound commands of the inner script: keep
		// them on the wrapper so they are still seen.
		c.Redirects = append(c.Redirects, inner.Redirects...)
	}
	if len(inner.Whole) > 0 {
		c.Dynamic, c.Reason = true, errorf("in %s: %s", c.Name(), inner.Whole[0])
	}
}
