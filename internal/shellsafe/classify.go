package shellsafe

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Class answers the two safety questions for a command line.
type Class struct {
	// ReadOnly: the line changes nothing outside the process — no file
	// written, deleted or moved, no process signalled, nothing installed
	// or pushed.
	ReadOnly bool
	// Destructive: the line may destroy work that cannot be recovered
	// (deleting, overwriting, force-pushing, discarding changes).
	Destructive bool
	// Why says, when the line is not read-only, what makes it so: the
	// destructive part when there is one.
	Why string
}

// Options tell Classify where the line runs.
type Options struct {
	// Dir is the working directory relative redirection targets are
	// resolved against; "" is the process's.
	Dir string
	// Exists reports whether a file exists; nil uses os.Lstat.
	Exists func(path string) bool
}

// Classify parses a command line and classifies it as run from the
// process's working directory.
func Classify(command string) Class { return Parse(command).Classify(Options{}) }

// Classify classifies the script: read-only when every command is and
// nothing is written; destructive when any command is, or when a '>'
// would overwrite an existing file.
func (s *Script) Classify(o Options) Class {
	out := Class{ReadOnly: true}
	if len(s.Whole) > 0 {
		out = Class{Why: s.Whole[0]}
	}
	for _, c := range s.Commands {
		out = out.and(classifyCommand(c, o))
	}
	for _, r := range s.Redirects {
		out = out.and(classifyRedirect(r, o))
	}
	return out
}

// and combines the classes of two parts of one line.
func (a Class) and(b Class) Class {
	out := Class{ReadOnly: a.ReadOnly && b.ReadOnly, Destructive: a.Destructive || b.Destructive}
	switch {
	case a.Destructive:
		out.Why = a.Why
	case b.Destructive:
		out.Why = b.Why
	case !a.ReadOnly:
		out.Why = a.Why
	default:
		out.Why = b.Why
	}
	return out
}

// ClassifyCommand classifies one command with the commands it runs and
// its own redirections (targets are not looked up: a '>' is not
// destructive here; Script.Classify checks whether the file exists).
func ClassifyCommand(c *Command) Class {
	return classifyCommand(c, Options{Exists: func(string) bool { return false }})
}

func classifyCommand(c *Command, o Options) Class {
	if c.Dynamic {
		return Class{Why: c.Reason}
	}
	for _, a := range c.Assigns {
		if RiskyVar(a.Name) {
			return Class{Why: "setting " + a.Name + " can make " + c.Name() + " run another program"}
		}
	}
	out := classifyWords(c, o)
	for _, r := range c.Redirects {
		out = out.and(classifyRedirect(r, o))
	}
	return out
}

// classifyWords classifies what a command does by its words.
func classifyWords(c *Command, o Options) Class {
	if len(c.Args) == 0 {
		return Class{ReadOnly: true}
	}
	if c.FirstDynamic() == 0 {
		return Class{Why: c.Args[0].Value + " is only known when the command runs"}
	}
	name := path.Base(c.Name())
	argv := c.Argv()[1:]
	if len(c.Inner) > 0 {
		out := wrapperClass(c, name, argv)
		for _, ic := range c.Inner {
			out = out.and(classifyCommand(ic, o))
		}
		return out
	}
	if f, ok := commands[name]; ok {
		return f(argv)
	}
	if strings.HasPrefix(name, "mkfs") {
		return Class{Destructive: true, Why: name + " erases a file system"}
	}
	if readOnlyCommands[name] {
		return Class{ReadOnly: true}
	}
	return Class{Why: name + " may change files or other state"}
}

// WrapperClass classifies what a wrapper does itself, apart from the
// commands it runs: sudo is not read-only, find may delete.
func (c *Command) WrapperClass() Class {
	return wrapperClass(c, path.Base(c.Name()), c.Argv()[1:])
}

// wrapperClass is what the wrapper itself adds to the commands it runs.
func wrapperClass(c *Command, name string, argv []string) Class {
	switch c.Via {
	case Privileged:
		return Class{Why: name + " runs a command as another user"}
	case Repeater:
		if name == "find" {
			return classifyFind(argv)
		}
	}
	return Class{ReadOnly: true}
}

func classifyRedirect(r Redirect, o Options) Class {
	if !r.Write {
		return Class{ReadOnly: true}
	}
	if isDevice(r.Target) {
		return Class{ReadOnly: true}
	}
	why := "the output is written to " + r.Target
	if !r.Truncate {
		return Class{Why: why}
	}
	if r.Dynamic || exists(o, r.Target) {
		return Class{Destructive: true, Why: "'" + r.Op + "' overwrites " + r.Target}
	}
	return Class{Why: why}
}

// isDevice reports whether writing to target touches no file: /dev/null,
// the terminal, standard streams.
func isDevice(target string) bool {
	switch target {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return strings.HasPrefix(target, "/dev/fd/")
}

func exists(o Options, target string) bool {
	if strings.HasPrefix(target, "~") {
		return true // cannot tell without the home folder: assume the worst
	}
	if o.Dir != "" && !filepath.IsAbs(target) {
		target = filepath.Join(o.Dir, target)
	}
	if o.Exists != nil {
		return o.Exists(target)
	}
	_, err := os.Lstat(target)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// readOnlyCommands only read, whatever their arguments.
var readOnlyCommands = set(
	"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "zgrep", "ag", "ack",
	"pwd", "echo", "printf", "which", "whereis", "type", "file", "stat", "du", "df",
	"whoami", "id", "uname", "basename", "dirname", "realpath", "readlink",
	"true", "false", "test", "[", ":", "diff", "cmp", "comm", "cut", "tr", "nl",
	"od", "hexdump", "column", "jq", "printenv", "ps", "seq", "sleep",
	"cd", "pushd", "popd", "dirs", "sha1sum", "sha256sum", "sha512sum", "md5sum",
	"cksum", "b2sum", "strings", "nproc", "uptime", "locale", "tty", "groups",
	"less", "more", "free", "fold", "paste", "rev", "tac", "zcat", "getconf",
	"arch", "logname", "who", "cal", "factor", "expr", "numfmt", "wait", "jobs",
	// Wrappers with nothing to run: env and printenv print, nice prints
	// the niceness, command -v looks a name up, exec alone only
	// redirects.
	"env", "nice", "command", "builtin", "exec",
	"export", "local", "declare", "typeset", "readonly", "set", "shopt", "exit", "return",
	"base64", "lsof", "pgrep",
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// commands classifies the commands whose effect depends on their
// arguments.
var commands = map[string]func(args []string) Class{
	"git":      classifyGit,
	"find":     classifyFind,
	"rg":       unless("rg --pre runs a program on every file", "--pre"),
	"sed":      classifySed,
	"sort":     unless("sort -o writes a file", "-o", "--output"),
	"tree":     unless("tree -o writes a file", "-o"),
	"date":     unless("date -s sets the clock", "-s", "--set"),
	"uniq":     atMostOperands(1, "uniq writes its second operand"),
	"hostname": atMostOperands(0, "hostname NAME renames the machine"),
	"xxd":      classifyXxd,
	"go":       subcommands(set("version", "env", "list", "doc", "help")),
	"npm":      subcommands(set("ls", "list", "view", "info", "outdated", "help", "--version", "-v", "root", "prefix", "config")),
	"cargo":    subcommands(set("--version", "version", "metadata", "tree", "search", "help")),
	"node":     onlyFlags("--version", "-v"),
	"python":   onlyFlags("--version", "-V"),
	"python3":  onlyFlags("--version", "-V"),
	"rm":       always("rm deletes files"),
	"rmdir":    always("rmdir deletes directories"),
	"unlink":   always("unlink deletes a file"),
	"shred":    always("shred destroys file contents"),
	"dd":       always("dd overwrites data"),
	"truncate": always("truncate cuts files short"),
	"wipefs":   always("wipefs erases file-system signatures"),
	"fdisk":    always("fdisk rewrites partition tables"),
	"parted":   always("parted rewrites partition tables"),
	"pkill":    always("pkill kills processes"),
	"killall":  always("killall kills processes"),
	"shutdown": always("shutdown stops the machine"),
	"reboot":   always("reboot restarts the machine"),
	"halt":     always("halt stops the machine"),
	"poweroff": always("poweroff stops the machine"),
	"chmod":    recursive("chmod -R changes the modes of a whole tree"),
	"chown":    recursive("chown -R changes the owners of a whole tree"),
	"chgrp":    recursive("chgrp -R changes the groups of a whole tree"),
	"rsync":    unlessDestructive("rsync --delete deletes files at the destination", "--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-excluded", "--remove-source-files"),
	"crontab":  unlessDestructive("crontab -r deletes the crontab", "-r"),
	"docker":   destructiveSub("docker removes containers, images or volumes", set("rm", "rmi", "prune", "kill")),
	"kubectl":  destructiveSub("kubectl delete removes cluster resources", set("delete")),
	"terraform": destructiveSub("terraform destroy removes infrastructure",
		set("destroy")),
}

func always(why string) func([]string) Class {
	return func([]string) Class { return Class{Destructive: true, Why: why} }
}

// unless: read-only unless one of the options is given.
func unless(why string, opts ...string) func([]string) Class {
	return func(args []string) Class {
		if hasFlag(args, opts...) {
			return Class{Why: why}
		}
		return Class{ReadOnly: true}
	}
}

// unlessDestructive: changes things; destructive with one of the options.
func unlessDestructive(why string, opts ...string) func([]string) Class {
	return func(args []string) Class {
		if hasFlag(args, opts...) {
			return Class{Destructive: true, Why: why}
		}
		return Class{Why: "the command may change files"}
	}
}

func recursive(why string) func([]string) Class {
	return func(args []string) Class {
		if hasFlag(args, "--recursive") || hasShort(args, 'R') {
			return Class{Destructive: true, Why: why}
		}
		return Class{Why: "the command changes file attributes"}
	}
}

func atMostOperands(n int, why string) func([]string) Class {
	return func(args []string) Class {
		if len(operands(args)) > n {
			return Class{Why: why}
		}
		return Class{ReadOnly: true}
	}
}

func onlyFlags(flags ...string) func([]string) Class {
	return func(args []string) Class {
		if len(args) == 1 && contains(flags, args[0]) {
			return Class{ReadOnly: true}
		}
		return Class{Why: "the interpreter runs a program"}
	}
}

// subcommands: read-only when the first operand is one of ro.
func subcommands(ro map[string]bool) func([]string) Class {
	return func(args []string) Class {
		if len(args) > 0 && ro[args[0]] {
			return Class{ReadOnly: true}
		}
		return Class{Why: "the command may change files or other state"}
	}
}

func destructiveSub(why string, subs map[string]bool) func([]string) Class {
	return func(args []string) Class {
		for _, a := range operands(args) {
			if subs[a] {
				return Class{Destructive: true, Why: why}
			}
		}
		return Class{Why: "the command may change state"}
	}
}

func classifyXxd(args []string) Class {
	if hasFlag(args, "-r", "-revert") || len(operands(args)) > 1 {
		return Class{Why: "xxd writes a file"}
	}
	return Class{ReadOnly: true}
}

// classifySed: read-only without -i and when its script has no command
// that writes a file or runs one (w, W, e, r, R, or the w and e flags of
// s). This reads the script's commands, not full sed syntax: anything it
// cannot follow counts as writing.
func classifySed(args []string) Class {
	scripts, ok := sedScripts(args)
	if !ok {
		return Class{Why: "sed -i edits files in place"}
	}
	for _, sc := range scripts {
		if !sedReadOnly(sc) {
			return Class{Why: "the sed script may write files or run commands"}
		}
	}
	return Class{ReadOnly: true}
}

// sedScripts returns sed's scripts (-e SCRIPT, or the first operand); ok
// is false with -i or -f (a script file that cannot be read here).
func sedScripts(args []string) (scripts []string, ok bool) {
	explicit := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "-e" || a == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
			}
			explicit = true
			i++
		case strings.HasPrefix(a, "--expression="):
			scripts, explicit = append(scripts, strings.TrimPrefix(a, "--expression=")), true
		case strings.HasPrefix(a, "--in-place"), a == "-f", strings.HasPrefix(a, "--file"):
			return nil, false
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if strings.ContainsAny(a[1:], "if") {
				return nil, false
			}
			if j := strings.IndexByte(a, 'e'); j > 0 {
				sc := a[j+1:]
				if sc == "" && i+1 < len(args) {
					i++
					sc = args[i]
				}
				scripts, explicit = append(scripts, sc), true
			}
		case !explicit:
			return append(scripts, a), true
		}
	}
	return scripts, true
}

// sedReadOnly reports whether a sed script only prints and edits the
// stream.
func sedReadOnly(script string) bool {
	for _, cmd := range strings.FieldsFunc(script, func(r rune) bool { return r == ';' || r == '\n' }) {
		cmd = strings.TrimLeft(cmd, " \t0123456789$,!~+{}")
		if strings.HasPrefix(cmd, "/") { // a /regex/ address
			if end := strings.IndexByte(cmd[1:], '/'); end >= 0 {
				cmd = strings.TrimLeft(cmd[end+2:], " \t0123456789$,!~+{}")
			}
		}
		if cmd == "" {
			continue
		}
		switch cmd[0] {
		case 'w', 'W', 'e', 'r', 'R':
			return false
		case 's', 'y':
			if cmd[0] == 's' && !sedSubstReadOnly(cmd) {
				return false
			}
		}
	}
	return true
}

// sedSubstReadOnly checks the flags of s/re/repl/flags for w and e.
func sedSubstReadOnly(cmd string) bool {
	if len(cmd) < 2 {
		return true
	}
	delim, n := cmd[1], 0
	for i := 2; i < len(cmd); i++ {
		switch cmd[i] {
		case '\\':
			i++
		case delim:
			n++
			if n == 2 {
				return !strings.ContainsAny(cmd[i+1:], "we")
			}
		}
	}
	return false
}

func classifyFind(args []string) Class {
	out := Class{ReadOnly: true}
	for _, a := range args {
		switch a {
		case "-delete":
			return Class{Destructive: true, Why: "find -delete deletes files"}
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			out = Class{Why: "find " + a + " writes a file"}
		}
	}
	return out
}

// hasFlag reports whether one of opts is among args, alone or as
// --opt=value.
func hasFlag(args []string, opts ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(a, "=")
		if contains(opts, name) {
			return true
		}
	}
	return false
}

// hasShort reports whether the one-letter option is among args, alone or
// in a cluster (-Rf).
func hasShort(args []string, letter byte) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], letter) >= 0 {
			return true
		}
	}
	return false
}

// operands returns the arguments that are not options.
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}
